package main

import (
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// A bad variable stops a command with a message naming it and exit status 1, as `coffer
// serve` does: the CLI never runs on a default it was told not to use.
func TestCLIReportsConfigErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", testdb.URL(t))
	t.Setenv("COFFER_MASTER_KEY", secret.NewMasterKey())
	for _, c := range []struct {
		name, value string
		args        []string
	}{
		{"COFFER_SESSION_TTL", "soon", []string{"operator", "list"}},
		{"COFFER_FIAT_RATES", "EUR", []string{"operator", "list"}},
		{"COFFER_LOG_LEVEL", "loud", []string{"keys", "status"}},
		{"COFFER_DB_MAX_CONNS", "one", []string{"migrate"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.name, c.value)
			_, errOut, code := coffer(t, c.args...)
			if code != 1 || !strings.Contains(errOut, "configuration") || !strings.Contains(errOut, c.name) {
				t.Fatalf("%s=%s: exit %d, %q", c.name, c.value, code, errOut)
			}
		})
	}
	// The control: the same commands run with the variables unset.
	if _, errOut, code := coffer(t, "operator", "list"); code != 0 {
		t.Fatalf("operator list: %d %s", code, errOut)
	}
}
