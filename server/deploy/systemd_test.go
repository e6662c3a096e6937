package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/config"
)

// unit is a parsed systemd unit: section → key → values (a key may repeat).
type unit map[string]map[string][]string

func (u unit) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: %q", path, n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

const installedBinary = "/usr/local/bin/coffer"

// TestSystemdUnits checks the units against the binary (each ExecStart is a command and flags
// coffer takes), the configuration table (every variable set is one coffer reads; secrets come
// from the environment file or credentials), the start order (the API and the worker require
// the migrations) and the hardening; then systemd-analyze verifies them and rates their
// exposure, when it is installed.
func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "deploy/systemd")
	want := map[string][]string{
		"coffer-migrate.service": {"migrate"},
		"coffer-api.service":     {"serve", "--role", "api"},
		"coffer-worker.service":  {"serve", "--role", "worker"},
	}
	hardening := map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes",
		"CapabilityBoundingSet": "", "RestrictSUIDSGID": "yes", "MemoryDenyWriteExecute": "yes", "SystemCallArchitectures": "native",
		"ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectControlGroups": "yes", "LockPersonality": "yes",
	}
	for name, args := range want {
		u := parseUnit(t, filepath.Join(dir, name))
		s := u["Service"]
		exec := strings.Fields(u.get("Service", "ExecStart"))
		if len(exec) == 0 || exec[0] != installedBinary || !slices.Equal(exec[1:], args) {
			t.Errorf("%s: ExecStart %q, want %s %s", name, exec, installedBinary, strings.Join(args, " "))
		} else {
			checkCommand(t, name, exec[1:])
			if len(args) == 3 {
				if err := config.CheckRole(args[2]); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
		if u.get("Service", "DynamicUser") != "yes" && (u.get("Service", "User") == "" || u.get("Service", "User") == "root") {
			t.Errorf("%s runs as root: want DynamicUser=yes or a User=", name)
		}
		for k, v := range hardening {
			if got, ok := s[k]; !ok || got[len(got)-1] != v {
				t.Errorf("%s: %s=%q, want %q", name, k, got, v)
			}
		}
		if u.get("Service", "EnvironmentFile") != "/etc/coffer/coffer.env" {
			t.Errorf("%s: EnvironmentFile %q", name, u.get("Service", "EnvironmentFile"))
		}
		creds := map[string]bool{}
		for _, c := range s["LoadCredential"] {
			id, _, _ := strings.Cut(c, ":")
			creds[id] = true
		}
		for _, e := range s["Environment"] {
			k, v, _ := strings.Cut(e, "=")
			if _, ok := config.EntryOf(k); !ok {
				t.Errorf("%s: Environment %s is not a variable coffer reads", name, k)
			}
			if slices.Contains(secretVars, k) {
				t.Errorf("%s: %s set in the unit file, which anyone may read; use the environment file or a credential", name, k)
			}
			if cred, ok := strings.CutPrefix(v, "%d/"); ok && !creds[cred] {
				t.Errorf("%s: %s names credential %s, which no LoadCredential= loads", name, k, cred)
			}
		}
		if name == "coffer-migrate.service" {
			if u.get("Service", "Type") != "oneshot" || u.get("Service", "RemainAfterExit") != "yes" {
				t.Errorf("%s: want Type=oneshot and RemainAfterExit=yes (so the others' Requires= holds)", name)
			}
			continue
		}
		for _, k := range []string{"Requires", "After"} {
			if !slices.Contains(strings.Fields(strings.Join(u["Unit"][k], " ")), "coffer-migrate.service") {
				t.Errorf("%s: %s= does not name coffer-migrate.service", name, k)
			}
		}
		if !slices.ContainsFunc(s["Environment"], func(e string) bool { return strings.HasPrefix(e, "COFFER_MASTER_KEY_FILE=%d/") }) {
			t.Errorf("%s: the master key must come as a credential (LoadCredential=, COFFER_MASTER_KEY_FILE=%%d/…)", name)
		}
	}

	// The environment file's example sets only variables coffer reads, and not the master key.
	b, err := os.ReadFile(filepath.Join(dir, "coffer.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, _ := strings.Cut(line, "=")
		if _, ok := config.EntryOf(k); !ok {
			t.Errorf("coffer.env.example: %s is not a variable coffer reads", k)
		}
		if strings.HasPrefix(k, "COFFER_MASTER_KEY") {
			t.Errorf("coffer.env.example sets %s: the master key is a credential, kept apart from the database settings", k)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the units were checked by parsing only")
		return
	}
	// systemd-analyze verify wants ExecStart's binary to exist: a copy of the units runs the
	// binary just built.
	tmp := t.TempDir()
	var units []string
	for name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b = []byte(strings.ReplaceAll(string(b), installedBinary, cofferBin(t)))
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
		units = append(units, name)
	}
	slices.Sort(units)
	verify := exec.CommandContext(t.Context(), analyze, append([]string{"verify", "--man=no"}, units...)...)
	verify.Dir = tmp
	// Unknown keys and bad values are warnings (exit 0): any output fails the test.
	if out, err := verify.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, name := range units {
		// Exposure 0 (locked down) .. 10 (unsafe); the units are 1.5. --offline needs systemd 252.
		sec := exec.CommandContext(t.Context(), analyze, "security", "--offline=true", "--threshold=20", "--no-pager", name)
		sec.Dir = tmp
		if out, err := sec.CombinedOutput(); err != nil {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Errorf("systemd-analyze security %s: %v: %s", name, err, lines[len(lines)-1])
		}
	}
}
