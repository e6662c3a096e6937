package proctest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
)

// cofferPackage is the coffer command; `go build` finds it from any directory of the module.
const cofferPackage = "github.com/cofferhq/coffer/server/cmd/coffer"

// Build compiles the coffer binary to bin.
func Build(ctx context.Context, bin string) error {
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, cofferPackage).CombinedOutput(); err != nil {
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
