package chain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, err string
	}{
		{"ok", `[{"chainId":2,"name":"B","rpcUrls":["http://b"],"confirmations":3,"nativeSymbol":"ETH",
			"tokens":[{"symbol":"USDT","contractAddress":"0x00000000000000000000000000000000000000aa","decimals":6}],"bankrollAddress":"0x0000000000000000000000000000000000000b0b"},
			{"chainId":1,"name":"A","rpcUrls":["https://a"],"finalized":true,"nativeSymbol":"ETH","traceInternalTransfers":true,
			"bankrollAddress":"0x0000000000000000000000000000000000000b0b"}]`, ""},
		{"no bankroll", `[{"chainId":8453,"name":"Base","rpcUrls":["http://a"],"finalized":true,"nativeSymbol":"ETH"}]`,
			"chain 8453 (Base): bankrollAddress is required"},
		{"zero bankroll", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"finalized":true,"nativeSymbol":"ETH",
			"bankrollAddress":"0x0000000000000000000000000000000000000000"}]`, "bankrollAddress is required"},
		{"unknown field", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH","bogus":1}]`, "unknown field"},
		{"no rpc", `[{"chainId":1,"name":"A","confirmations":1,"nativeSymbol":"ETH"}]`, "RPC URL"},
		{"bad rpc", `[{"chainId":1,"name":"A","rpcUrls":["ftp://a"],"confirmations":1,"nativeSymbol":"ETH"}]`, "http(s)"},
		{"no depth", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"nativeSymbol":"ETH"}]`, "confirmations"},
		{"finalized and a depth", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"finalized":true,"confirmations":12,"nativeSymbol":"ETH",
			"bankrollAddress":"0x0000000000000000000000000000000000000b0b"}]`, "chain 1 (A): confirmations 12 with finalized true"},
		{"negative native decimals", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH","nativeDecimals":-1,
			"bankrollAddress":"0x0000000000000000000000000000000000000b0b"}]`, "chain 1 (A): nativeDecimals must be 0..36"},
		{"huge native decimals", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH","nativeDecimals":77,
			"bankrollAddress":"0x0000000000000000000000000000000000000b0b"}]`, "chain 1 (A): nativeDecimals must be 0..36"},
		{"duplicate chain", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH"},
			{"chainId":1,"name":"B","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH"}]`, "twice"},
		{"duplicate symbol", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH",
			"tokens":[{"symbol":"eth","contractAddress":"0x00000000000000000000000000000000000000aa","decimals":18}]}]`, "twice"},
		// One contract under two symbols: its Transfer logs would be recorded under one of them
		// whichever the user picked, so a payment made as the widget showed it for the other
		// matches no handout (no session) and is priced as the other.
		{"duplicate contract", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH",
			"tokens":[{"symbol":"USDT","contractAddress":"0x00000000000000000000000000000000000000aa","decimals":6},
			{"symbol":"USDT0","contractAddress":"0x00000000000000000000000000000000000000AA","decimals":6}]}]`,
			"token contract 0x00000000000000000000000000000000000000AA listed twice (USDT, USDT0)"},
		{"bad address", `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH",
			"tokens":[{"symbol":"X","contractAddress":"0x12","decimals":18}]}]`, "hex string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ok := loadChains(t, tc.body, tc.err)
			if !ok {
				return
			}
			ns := r.Networks()
			if ns[0].ChainID != 1 || ns[1].ChainID != 2 || ns[0].NativeDecimals != 18 || !ns[0].TraceInternalTransfers || ns[1].TraceInternalTransfers {
				t.Fatalf("networks %+v", ns)
			}
			n, _ := r.Network(2)
			if a, ok := n.Asset("usdt"); !ok || a.Decimals != 6 || a.Native {
				t.Fatalf("asset %+v", a)
			}
			if a, ok := n.Asset("ETH"); !ok || !a.Native || a.Decimals != 18 {
				t.Fatalf("native %+v", a)
			}
			if _, ok := n.Asset("DOGE"); ok {
				t.Fatal("unknown asset found")
			}
		})
	}
}

// TestSweepMethod: the sweep method defaults to topup; eip7702 needs a Sweeper, topup refuses
// one (it would silently do nothing), and an unknown method names the allowed ones.
func TestSweepMethod(t *testing.T) {
	t.Parallel()
	const sweeper = `,"sweeperAddress":"0x00000000000000000000000000000000000005e9"`
	for _, tc := range []struct {
		name, extra string
		want        SweepMethod
		batched     bool
		err         string
	}{
		{name: "unset", want: SweepTopUp},
		{name: "topup", extra: `,"sweepMethod":"topup"`, want: SweepTopUp},
		{name: "eip7702", extra: `,"sweepMethod":"eip7702"` + sweeper, want: SweepEIP7702, batched: true},
		{name: "eip7702 without sweeper", extra: `,"sweepMethod":"eip7702"`, err: "sweepMethod eip7702 needs sweeperAddress"},
		{name: "eip7702 zero sweeper", extra: `,"sweepMethod":"eip7702","sweeperAddress":"0x0000000000000000000000000000000000000000"`,
			err: "needs sweeperAddress"},
		{name: "sweeper on topup", extra: `,"sweepMethod":"topup"` + sweeper, err: "sweeperAddress is set but sweepMethod is topup"},
		{name: "sweeper alone", extra: sweeper, err: "sweeperAddress is set but sweepMethod is topup"},
		{name: "unknown", extra: `,"sweepMethod":"EIP7702"`, err: `sweepMethod "EIP7702": must be "topup" or "eip7702"`},
		{name: "bad sweeper", extra: `,"sweepMethod":"eip7702","sweeperAddress":"0x12"`, err: "hex string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := `[{"chainId":1,"name":"A","rpcUrls":["http://a"],"confirmations":1,"nativeSymbol":"ETH",
				"bankrollAddress":"0x0000000000000000000000000000000000000b0b"` + tc.extra + `}]`
			r, ok := loadChains(t, body, tc.err)
			if !ok {
				return
			}
			n, _ := r.Network(1)
			if n.SweepMethod != tc.want || n.Batched() != tc.batched {
				t.Fatalf("sweep method %q batched %v, want %q %v", n.SweepMethod, n.Batched(), tc.want, tc.batched)
			}
		})
	}
}

// loadChains writes body as a chains file and loads it. With wantErr set the load must fail
// with an error that says it, and ok is false: there is nothing more to check.
func loadChains(t *testing.T, body, wantErr string) (r *Registry, ok bool) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "chains.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := LoadFile(path)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want %q", err, wantErr)
		}
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}
