package main

import (
	"strings"
	"testing"
)

// A bad variable stops a command with a message naming it and exit status 1, as `coffer
// serve` does: the CLI never runs on a default it was told not to use.
func TestCLIReportsConfigErrors(t *testing.T) {
	cliDatabase(t)
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

// Bad input is refused before anything is opened: with no database to be had, each command
// below still answers its usage error (exit 2), not the missing database (exit 1).
func TestUsageBeforeDatabase(t *testing.T) {
	dir := t.TempDir() // no dev.json
	t.Setenv("DATABASE_URL", "")
	t.Setenv("COFFER_ADMIN_PASSWORD", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ops", "pause", "--scope", "moon", "--reason", "x"}, "--scope must be"},
		{[]string{"ops", "pause", "--scope", "global"}, "--reason is required"},
		{[]string{"ops", "tx", "list", "--limit", "501"}, "-limit: must be 1..500"},
		{[]string{"ops", "tx", "cancel", "--id", "1"}, "--id and --reason are required"},
		{[]string{"ops", "threshold", "set", "--chain-id", "1"}, "--chain-id, --wallet, --currency and --reason are required"},
		{[]string{"deposit", "reorged", "--limit", "0"}, "-limit: must be 1..200"},
		{[]string{"deposit", "reorged", "--limit", "many"}, "-limit: must be 1..200"},
		{[]string{"deposit", "resolve", "--id", "1", "--resolution", "write-off"}, "--note are required"},
		{[]string{"deposit", "replay", "--chain-id", "1", "--tx-hash", "0x12"}, "--tx-hash (0x + 64 hex) are required"},
		{[]string{"operator", "get"}, "--id is required"},
		{[]string{"chains", "sweeper"}, "--chain-id is required"},
		{[]string{"operator", "treasury", "--id", "x"}, "--chain-id (positive) is required"},
		{[]string{"operator", "adjust", "--id", "x", "--chain-id", "1", "--currency", "USDT", "--amount", "1"}, "--note are required"},
		{[]string{"admin", "create", "--email", "ops@acme.example"}, "--password (or $COFFER_ADMIN_PASSWORD) are required"},
		{[]string{"admin", "enable"}, "--id or --email"},
		{[]string{"migrate", "extra"}, `unexpected argument "extra"`},
	} {
		_, errOut, code := coffer(t, append(c.args, "--data-dir", dir)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %q, want 2 %q", c.args, code, errOut, c.want)
		}
	}
	// The control: good input gets as far as the database, which is not there.
	if _, errOut, code := coffer(t, "ops", "pauses", "--data-dir", dir); code != 1 || !strings.Contains(errOut, "set DATABASE_URL") {
		t.Fatalf("ops pauses: exit %d %q", code, errOut)
	}
}
