package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chain/catalogue"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/chains-init.golden")

const (
	testBankroll   = "0x8ba1f109551bD432803012645Ac136ddd64DBA72"
	testBankroll97 = "0x00000000000000000000000000000000000B0b97"
)

// `coffer chains init` with every preset writes the whole catalogue as a chains file
// (testdata/chains-init.golden, the file a reviewer reads the addresses in), which LoadFile
// accepts: --rpc replaces a preset's public endpoint, --bankroll CHAIN_ID= overrides the bare
// one.
func TestChainsInitGolden(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chains.json")
	out, errOut, code := coffer(t, "chains", "init", "--preset", strings.Join(catalogue.Names()[:6], ","), "--preset", strings.Join(catalogue.Names()[6:], ","),
		"--rpc", "8453=https://base.example/v2/KEY", "--rpc", "8453=wss://base-2.example", "--bankroll", testBankroll, "--bankroll", "97="+testBankroll97,
		"--out", path)
	if code != 0 {
		t.Fatalf("init: %d %s", code, errOut)
	}
	if !strings.Contains(out, "wrote "+path) || !strings.Contains(out, "note: chain 1 (ethereum) uses the public endpoint https://ethereum-rpc.publicnode.com") ||
		strings.Contains(out, "chain 8453 (base) uses") || !strings.Contains(out, "coffer chains validate --file "+path) {
		t.Fatalf("init said:\n%s", out)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v: the file may hold API keys", fi.Mode().Perm())
	}
	golden := filepath.Join("testdata", "chains-init.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("chains init wrote\n%s\nwant (go test -run TestChainsInitGolden -update)\n%s", got, want)
	}
	r, err := chain.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := r.Network(8453)
	bsc, _ := r.Network(56)
	bscTest, _ := r.Network(97)
	if len(r.Networks()) != 12 || len(base.RPCURLs) != 2 || base.BankrollAddress != common.HexToAddress(testBankroll) ||
		bscTest.BankrollAddress != common.HexToAddress(testBankroll97) || bsc.Tokens[0].Decimals != 18 || !bsc.Finalized {
		t.Fatalf("loaded %+v", r.Networks())
	}
	// Standard output, by default: the same file.
	stdout, errOut, code := coffer(t, "chains", "init", "--preset", "base", "--rpc", "8453=https://base.example/v2/KEY", "--bankroll", testBankroll)
	if code != 0 || !strings.Contains(stdout, `"contractAddress": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"`) {
		t.Fatalf("stdout: %d %s %s", code, stdout, errOut)
	}
	// An existing file is kept.
	if _, errOut, code := coffer(t, "chains", "init", "--preset", "base", "--bankroll", testBankroll, "--out", path); code != 2 || !strings.Contains(errOut, "exists (--force overwrites it)") {
		t.Fatalf("overwrite: %d %s", code, errOut)
	}
}

