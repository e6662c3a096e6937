package main

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/proctest"
)

// TestFundsCommands: `coffer operator treasury|balance|adjust` and `coffer reconcile`, with the
// shapes DESIGN.md gives them, on a real database and a dev chain.
func TestFundsCommands(t *testing.T) {
	dev := cliChain(t)
	usdt, _ := dev.Token("USDT")
	useDevChain(t, dev, map[string]any{"tokens": []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Address.Hex(), "decimals": 6}}})
	id := createOperator(t)

	// Treasury: one address per operator, EIP-55, stable.
	out, errOut, code := coffer(t, "operator", "treasury", "--id", id, "--chain-id", "1337", "--json")
	var tr map[string]string
	if err := json.Unmarshal([]byte(out), &tr); code != 0 || err != nil || !common.IsHexAddress(tr["address"]) ||
		common.HexToAddress(tr["address"]).Hex() != tr["address"] {
		t.Fatalf("treasury: %d %q %s", code, out, errOut)
	}
	again, _, _ := coffer(t, "operator", "treasury", "--id", id, "--chain-id", "1337", "--json")
	if again != out {
		t.Fatalf("treasury changed: %s then %s", out, again)
	}
	if _, errOut, code = coffer(t, "operator", "treasury", "--id", id, "--chain-id", "99"); code != 1 || !strings.Contains(errOut, "not configured") {
		t.Fatalf("unknown chain: %d %s", code, errOut)
	}

	balance := func() map[string][2]string {
		t.Helper()
		out, errOut, code := coffer(t, "operator", "balance", "--id", id, "--json")
		var list []map[string]any
		if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
			t.Fatalf("balance: %d %s %s", code, out, errOut)
		}
		got := map[string][2]string{}
		for _, b := range list {
			if len(b) != 4 || b["chainId"] != 1337.0 {
				t.Fatalf("balance line %v: want exactly chainId, currency, available, reserved", b)
			}
			got[b["currency"].(string)] = [2]string{b["available"].(string), b["reserved"].(string)}
		}
		return got
	}
	if b := balance(); b["USDT"] != [2]string{"0.000000", "0.000000"} || b["ETH"][0] != "0.000000000000000000" {
		t.Fatalf("a new operator's balance: %v", b)
	}
	if _, errOut, code = coffer(t, "operator", "adjust", "--id", id, "--chain-id", "1337", "--currency", "USDT", "--amount", "+100",
		"--note", "opening float"); code != 0 {
		t.Fatalf("adjust: %s", errOut)
	}
	// Refusals change nothing: a debit beyond the funds, too many decimals, no note.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--currency", "USDT", "--amount", "-100.5", "--note", "x"}, 1, "would leave it negative"},
		{[]string{"--currency", "USDT", "--amount", "1.0000001", "--note", "x"}, 1, "at most 6 decimals"},
		{[]string{"--currency", "DOGE", "--amount", "1", "--note", "x"}, 1, "not an asset"},
		{[]string{"--currency", "USDT", "--amount", "1"}, 2, "--note"},
		{[]string{"--currency", "USDT", "--amount", "1e80", "--note", "x"}, 1, "than can exist"},
	} {
		args := append([]string{"operator", "adjust", "--id", id, "--chain-id", "1337"}, c.args...)
		if _, errOut, code := coffer(t, args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %s; want %d %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if b := balance(); b["USDT"] != [2]string{"100.000000", "0.000000"} {
		t.Fatalf("after the adjustment: %v", b)
	}
	// An id that is not an operator's is never an internal error: one that is no UUID is a usage
	// error, an unknown UUID is "not found".
	for _, sub := range [][]string{{"treasury", "--chain-id", "1337"}, {"balance"},
		{"adjust", "--chain-id", "1337", "--currency", "USDT", "--amount", "+1", "--note", "x"}} {
		for _, c := range []struct {
			id, want string
			code     int
		}{{"not-an-id", "must be an operator id", 2}, {"00000000-0000-4000-8000-000000000000", "not found", 1}} {
			args := append([]string{"operator", sub[0], "--id", c.id}, sub[1:]...)
			if _, errOut, code := coffer(t, args...); code != c.code || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "internal") {
				t.Errorf("%v: %d %s; want %d and %q", args, code, errOut, c.code, c.want)
			}
		}
	}

	// Reconcile: the operator holds 100 USDT the service does not have on-chain: short, exit 1.
	out, errOut, code = coffer(t, "reconcile", "--json")
	rec := new(cofferv1.ReconcileResponse)
	if err := protojson.Unmarshal([]byte(out), rec); code != 1 || err != nil || rec.Ok {
		t.Fatalf("reconcile short: %d %s %s", code, out, errOut)
	}
	var hot common.Address
	for _, l := range rec.Lines {
		if l.Currency == "USDT" && (l.Owed != "100" || l.Surplus != "-100" || l.Ok) {
			t.Fatalf("USDT line: %+v", l)
		}
		for _, w := range l.Wallets {
			if w.Role == "hot wallet" {
				hot = common.HexToAddress(w.Address)
			}
		}
	}
	// The hot wallet is funded with 150 USDT: covered, 50 over.
	mint, _ := dev.Mint(t.Context(), "USDT", hot, big.NewInt(150_000_000))
	if _, err := dev.Mine(t.Context(), mint); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = coffer(t, "reconcile", "--json")
	if err := protojson.Unmarshal([]byte(out), rec); code != 0 || err != nil || !rec.Ok {
		t.Fatalf("reconcile covered: %d %s %s", code, out, errOut)
	}
	for _, l := range rec.Lines {
		if l.Currency == "USDT" && (l.Holdings != "150" || l.Surplus != "50") {
			t.Fatalf("USDT line: %+v", l)
		}
	}
	if out, _, code = coffer(t, "reconcile"); code != 0 || !strings.Contains(out, "SURPLUS") {
		t.Fatalf("reconcile table: %s", out)
	}
}

