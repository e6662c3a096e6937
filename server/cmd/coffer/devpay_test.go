package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// `coffer dev pay` pays deposits from the faucet of a running `coffer dev` as a user's wallet
// does: ether and a token, each credited with its webhook delivered.
func TestDevPayDeposits(t *testing.T) {
	bin, dataDir := devTest(t)
	f, _ := startDev(t, bin, dataDir)

	_, usdtAddr := sessionAddress(t, f, "payer-1", "USDT")
	out, errOut, code := coffer(t, "dev", "pay", "--data-dir", dataDir, "--to", usdtAddr, "--currency", "USDT", "--amount", "5.25")
	hash := strings.TrimSpace(out)
	if code != 0 || len(hash) != 66 || !strings.HasPrefix(hash, "0x") {
		t.Fatalf("coffer dev pay USDT: %d %q %s", code, out, errOut)
	}
	waitCredited(t, f, "USDT", hash)

	_, ethAddr := sessionAddress(t, f, "payer-2", "ETH")
	out, errOut, code = coffer(t, "dev", "pay", "--data-dir", dataDir, "--to", strings.ToLower(ethAddr), "--currency", "eth",
		"--amount", "0.05", "--chain-id", "1337", "--json")
	var receipt map[string]any
	if err := json.Unmarshal([]byte(out), &receipt); code != 0 || err != nil {
		t.Fatalf("coffer dev pay ETH --json: %d %v %q %s", code, err, out, errOut)
	}
	for k, want := range map[string]any{"chainId": 1337.0, "from": f.FaucetAddress, "to": ethAddr, "currency": "ETH", "amount": "0.050000000000000000"} {
		if receipt[k] != want {
			t.Errorf("--json %s = %v, want %v", k, receipt[k], want)
		}
	}
	if block, _ := receipt["block"].(float64); block <= 0 {
		t.Errorf("--json block = %v", receipt["block"])
	}
	hash, _ = receipt["hash"].(string)
	waitCredited(t, f, "ETH", hash)

	// More than the faucet holds: the node's refusal, exit 1, nothing sent.
	_, errOut, code = coffer(t, "dev", "pay", "--data-dir", dataDir, "--to", usdtAddr, "--currency", "USDC", "--amount", "2000000000")
	if code != 1 || !strings.Contains(errOut, "cannot pay 2000000000.000000 USDC") {
		t.Errorf("paying more than the faucet holds: %d %s", code, errOut)
	}
}

// sessionAddress opens a deposit session for user and returns its sid and deposit address.
func sessionAddress(t *testing.T, f devenv.File, user, symbol string) (sid, address string) {
	t.Helper()
	var session sessionAnswer
	callJSON(t, http.MethodPost, f.BaseURL+"/session/deposit", f.Operator.Key,
		`{"externalUserId":"`+user+`","lang":"en","platformFiatCurrency":"USD","userBalance":"0.00","amount":"5.00"}`, &session)
	_, sid, _ = strings.Cut(session.Data.URL, "sid=")
	var addr struct {
		Data struct {
			Address string `json:"address"`
		} `json:"data"`
	}
	if status := callJSON(t, http.MethodPost, f.BaseURL+"/depositor/address", "",
		`{"sid":"`+sid+`","currency":"`+symbol+`","chainId":1337}`, &addr); status != http.StatusOK || !common.IsHexAddress(addr.Data.Address) {
		t.Fatalf("deposit address: %d %+v", status, addr)
	}
	return sid, addr.Data.Address
}

