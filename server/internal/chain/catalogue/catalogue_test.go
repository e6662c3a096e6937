package catalogue

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
)

// checksummed reports whether s is an address written exactly in its EIP-55 form: a typo in
// a mixed-case address breaks its checksum.
func checksummed(s string) bool {
	return common.IsHexAddress(s) && strings.HasPrefix(s, "0x") && common.HexToAddress(s).Hex() == s
}

func TestPresetsAreConsistent(t *testing.T) {
	t.Parallel()
	all := All()
	byName := map[string]Preset{}
	chainIDs := map[int64]string{}
	// An address belongs to one role of one chain; the same address on two chains is only
	// allowed for contracts that say so (see presets.yaml).
	addresses := map[string]string{}
	sharedOK := map[string]bool{"0xd30e2101a97dcbAeBCBC04F14C3f624E67A35165": true}
	for _, p := range all {
		if p.Name == "" || p.Name != strings.ToLower(p.Name) || p.Title == "" {
			t.Errorf("preset %+v: name must be lower case, title set", p)
		}
		if _, dup := byName[p.Name]; dup {
			t.Errorf("preset name %s twice", p.Name)
		}
		byName[p.Name] = p
		if other, dup := chainIDs[p.ChainID]; dup {
			t.Errorf("chain id %d in %s and %s", p.ChainID, other, p.Name)
		}
		chainIDs[p.ChainID] = p.Name
		if u, err := url.Parse(p.RPC); err != nil || u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: RPC %q is not an https URL", p.Name, p.RPC)
		}
		if !p.Finalized && p.Confirmations <= 0 {
			t.Errorf("%s: neither finalized nor a confirmation count", p.Name)
		}
		if p.NativeDecimals != 18 {
			t.Errorf("%s: native decimals %d", p.Name, p.NativeDecimals)
		}
		// The native asset has a feed: without one, native deposits have no USD value.
		if _, ok := p.Feeds[p.NativeSymbol]; !ok {
			t.Errorf("%s: no price feed for the native asset %s", p.Name, p.NativeSymbol)
		}
		symbols := map[string]bool{p.NativeSymbol: true}
		claim := func(role, addr string) {
			if !checksummed(addr) {
				t.Errorf("%s %s: %q is not an EIP-55 checksummed address (want %s)", p.Name, role, addr, common.HexToAddress(addr).Hex())
			}
			if other, dup := addresses[addr]; dup && !sharedOK[addr] {
				t.Errorf("%s %s: %s is also %s", p.Name, role, addr, other)
			}
			addresses[addr] = p.Name + " " + role
		}
		for _, tok := range p.Tokens {
			if symbols[tok.Symbol] {
				t.Errorf("%s: symbol %s twice", p.Name, tok.Symbol)
			}
			symbols[tok.Symbol] = true
			if tok.Symbol != "USDT" && tok.Symbol != "USDC" {
				t.Errorf("%s: unexpected token %s", p.Name, tok.Symbol)
			}
			// Binance-Peg stablecoins have 18 decimals; everywhere else Circle's and
			// Tether's have 6.
			want := int32(6)
			if p.ChainID == 56 {
				want = 18
			}
			if tok.Decimals != want {
				t.Errorf("%s %s: decimals %d, want %d", p.Name, tok.Symbol, tok.Decimals, want)
			}
			claim(tok.Symbol, tok.Address)
		}
		for symbol, feed := range p.Feeds {
			if !symbols[symbol] {
				t.Errorf("%s: feed for %s, which the preset does not list", p.Name, symbol)
			}
			claim(symbol+" feed", feed)
		}
	}
	for _, p := range all {
		if !p.Testnet() {
			continue
		}
		main, ok := byName[p.Mainnet]
		if !ok || main.Testnet() {
			t.Errorf("testnet %s: mainnet %q is not a mainnet preset", p.Name, p.Mainnet)
			continue
		}
		if p.NativeSymbol != main.NativeSymbol || !strings.HasPrefix(p.Name, main.Name+"-") && p.Name != "sepolia" {
			t.Errorf("testnet %s does not match its mainnet %s", p.Name, main.Name)
		}
	}
	var mainnets, testnets int
	for _, p := range all {
		if p.Testnet() {
			testnets++
		} else {
			mainnets++
		}
	}
	if mainnets != 6 || testnets != 6 {
		t.Errorf("%d mainnets and %d testnets, want 6 and 6", mainnets, testnets)
	}
}

