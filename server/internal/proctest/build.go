package proctest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cofferPackage is the coffer command; `go build` finds it from any directory of the module.
const cofferPackage = "github.com/cofferhq/coffer/server/cmd/coffer"

// ReleaseTags are the build tags of release builds (make build, make image, the Containerfile):
// they leave out `coffer dev` and its embedded dev chain.
const ReleaseTags = "nodev"

// Build compiles the coffer binary to bin.
func Build(ctx context.Context, bin string) error {
	return goBuild(exec.CommandContext(ctx, "go", "build", "-o", bin, cofferPackage))
}

// BuildRelease compiles coffer to bin as make build does: static, -trimpath, stripped, with
// ReleaseTags (the version -ldflags aside).
func BuildRelease(ctx context.Context, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", ReleaseTags, "-ldflags", "-s -w", "-o", bin, cofferPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return goBuild(cmd)
}

func goBuild(cmd *exec.Cmd) error {
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build coffer: %w\n%s", err, out)
	}
	return nil
}

// BuildCoffer compiles the coffer binary into a temporary directory of the test.
func BuildCoffer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coffer")
	if err := Build(t.Context(), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