// TestReconcileCouldNotCheck: `coffer reconcile` tells "the books are short" (exit 1) from
// "could not check" (exit 3, naming what failed: a chain whose node does not answer, the
// database): a cron alert must not read a node outage as missing money, nor the reverse. A
// short line elsewhere still wins (exit 1, the unread chain named too); an unread chain never
// reads as covered ("ok": false); an unconfigured chain is bad input (exit 2).
func TestReconcileCouldNotCheck(t *testing.T) {
	dev := cliChain(t)
	usdt, _ := dev.Token("USDT")
	down := map[string]any{"chainId": 1338, "name": "down", "rpcUrls": []string{"http://127.0.0.1:9"}, "confirmations": 2,
		"nativeSymbol": "ETH", "bankrollAddress": testBankroll}
	t.Setenv("COFFER_CHAINS_FILE", proctest.ChainsFile(t, map[string]any{"chainId": 1337, "name": "dev", "rpcUrls": []string{dev.RPCURL()},
		"confirmations": 2, "nativeSymbol": "ETH", "bankrollAddress": testBankroll,
		"tokens": []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Address.Hex(), "decimals": 6}}}, down))
	id := createOperator(t)

	reconcile := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := coffer(t, append([]string{"reconcile"}, args...)...)
		if code != wantCode {
			t.Fatalf("reconcile %v: exit %d, want %d: %s %s", args, code, wantCode, out, errOut)
		}
		return out, errOut
	}
	// Chain 1337 covered (nothing owed), chain 1338 unread while its ETH is owed (configured:
	// not an unconfigured line, which would read as short): could not check, with 1337's lines.
	if _, errOut, code := coffer(t, "operator", "adjust", "--id", id, "--chain-id", "1338", "--currency", "ETH", "--amount", "+1",
		"--note", "float"); code != 0 {
		t.Fatalf("adjust on chain 1338: %s", errOut)
	}
	out, errOut := reconcile(3)
	if !strings.Contains(errOut, "could not check") || !strings.Contains(errOut, "chain 1338") || !strings.Contains(out, "USDT") {
		t.Errorf("unread chain: %s %s", out, errOut)
	}
	out, _ = reconcile(3, "--json")
	rec := new(cofferv1.ReconcileResponse)
	if err := protojson.Unmarshal([]byte(out), rec); err != nil || rec.Ok || len(rec.Lines) != 2 {
		t.Errorf("unread chain --json: want ok false and chain 1337's two lines: %v %s", err, out)
	}
	reconcile(3, "--chain-id", "1338")
	reconcile(0, "--chain-id", "1337")
	if _, errOut := reconcile(2, "--chain-id", "99"); !strings.Contains(errOut, "chain 99 is not configured") {
		t.Errorf("unconfigured chain: %s", errOut)
	}

	// Short on chain 1337 while 1338 is unread: short wins, and the unread chain is named.
	if _, errOut, code := coffer(t, "operator", "adjust", "--id", id, "--chain-id", "1337", "--currency", "USDT", "--amount", "+100",
		"--note", "float"); code != 0 {
		t.Fatalf("adjust: %s", errOut)
	}
	if _, errOut = reconcile(1); !strings.Contains(errOut, "not covered") || !strings.Contains(errOut, "chain 1338") {
		t.Errorf("short and unread: %s", errOut)
	}
	reconcile(1, "--chain-id", "1337")

	// The database does not answer: could not check, naming it.
	t.Setenv("DATABASE_URL", "postgres://coffer@127.0.0.1:9/coffer?sslmode=disable&connect_timeout=5")
	if _, errOut = reconcile(3); !strings.Contains(errOut, "could not check") || !strings.Contains(errOut, "PostgreSQL") {
		t.Errorf("database down: %s", errOut)
	}
}
