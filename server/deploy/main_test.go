package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) {
	code := testdb.Main(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce  sync.Once
	binPath  string
	errBuild error
	binDir   string
)

// cofferBin builds the release binary (make build) once for the package's tests.
func cofferBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, errBuild = os.MkdirTemp("", "coffer-deploy-test-"); errBuild != nil { //nolint:usetesting // shared by the package's tests
			return
		}
		binPath = filepath.Join(binDir, "coffer")
		errBuild = proctest.BuildRelease(t.Context(), binPath) // what make build ships
	})
	if errBuild != nil {
		t.Fatal(errBuild)
	}
	return binPath
}

// checkCommand fails unless `coffer args... -h` exits 0: the command exists and takes every
// flag args gives (an unknown command or flag, or a stray argument, exits 2).
func checkCommand(t *testing.T, what string, args []string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), cofferBin(t), append(append([]string{}, args...), "-h")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(string(out), "\n")
		t.Errorf("%s: `coffer %s` is not a command coffer takes: %v: %s", what, strings.Join(args, " "), err, first)
	}
}
