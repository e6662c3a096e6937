// Package deploy_test checks what ships (the repository's deploy/ and Containerfile): the
// container image that make image builds, the Kubernetes manifests and the systemd units,
// against the binary, its commands and its configuration table.
package deploy_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/version"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../.."

// TestImage builds the image with `make image`, takes it apart as a registry would receive it
// (buildah push to a directory: the manifest, the config and the layer tarballs) and checks
// what runs: the entrypoint and user, a static binary whose `coffer version` names the build,
// the non-root user in /etc/passwd and a CA bundle that parses.
func TestImage(t *testing.T) {
	buildah := proctest.Need(t, "buildah", "make buildah installs it with apt-get")
	suffix := make([]byte, 4)
	rand.Read(suffix)
	const ver = "v0.0.0-imagetest"
	image := "localhost/coffer-imagetest:" + hex.EncodeToString(suffix)
	start := time.Now()
	mk := exec.CommandContext(t.Context(), "make", "-s", "-C", repoRoot, "image", "IMAGE="+image, "VERSION="+ver)
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(buildah, "rmi", image).Run() }) //nolint:errcheck,noctx // best effort
	t.Logf("make image: %v", time.Since(start).Round(time.Millisecond))

	dir := filepath.Join(t.TempDir(), "image")
	if out, err := exec.CommandContext(t.Context(), buildah, "push", "--quiet", "--disable-compression", image, "dir:"+dir).CombinedOutput(); err != nil {
		t.Fatalf("buildah push: %v\n%s", err, out)
	}
	var manifest struct {
		Config blob   `json:"config"`
		Layers []blob `json:"layers"`
	}
	readJSON(t, filepath.Join(dir, "manifest.json"), &manifest)
	var config struct {
		Config struct {
			User         string
			Entrypoint   []string
			Cmd          []string
			ExposedPorts map[string]any
			Labels       map[string]string
		} `json:"config"`
	}
	readJSON(t, filepath.Join(dir, manifest.Config.file()), &config)
	c := config.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/coffer" || strings.Join(c.Cmd, " ") != "serve" {
		t.Errorf("image config: user %q, entrypoint %q, cmd %q; want 65532:65532, [/coffer], [serve]", c.User, c.Entrypoint, c.Cmd)
	}
	for _, p := range []string{"8080/tcp", "9090/tcp"} {
		if _, ok := c.ExposedPorts[p]; !ok {
			t.Errorf("port %s not exposed: %v", p, c.ExposedPorts)
		}
	}
	if c.Labels["org.opencontainers.image.version"] != ver {
		t.Errorf("version label %q, want %q", c.Labels["org.opencontainers.image.version"], ver)
	}

	files := map[string][]byte{}
	var names []string
	for _, l := range manifest.Layers {
		for name, b := range untar(t, filepath.Join(dir, l.file())) {
			files[name] = b
			names = append(names, name)
		}
	}
	// FROM scratch: the binary, the CA bundle, the user database, and nothing else (no shell).
	for _, name := range names {
		switch name {
		case "coffer", "etc/passwd", "etc/group", "etc/ssl/certs/ca-certificates.crt":
		default:
			t.Errorf("unexpected file in the image: /%s", name)
		}
	}

	bin := filepath.Join(t.TempDir(), "coffer")
	if err := os.WriteFile(bin, files["coffer"], 0o755); err != nil {
		t.Fatal(err)
	}
	checkStatic(t, bin)
	out, err := exec.CommandContext(t.Context(), bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("coffer version --json from the image: %v", err)
	}
	var info version.Info
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("coffer version --json: %v: %s", err, out)
	}
	if _, err := time.Parse(time.RFC3339, info.BuildTime); info.Version != ver || err != nil || len(info.Commit) != 40 {
		t.Errorf("coffer version --json from the image = %s; want version %s, a commit and a build time", out, ver)
	}
	if head, err := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD").Output(); err == nil && strings.TrimSpace(string(head)) != info.Commit {
		t.Errorf("commit %s, want HEAD %s", info.Commit, head)
	}
	// A release build: `coffer dev` and its embedded dev chain are left out, and say so.
	dev := exec.CommandContext(t.Context(), bin, "dev", "--data-dir", t.TempDir())
	if out, err := dev.CombinedOutput(); err == nil || !strings.Contains(string(out), "coffer dev is not in this build") {
		t.Errorf("coffer dev from the image: %v, %s; want it refused as not in this build", err, out)
	}

	// The non-root user of USER 65532 exists (some tools want a name), and nothing but root is 0.
	users := passwd(t, files["etc/passwd"])
	if users["65532"] != "coffer" || users["0"] != "root" {
		t.Errorf("/etc/passwd: %v", users)
	}
	if g := string(files["etc/group"]); !strings.Contains(g, "coffer:x:65532:") {
		t.Errorf("/etc/group: %q", g)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files["etc/ssl/certs/ca-certificates.crt"]) || bytes.Count(files["etc/ssl/certs/ca-certificates.crt"], []byte("BEGIN CERTIFICATE")) < 50 {
		t.Errorf("CA bundle: %d bytes, not a PEM bundle of public roots", len(files["etc/ssl/certs/ca-certificates.crt"]))
	}
}

// checkStatic: no dynamic loader, no shared library, and the toolchain recorded CGO_ENABLED=0
// and -trimpath.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader (PT_INTERP): not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries: %v", libs)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["-tags"] != proctest.ReleaseTags {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q -tags=%q, want 0, true and %s", settings["CGO_ENABLED"], settings["-trimpath"], settings["-tags"], proctest.ReleaseTags)
	}
}

type blob struct {
	Digest string `json:"digest"`
}

// file is a blob's name in a dir: transport directory: its digest's hex.
func (b blob) file() string { _, hex, _ := strings.Cut(b.Digest, ":"); return hex }

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// untar reads a layer (plain or gzip tar) into its regular files by path.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		r = gz
	}
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("layer %s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(filepath.Clean("/"+h.Name), "/")] = b
	}
}

// passwd maps uid → user name.
func passwd(t *testing.T, b []byte) map[string]string {
	t.Helper()
	users := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 7 {
			t.Fatalf("/etc/passwd line %q", line)
		}
		if prev, ok := users[f[2]]; ok {
			t.Errorf("uid %s is both %s and %s", f[2], prev, f[0])
		}
		users[f[2]] = f[0]
	}
	return users
}