// Bad flags are usage errors naming what is wrong, and write nothing.
func TestChainsInitUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "base,solana", "--bankroll", testBankroll}, `unknown preset "solana" (known: ethereum, base, arbitrum, optimism, polygon, bsc, sepolia,`},
		{[]string{"--bankroll", testBankroll}, "no preset named (known: ethereum,"},
		{[]string{"--preset", "base,optimism", "--bankroll", "10=" + testBankroll}, "no bankroll for chain 8453 (base): pass --bankroll 0x… (every chain) or --bankroll 8453=0x…"},
		{[]string{"--preset", "base", "--bankroll", "0x8ba1f109551bD432803012645Ac136ddd64DBa72"}, "the EIP-55 checksum does not match (a typo?); it would be " + testBankroll},
		{[]string{"--preset", "base", "--bankroll", "0x0000000000000000000000000000000000000000"}, "the zero address cannot be a bankroll"},
		{[]string{"--preset", "base", "--bankroll", "0x1234"}, `"0x1234" is not an address`},
		{[]string{"--preset", "base", "--bankroll", testBankroll, "--rpc", "1=https://eth.example"}, "--rpc 1=…: chain 1 is not among the presets (base=8453)"},
		{[]string{"--preset", "base", "--bankroll", testBankroll, "--rpc", "https://eth.example"}, "want CHAIN_ID=VALUE"},
		{[]string{"--preset", "base", "--bankroll", testBankroll, "--rpc", "8453=ftp://x"}, `RPC URL "ftp://x" must be an http(s) or ws(s) URL`},
		{[]string{"--preset", "base,8453", "--bankroll", testBankroll}, "preset base named twice"},
	} {
		out, errOut, code := coffer(t, append([]string{"chains", "init"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("chains init %v: %d %q %q, want %q", tc.args, code, out, errOut, tc.want)
		}
	}
	if _, errOut, code := coffer(t, "chains", "frobnicate"); code != 2 || !strings.Contains(errOut, "coffer chains init --preset") {
		t.Errorf("unknown subcommand: %d %s", code, errOut)
	}
	out, _, code := coffer(t, "chains", "list")
	if code != 0 || !strings.Contains(out, "bsc               56        BNB Smart Chain          mainnet              finalized block  USDT(18) USDC(18)") {
		t.Errorf("list: %d\n%s", code, out)
	}
}

// `coffer chains validate` and `coffer serve` check a chains file against its chain: a
// file that matches passes; one whose decimals disagree is refused naming the field, and
// serve stops before it touches the database.
func TestChainsValidate(t *testing.T) {
	dev := testfactory.DevChain(context.Background(), t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	usdt, _ := dev.Token("USDT")
	file := func(decimals int) string {
		return devChainsFile(t, dev, testBankroll, map[string]any{
			"tokens": []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Address.Hex(), "decimals": decimals}}})
	}
	good, bad := file(6), file(18)
	out, errOut, code := coffer(t, "chains", "validate", "--file", good)
	if code != 0 || !strings.Contains(out, "chain 1337 (dev): 1 RPC endpoint(s), 1 token(s), 0 price feed(s): ok") {
		t.Fatalf("validate: %d %s %s", code, out, errOut)
	}
	// An eip7702 chain's Sweeper is checked against the bankroll.
	sweeper, err := dev.DeploySweeper(t.Context(), common.HexToAddress("0x7a4c"), common.HexToAddress(testBankroll), common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	batched := devChainsFile(t, dev, testBankroll, map[string]any{"sweepMethod": "eip7702", "sweeperAddress": sweeper.Hex()})
	if out, errOut, code := coffer(t, "chains", "validate", "--file", batched); code != 0 ||
		!strings.Contains(out, "chain 1337 (dev): sweeperAddress "+sweeper.Hex()+" pays the bankroll: ok") {
		t.Fatalf("validate an eip7702 chain: %d %s %s", code, out, errOut)
	}
	wantField := "chains file: chain 1337 tokens[0] (USDT) decimals: the file says 18, the contract's decimals() answers 6"
	if _, errOut, code := coffer(t, "chains", "validate", "--file", bad); code != 1 || !strings.Contains(errOut, wantField) {
		t.Fatalf("validate a bad file: %d %s", code, errOut)
	}
	// serve checks before it connects to PostgreSQL (nothing listens at this URL).
	t.Setenv("DATABASE_URL", "postgres://coffer@127.0.0.1:1/none")
	t.Setenv("COFFER_MASTER_KEY", secret.NewMasterKey())
	t.Setenv("COFFER_CHAINS_FILE", bad)
	_, errOut, code = coffer(t, "serve")
	if code != 1 || !strings.Contains(errOut, wantField) || !strings.Contains(errOut, "COFFER_CHAINS_VALIDATE=warn") {
		t.Fatalf("serve with a bad chains file: %d %s", code, errOut)
	}
	t.Setenv("COFFER_CHAINS_VALIDATE", "sometimes")
	if _, errOut, code = coffer(t, "serve"); code != 1 || !strings.Contains(errOut, `COFFER_CHAINS_VALIDATE: "sometimes" is not strict, warn or off`) {
		t.Fatalf("serve with a bad mode: %d %s", code, errOut)
	}
}