// Bad input is a usage error (exit 2) that names the flag, before the chain is contacted: the
// dev chain of this dev.json counts the requests it gets, and gets none.
func TestDevPayRefusesBadInput(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	rpc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		http.Error(w, "no chain here", http.StatusServiceUnavailable)
	}))
	t.Cleanup(rpc.Close)
	dir := t.TempDir()
	f := devenv.File{FaucetPrivateKey: "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318",
		Chains: []devenv.FileChain{{ChainID: 1337, Name: "Coffer Dev Chain", RPCURL: rpc.URL, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []devenv.FileToken{{Symbol: "USDT", ContractAddress: "0x00000000000000000000000000000000000000A1", Decimals: 6}}}}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dev.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	const to = "0x8ba1f109551bD432803012645Ac136ddd64DBA72"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no --to", []string{"--currency", "USDT", "--amount", "1"}, "--to is required"},
		{"no --currency", []string{"--to", to, "--amount", "1"}, "--currency is required"},
		{"no --amount", []string{"--to", to, "--currency", "USDT"}, "--amount is required"},
		{"bad address", []string{"--to", "0x1234", "--currency", "USDT", "--amount", "1"}, "--to: \"0x1234\" is not an address"},
		{"bad checksum", []string{"--to", "0x8Ba1f109551bD432803012645Ac136ddd64DBA72", "--currency", "USDT", "--amount", "1"}, "--to: checksum mismatch"},
		{"zero address", []string{"--to", "0x0000000000000000000000000000000000000000", "--currency", "USDT", "--amount", "1"}, "--to: the zero address"},
		{"unknown currency", []string{"--to", to, "--currency", "DAI", "--amount", "1"}, "--currency: unknown currency \"DAI\" on chain 1337: one of ETH, USDT"},
		{"too many decimals", []string{"--to", to, "--currency", "USDT", "--amount", "1.0000001"}, "--amount: 1.0000001 has more than 6 decimals"},
		{"negative", []string{"--to", to, "--currency", "USDT", "--amount=-1"}, "--amount: \"-1\" is not a positive decimal"},
		{"zero", []string{"--to", to, "--currency", "USDT", "--amount", "0.0"}, "--amount: must be more than zero"},
		{"exponent", []string{"--to", to, "--currency", "ETH", "--amount", "1e18"}, "--amount: \"1e18\" is not a positive decimal"},
		{"unknown chain", []string{"--to", to, "--currency", "USDT", "--amount", "1", "--chain-id", "1"}, "--chain-id: the dev stack runs no chain 1 (it runs 1337)"},
		{"stray argument", []string{"--to", to, "--currency", "USDT", "--amount", "1", "now"}, "unexpected argument \"now\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := coffer(t, append([]string{"dev", "pay", "--data-dir", dir}, tc.args...)...)
			if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
				t.Errorf("coffer dev pay %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errOut, tc.want)
			}
		})
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("refused payments made %d RPC calls", n)
	}
	t.Run("valid, chain down", func(t *testing.T) {
		// The same checks pass on good input: the chain is then asked, and its failure is exit 1.
		_, errOut, code := coffer(t, "dev", "pay", "--data-dir", dir, "--to", to, "--currency", "USDT", "--amount", "1")
		if code != 1 || !strings.Contains(errOut, "is coffer dev running?") || calls.Load() == 0 {
			t.Errorf("exit %d, %d RPC calls, stderr %q", code, calls.Load(), errOut)
		}
	})
	t.Run("no dev stack", func(t *testing.T) {
		t.Parallel()
		empty := t.TempDir()
		_, errOut, code := coffer(t, "dev", "pay", "--data-dir", empty, "--to", to, "--currency", "USDT", "--amount", "1")
		if code != 1 || !strings.Contains(errOut, "start the dev stack first (make run") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

// `coffer serve`, a real process configured from its environment, has no /dev/pay: nothing
// in its configuration can give it the faucet `coffer dev` pays from.
func TestServeHasNoDevPay(t *testing.T) {
	t.Parallel()
	chains := proctest.ChainsFile(t, map[string]any{"chainId": 1337, "name": "dev", "rpcUrls": []string{"http://127.0.0.1:9"}, "confirmations": 1,
		"nativeSymbol": "ETH", "nativeDecimals": 18, "bankrollAddress": common.HexToAddress("0xb0b").Hex()})
	addr := proctest.FreeAddr(t)
	cofferProcess(t, []string{"DATABASE_URL=" + testdb.URL(t), "COFFER_MASTER_KEY=" + secret.NewMasterKey(), "COFFER_ADDR=" + addr,
		"COFFER_INTERNAL_ADDR=127.0.0.1:0", "COFFER_BASE_URL=http://" + addr, "COFFER_CHAINS_FILE=" + chains, "COFFER_AUTO_MIGRATE=true",
		"COFFER_STATIC_PRICES=ETH=3000",
		"COFFER_CHAINS_VALIDATE=off"}, "serve") // the chain is unreachable on purpose: the start-up check would refuse it
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if !proctest.WaitOK(ctx, "http://"+addr+"/readyz", 100*time.Millisecond) {
		t.Fatal("coffer serve not ready within 60 s")
	}
	res := proctest.Request(t, http.MethodPost, "http://"+addr+"/dev/pay", "",
		`{"sid":"4f1c2e3d-0000-4000-8000-000000000000","currency":"ETH","chainId":1337,"amount":"1"}`)
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /dev/pay on coffer serve: %d, want 404", res.StatusCode)
	}
}
