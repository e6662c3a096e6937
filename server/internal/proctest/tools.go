package proctest

import (
	"os"
	"os/exec"
	"testing"
)

// Missing skips a test that cannot run here, saying why, except in CI (CI is set), where
// `make test` has installed what the process-level tests need and the test fails instead.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("cannot run in CI: %s", why)
	}
	t.Skipf("skipped: %s (`make test` installs what it needs; CI always runs this test)", why)
}

// Need finds a tool the test runs on PATH; where it is missing, see Missing. install says
// how to get it.
func Need(t testing.TB, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		Missing(t, tool+" not found: "+install)
	}
	return p
}
