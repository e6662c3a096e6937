package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // a real `coffer` process: see cofferProcess
	}
	os.Exit(testdb.Main(m))
}

// cliDatabase points the commands at a fresh, migrated test database and a new master key,
// as the service team's shell sets DATABASE_URL and COFFER_MASTER_KEY; it returns both.
func cliDatabase(t *testing.T) (dbURL, masterKey string) {
	t.Helper()
	dbURL, masterKey = testdb.URL(t), secret.NewMasterKey()
	t.Setenv("DATABASE_URL", dbURL)
	t.Setenv("COFFER_MASTER_KEY", masterKey)
	return dbURL, masterKey
}

// cliChain starts a dev chain (chain 1337, on HTTP) for a CLI test and points the commands at
// it (useDevChain) and at a fresh migrated database (cliDatabase).
func cliChain(t *testing.T) *devchain.Chain {
	t.Helper()
	dev := testfactory.DevChain(t.Context(), t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	cliDatabase(t)
	useDevChain(t, dev, nil)
	if _, errOut, code := coffer(t, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	return dev
}

// useDevChain points the commands (COFFER_CHAINS_FILE) at a chains file naming dev with
// testBankroll, extra's keys added to its entry.
func useDevChain(t *testing.T, dev *devchain.Chain, extra map[string]any) {
	t.Helper()
	t.Setenv("COFFER_CHAINS_FILE", devChainsFile(t, dev, testBankroll, extra))
}

// devChainsFile writes a chains file naming dev (chain 1337, two confirmations) with bankroll,
// extra's keys added to its entry.
func devChainsFile(t *testing.T, dev *devchain.Chain, bankroll string, extra map[string]any) string {
	t.Helper()
	n := map[string]any{"chainId": 1337, "name": "dev", "rpcUrls": []string{dev.RPCURL()}, "confirmations": 2,
		"nativeSymbol": "ETH", "bankrollAddress": bankroll}
	maps.Copy(n, extra)
	return proctest.ChainsFile(t, n)
}

func coffer(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestOperatorAndAdminCommands(t *testing.T) {
	cliDatabase(t)
	t.Setenv("COFFER_FIAT_RATES", "EUR=0.92") // as the service runs with: --fiat takes priced currencies only

	out, errOut, code := coffer(t, "operator", "create", "--name", "Acme", "--webhook-url", "https://acme.example/hook",
		"--approval-mode", "external", "--approval-enabled", "--per-tx-cap", "500", "--daily-cap", "5000.50", "--fiat", "eur",
		"--redirect-url", "https://acme.example/done", "--theme", "acme", "--fee-bps", "150", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	var created map[string]any
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("create --json: %v: %s", err, out)
	}
	for k, want := range map[string]any{"name": "Acme", "approvalMode": "EXTERNAL", "approvalEnabled": true, "perTxCap": "500",
		"dailyCap": "5000.5", "fiatCurrency": "EUR", "redirectUrl": "https://acme.example/done", "themeSlug": "acme",
		"depositFeeBps": 150.0, "active": true} {
		if created[k] != want {
			t.Errorf("%s = %v, want %v", k, created[k], want)
		}
	}
	id, key := created["id"].(string), created["operatorKey"].(string)
	if !strings.HasPrefix(key, "sk_") {
		t.Fatalf("operatorKey %q", key)
	}

	// A sub-operator, then an update that changes only what it names.
	out, _, code = coffer(t, "operator", "create", "--name", "Acme EU", "--webhook-url", "https://eu.acme.example/hook", "--parent", id, "--inactive", "--json")
	var child map[string]any
	decodeJSON(t, out, &child)
	if code != 0 || child["parentId"] != id || child["active"] != false {
		t.Fatalf("sub-operator: %d %v", code, child)
	}
	out, _, code = coffer(t, "operator", "update", "--id", id, "--per-tx-cap", "", "--active=false", "--json")
	var updated map[string]any
	decodeJSON(t, out, &updated)
	if code != 0 || updated["perTxCap"] != "" || updated["dailyCap"] != "5000.5" || updated["active"] != false || updated["operatorKey"] != nil {
		t.Fatalf("update: %d %v", code, updated)
	}
	out, _, _ = coffer(t, "operator", "list", "--parent", id, "--json")
	var list []map[string]any
	decodeJSON(t, out, &list)
	if len(list) != 1 || list[0]["id"] != child["id"] {
		t.Fatalf("list --parent: %s", out)
	}
	out, _, code = coffer(t, "operator", "rotate-key", "--id", id, "--grace", "1h", "--json")
	var rotated map[string]any
	decodeJSON(t, out, &rotated)
	if code != 0 || rotated["operatorKey"] == key || !strings.HasPrefix(rotated["operatorKey"].(string), "sk_") {
		t.Fatalf("rotate-key: %s", out)
	}
	out, _, _ = coffer(t, "operator", "get", "--id", id)
	if !strings.Contains(out, "keys:") || !strings.Contains(out, key[:7]) {
		t.Fatalf("get shows key prefixes: %s", out)
	}

	out, errOut, code = coffer(t, "admin", "create", "--email", "ops@acme.example", "--password", "a long enough password", "--operator-id", id, "--totp", "--json")
	var adm map[string]any
	decodeJSON(t, out, &adm)
	if code != 0 || adm["operatorId"] != id || !strings.HasPrefix(adm["totpUri"].(string), "otpauth://totp/") {
		t.Fatalf("admin create: %d %s %s", code, out, errOut)
	}

	// Usage errors exit 2 with a message; service errors exit 1.
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"operator"}, 2, "create|update"},
		{[]string{"operator", "explode"}, 2, "unknown subcommand"},
		{[]string{"operator", "update"}, 2, "--id is required"},
		{[]string{"operator", "create", "--name", "X"}, 1, "webhookUrl: is required"},
		{[]string{"operator", "create", "--name", "X", "--webhook-url", "https://x.example", "--approval-mode", "later"}, 1, "approvalMode"},
		{[]string{"operator", "get", "--id", "00000000-0000-4000-8000-000000000000"}, 1, "operator not found"},
		// What was seen: an id that is not a UUID reached the database and came back INTERNAL
		// with PostgreSQL's syntax error; it is a usage error, nothing changed.
		{[]string{"operator", "get", "--id", "nope"}, 2, "--id must be an operator id (a UUID)"},
		{[]string{"operator", "update", "--id", "nope", "--name", "Y"}, 2, "--id must be an operator id"},
		{[]string{"operator", "rotate-key", "--id", "nope"}, 2, "--id must be an operator id"},
		{[]string{"operator", "list", "--parent", "nope"}, 2, "--parent must be an operator id"},
		{[]string{"operator", "create", "--name", "X", "--webhook-url", "https://x.example", "--parent", "nope"}, 2,
			"--parent must be an operator id"},
		{[]string{"operator", "balance", "--id", "nope"}, 2, "--id must be an operator id"},
		{[]string{"operator", "treasury", "--id", "nope", "--chain-id", "1337"}, 2, "--id must be an operator id"},
		{[]string{"operator", "adjust", "--id", "nope", "--chain-id", "1337", "--currency", "ETH", "--amount", "1", "--note", "x"}, 2,
			"--id must be an operator id"},
		{[]string{"ops", "pause", "--scope", "operator", "--operator", "nope", "--reason", "x"}, 2, "--operator must be an operator id"},
		{[]string{"ops", "resume", "--scope", "operator", "--operator", "nope", "--reason", "x"}, 2, "--operator must be an operator id"},
		{[]string{"admin", "create", "--email", "x@y.z", "--password", "long enough pw", "--operator-id", "nope"}, 2,
			"--operator-id must be an operator id"},
		{[]string{"deposit", "reorged", "--operator-id", "nope"}, 2, "--operator-id must be an operator id"},
		{[]string{"operator", "create", "--name", "X", "--webhook-url", "https://x.example", "--fiat", "jpy"}, 1,
			"fiatCurrency: JPY has no exchange rate here; supported currencies: EUR, USD"},
		{[]string{"operator", "update", "--id", id, "--fiat", "GBP"}, 1, "supported currencies: EUR, USD"},
		{[]string{"admin", "create", "--email", "x@y.z"}, 2, "--password"},
		{[]string{"nope"}, 2, "unknown command"},
	} {
		_, errOut, code := coffer(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Setenv("DATABASE_URL", testdb.URL(t)) // already migrated: a second run changes nothing
	out, errOut, code := coffer(t, "migrate")
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
}

// coffer admin disable|enable|revoke-sessions: a disabled admin cannot log in and its tokens
// stop working at once; enable does not bring them back; revoke-sessions ends every token.
func TestAdminAccessCommands(t *testing.T) {
	dbURL, masterKey := cliDatabase(t)
	ctx := context.Background()
	pool := testdb.Open(t, dbURL, 4)
	key, _ := secret.ParseMasterKey(masterKey)
	box, _ := secret.NewBox(key)
	admins := admin.New(pool, box, admin.Options{HashWait: time.Minute})
	const pw = "a long enough password"
	login := func() (string, error) {
		token, _, _, err := admins.Login(ctx, admin.Credentials{Email: "ops@acme.example", Password: pw})
		return token, err
	}
	works := func(token string) bool { _, err := admins.Authenticate(ctx, token); return err == nil }
	jsonOut := func(args ...string) map[string]any {
		t.Helper()
		out, errOut, code := coffer(t, append(args, "--json")...)
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil {
			t.Fatalf("%v: exit %d %s %s", args, code, out, errOut)
		}
		return m
	}

	created := jsonOut("admin", "create", "--email", "ops@acme.example", "--password", pw)
	id := created["id"].(string)
	t1, _ := login()
	t2, _ := login()
	if got := jsonOut("admin", "disable", "--email", "OPS@acme.example"); got["id"] != id || got["active"] != false || got["revokedSessions"] != 2.0 {
		t.Fatalf("disable: %v", got)
	}
	if works(t1) || works(t2) {
		t.Fatal("a disabled admin's token still works")
	}
	if _, err := login(); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("disabled admin logs in: %v", err)
	}
	if got := jsonOut("admin", "enable", "--id", id); got["active"] != true || got["revokedSessions"] != nil {
		t.Fatalf("enable: %v", got)
	}
	t3, err := login()
	if err != nil || works(t1) {
		t.Fatalf("after enable: %v, old token works %t", err, works(t1))
	}
	if got := jsonOut("admin", "revoke-sessions", "--id", id); got["active"] != true || got["revokedSessions"] != 1.0 {
		t.Fatalf("revoke-sessions: %v", got)
	}
	if works(t3) {
		t.Fatal("a revoked token still works")
	}
	out, _, code := coffer(t, "admin", "disable", "--id", id)
	if code != 0 || !strings.Contains(out, "disabled; 0 sessions revoked") {
		t.Fatalf("disable (text): %d %s", code, out)
	}

	// Usage errors exit 2, service errors 1; neither changes anything.
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"admin"}, 2, "disable|enable|revoke-sessions"},
		{[]string{"admin", "delete", "--id", id}, 2, "unknown subcommand"},
		{[]string{"admin", "disable"}, 2, "--id or --email"},
		{[]string{"admin", "enable", "--id", id, "--email", "ops@acme.example"}, 2, "--id or --email"},
		{[]string{"admin", "enable", "--id", "42"}, 1, "must be an admin id"},
		{[]string{"admin", "revoke-sessions", "--email", "nobody@acme.example"}, 1, "admin not found"},
	} {
		_, errOut, code := coffer(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.msg)
		}
	}
	if a, err := store.New(pool).AdminByID(ctx, id); err != nil || a.Active {
		t.Fatalf("bad commands changed the admin: %+v %v", a, err)
	}
}

