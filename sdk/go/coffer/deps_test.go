package coffer_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoServerDependencies: an operator who imports the SDK builds none of the server's
// dependencies (the SDK and the generated code are modules of their own).
func TestNoServerDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "-test", "github.com/cofferhq/coffer/sdk/go/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages: %s", len(deps), out)
	}
	for _, pkg := range deps {
		for _, banned := range []string{"github.com/ethereum/go-ethereum", "github.com/jackc/pgx", "github.com/riverqueue/river",
			"github.com/cofferhq/coffer/server", "gocloud.dev"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the SDK depends on %s", pkg)
			}
		}
	}
}
