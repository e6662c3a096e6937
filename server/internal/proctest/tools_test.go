package proctest

import "testing"

// A missing tool skips the test outside CI, and a present one is found.
func TestNeed(t *testing.T) {
	t.Setenv("CI", "")
	var skipped bool
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Need(t, "coffer-no-such-tool", "nowhere")
	})
	if !skipped {
		t.Error("a missing tool did not skip the test")
	}
	if p := Need(t, "go", "install Go"); p == "" {
		t.Error("go not found")
	}
}