// decodeJSON decodes a command's --json output into v.
func decodeJSON(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("decode: %v", err)
	}
}

// createOperator runs `coffer operator create` for Acme and returns the operator's id.
func createOperator(t *testing.T) string {
	t.Helper()
	out, errOut, code := coffer(t, "operator", "create", "--name", "Acme", "--webhook-url", "https://acme.example/hook", "--json")
	var op map[string]any
	decodeJSON(t, out, &op)
	id, _ := op["id"].(string)
	if code != 0 || id == "" {
		t.Fatalf("create: %s %s", out, errOut)
	}
	return id
}

// TestOperatorFeeBound: `coffer operator create|update --fee-bps` above 5000 (50%) is the
// service's INVALID_ARGUMENT naming depositFeeBps (exit 1) and changes nothing.
func TestOperatorFeeBound(t *testing.T) {
	cliDatabase(t)
	id := createOperator(t)
	for _, args := range [][]string{
		{"operator", "create", "--name", "Greedy", "--webhook-url", "https://greedy.example/hook", "--fee-bps", "10000"},
		{"operator", "create", "--name", "Greedy", "--webhook-url", "https://greedy.example/hook", "--fee-bps", "5001"},
		{"operator", "update", "--id", id, "--fee-bps", "10000"},
	} {
		if _, errOut, code := coffer(t, args...); code != 1 || !strings.Contains(errOut, "depositFeeBps") {
			t.Errorf("%v: %d %q, want 1 naming depositFeeBps", args, code, errOut)
		}
	}
	out, _, code := coffer(t, "operator", "list", "--json")
	if code != 0 || strings.Contains(out, "Greedy") {
		t.Fatalf("a refused create wrote an operator: %d %s", code, out)
	}
	var got map[string]any
	out, _, _ = coffer(t, "operator", "get", "--id", id, "--json")
	if decodeJSON(t, out, &got); got["depositFeeBps"] != 0.0 {
		t.Fatalf("a refused update changed the fee: %s", out)
	}
	if _, errOut, code := coffer(t, "operator", "update", "--id", id, "--fee-bps", "5000"); code != 0 {
		t.Fatalf("5000 bps: %d %s", code, errOut)
	}
}
