package main

import (
	"strings"
	"testing"
)

// TestOpsPauseCommands: pause, list, resume, each audited with the CLI actor and the reason;
// bad input is a usage error (exit 2) or the service's error (exit 1) and changes nothing.
func TestOpsPauseCommands(t *testing.T) {
	cliDatabase(t)
	t.Setenv("USER", "oncall")

	out, errOut, code := coffer(t, "ops", "pause", "--scope", "global", "--reason", "incident 7")
	if code != 0 || !strings.Contains(out, "all payouts are paused (by service-team:cli:oncall: incident 7)") {
		t.Fatalf("pause: %d %q %q", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ops", "pause", "--scope", "global"}, 2, "--reason is required"},
		{[]string{"ops", "pause", "--scope", "chain", "--reason", "x"}, 2, "--chain-id goes with"},
		{[]string{"ops", "pause", "--scope", "moon", "--reason", "x"}, 2, "--scope must be"},
		{[]string{"ops", "pause", "--scope", "global", "--reason", "again"}, 1, "already paused"},
		{[]string{"ops", "pause", "--scope", "operator", "--operator", "00000000-0000-4000-8000-000000000000", "--reason", "x"}, 1, "not found"},
		{[]string{"ops", "frobnicate"}, 2, "unknown subcommand"},
		{[]string{"ops", "tx", "resend", "--id", "5"}, 2, "--id and --reason are required"},
		{[]string{"ops", "tx", "fail", "--id", "987654", "--reason", "x"}, 1, "transaction 987654 not found"},
		{[]string{"ops", "tx", "cancel", "--id", "987654", "--reason", "x"}, 1, "transaction 987654 not found"},
		{[]string{"ops", "threshold", "set", "--chain-id", "999", "--wallet", "0x0000000000000000000000000000000000000001",
			"--currency", "ETH", "--amount", "1", "--reason", "x"}, 1, "chain 999 is not configured"},
		{[]string{"ops", "threshold", "set", "--chain-id", "999"}, 2, "are required"},
	} {
		if _, errOut, code := coffer(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if out, _, code := coffer(t, "ops", "tx", "list", "--stuck"); code != 0 || !strings.Contains(out, "no transactions") {
		t.Fatalf("tx list --stuck: %d %s", code, out)
	}
	if out, _, code := coffer(t, "ops", "threshold", "list"); code != 0 || !strings.Contains(out, "no thresholds") {
		t.Fatalf("threshold list: %d %s", code, out)
	}
	out, _, code = coffer(t, "ops", "pauses", "--json")
	if code != 0 || strings.Count(out, `"scope":"PAUSE_SCOPE_GLOBAL"`) != 1 || !strings.Contains(out, `"reason":"incident 7"`) {
		t.Fatalf("pauses: %d %s", code, out)
	}
	out, _, code = coffer(t, "ops", "resume", "--scope", "global", "--reason", "fixed")
	if code != 0 || !strings.Contains(out, "lifted by service-team:cli:oncall: fixed") {
		t.Fatalf("resume: %d %s", code, out)
	}
	if out, _, _ = coffer(t, "ops", "pauses"); !strings.Contains(out, "not paused") {
		t.Fatalf("pauses after resume: %s", out)
	}
	if out, _, _ = coffer(t, "ops", "pauses", "--all"); !strings.Contains(out, "incident 7") || !strings.Contains(out, "fixed") {
		t.Fatalf("pauses --all: %s", out)
	}
}
