package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/version"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	out, errOut, code := coffer(t, "version", "--json")
	if code != 0 {
		t.Fatalf("version --json: %d %s", code, errOut)
	}
	var got version.Info
	decodeJSON(t, out, &got)
	if got.Version == "" || got.GoVersion != runtime.Version() || got.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json = %+v", got)
	}
	out, _, code = coffer(t, "version")
	if code != 0 || !strings.HasPrefix(out, "coffer "+got.Version+" (") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version = %d %q", code, out)
	}
	if _, errOut, code = coffer(t, "version", "extra"); code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) {
		t.Errorf("version extra = %d %q", code, errOut)
	}
}

// TestVersionLinkFlags builds coffer the way `make build` and `make image` do and checks
// that the -X flags reach `coffer version`: the variable paths are strings the compiler
// cannot check.
func TestVersionLinkFlags(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "coffer")
	const pkg = "github.com/cofferhq/coffer/server/internal/version"
	ldflags := "-X " + pkg + ".version=v9.8.7-test -X " + pkg + ".commit=0123456789abcdef0123456789abcdef01234567 -X " +
		pkg + ".buildTime=2026-11-26T20:00:00Z"
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version", "--json").Output()
	if err != nil {
		t.Fatalf("coffer version --json: %v", err)
	}
	var got version.Info
	decodeJSON(t, string(out), &got)
	if got.Version != "v9.8.7-test" || got.Commit != "0123456789abcdef0123456789abcdef01234567" || got.BuildTime != "2026-11-26T20:00:00Z" ||
		got.GoVersion != runtime.Version() {
		t.Errorf("version --json = %+v", got)
	}
	var raw map[string]any
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "commit", "buildTime", "goVersion", "platform", "modified"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("version --json has no %q: %s", k, out)
		}
	}
}