// The catalogue builds networks a chains file accepts.
func TestPresetNetworksRegister(t *testing.T) {
	t.Parallel()
	bankroll := common.HexToAddress("0x00000000000000000000000000000000000B0b01")
	var networks []chain.Network
	for _, p := range All() {
		networks = append(networks, p.Network(nil, bankroll))
	}
	r, err := chain.NewRegistry(networks)
	if err != nil {
		t.Fatal(err)
	}
	bsc, _ := r.Network(56)
	if a, ok := bsc.Asset("usdt"); !ok || a.Decimals != 18 || a.Contract != common.HexToAddress("0x55d398326f99059fF775485246999027B3197955") {
		t.Fatalf("BSC USDT %+v", a)
	}
	base, _ := r.Network(8453)
	if len(base.RPCURLs) != 1 || base.RPCURLs[0] != "https://mainnet.base.org" || base.BankrollAddress != bankroll || !base.Finalized {
		t.Fatalf("base %+v", base)
	}
	custom := byNameT(t, "base").Network([]string{"https://a.example", "https://b.example"}, bankroll)
	if len(custom.RPCURLs) != 2 {
		t.Fatalf("rpc override %v", custom.RPCURLs)
	}
}

func byNameT(t *testing.T, name string) Preset {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSelect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list string
		want []int64
		err  string
	}{
		{"ethereum,base", []int64{1, 8453}, ""},
		{" Base , 42161 ", []int64{8453, 42161}, ""},
		{"bsc-testnet", []int64{97}, ""},
		{"base,solana", nil, `unknown preset "solana" (known: ethereum, base,`},
		{"base,8453", nil, "preset base named twice"},
		{"", nil, "no preset named"},
	} {
		got, err := Select(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Select(%q) = %v, want %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Select(%q): %v", tc.list, err)
			continue
		}
		var ids []int64
		for _, p := range got {
			ids = append(ids, p.ChainID)
		}
		if len(ids) != len(tc.want) || ids[0] != tc.want[0] || ids[len(ids)-1] != tc.want[len(tc.want)-1] {
			t.Errorf("Select(%q) = %v, want %v", tc.list, ids, tc.want)
		}
	}
	_, err := Lookup("nope")
	if _, ok := errors.AsType[*UnknownError](err); !ok {
		t.Fatalf("Lookup error %T", err)
	}
}

// The checksum check catches a one-letter slip.
func TestChecksummed(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0xdAC17F958D2ee523a2206206994597C13D831ec7": true,
		"0xdAc17F958D2ee523a2206206994597C13D831ec7": false, // one letter's case
		"0xdac17f958d2ee523a2206206994597c13d831ec7": false, // no checksum at all
		"0xdAC17F958D2ee523a2206206994597C13D831ec":  false,
	} {
		if checksummed(s) != want {
			t.Errorf("checksummed(%s) = %v", s, !want)
		}
	}
}

// presets.yaml is read strictly: a misspelt key or a value of the wrong type is an error,
// not a preset with a field left at zero.
func TestParsePresetsStrict(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ data, err string }{
		"misspelt key":  {"mainnets:\n  - name: x\n    chainID: 1\n", "field chainID not found"},
		"wrong type":    {"mainnets:\n  - name: x\n    chainId: one\n", "cannot unmarshal"},
		"unknown group": {"devnets: []\n", "field devnets not found"},
	} {
		if _, err := parsePresets([]byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", name, err, tc.err)
		}
	}
	got, err := parsePresets([]byte("testnets:\n  - {name: b, mainnet: a}\nmainnets:\n  - {name: a}\n"))
	if err != nil || len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("mainnets first: %+v %v", got, err)
	}
}

// All hands out its own copy: a caller that changes a preset changes nothing for the next.
func TestAllIsACopy(t *testing.T) {
	t.Parallel()
	first := All()
	first[0].Tokens[0].Address = "0x0"
	first[0].Feeds["ETH"] = "0x0"
	again := All()
	if again[0].Tokens[0].Address == "0x0" || again[0].Feeds["ETH"] == "0x0" {
		t.Fatalf("All shares its presets: %+v", again[0])
	}
}
