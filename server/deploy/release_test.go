package deploy_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/proctest"
)

// TestReleaseBuildLeavesOutTheDevChain: the release build (proctest.ReleaseTags, as make
// build, make image and the Containerfile build it) links no go-ethereum node, so `coffer
// serve` does not pay for it in memory; the default build keeps `coffer dev` whole.
func TestReleaseBuildLeavesOutTheDevChain(t *testing.T) {
	t.Parallel()
	devOnly := []string{
		"github.com/cofferhq/coffer/server/internal/devchain",
		"github.com/ethereum/go-ethereum/node",
		"github.com/ethereum/go-ethereum/eth",
		"github.com/ethereum/go-ethereum/ethclient/simulated",
	}
	for _, c := range []struct {
		name   string
		tags   []string
		linked bool
	}{
		{"release", []string{"-tags", proctest.ReleaseTags}, false},
		{"default", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"list", "-deps"}, c.tags...), "github.com/cofferhq/coffer/server/cmd/coffer")
			out, err := exec.CommandContext(t.Context(), "go", args...).Output()
			if err != nil {
				t.Fatalf("go %s: %v", strings.Join(args, " "), err)
			}
			deps := strings.Fields(string(out))
			for _, p := range devOnly {
				if slices.Contains(deps, p) != c.linked {
					t.Errorf("%s build: %s linked = %v, want %v", c.name, p, !c.linked, c.linked)
				}
			}
		})
	}
}
