package chain_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// devNetwork is the embedded dev chain as a chains file describes it: its tokens and feeds.
func devNetwork(dev *devchain.Chain) chain.Network {
	n := chain.Network{ChainID: dev.ChainID(), Name: "dev", RPCURLs: []string{dev.RPCURL()}, Confirmations: 1,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: common.HexToAddress("0xb0b"),
		PriceFeeds: map[string]common.Address{}}
	for _, t := range dev.Tokens() {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: t.Address, Decimals: int32(t.Decimals)})
	}
	for _, a := range dev.Aggregators() {
		n.PriceFeeds[strings.TrimSuffix(a.Pair, "/USD")] = a.Address
	}
	return n
}

// TestVerify checks a chains file against a real chain: each way it can contradict its RPC
// is refused with an error naming the field.
func TestVerify(t *testing.T) {
	t.Parallel()
	dev := testfactory.DevChain(context.Background(), t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	usdt, _ := dev.Token("USDT")
	if base := devNetwork(dev); len(base.Tokens) != 2 || base.Tokens[0].Symbol != "USDT" || len(base.PriceFeeds) != 3 {
		t.Fatalf("dev network %+v", base)
	}
	stranger := common.HexToAddress("0x00000000000000000000000000000000DeaDBeef")
	sweeper, err := dev.DeploySweeper(t.Context(), common.HexToAddress("0x7a4c"), common.HexToAddress("0xb0b"), common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := dev.DeploySweeper(t.Context(), common.HexToAddress("0x7a4c"), stranger, common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	batched := func(sweeper common.Address) func(n *chain.Network) {
		return func(n *chain.Network) { n.SweepMethod, n.SweeperAddress = chain.SweepEIP7702, sweeper }
	}
	for _, tc := range []struct {
		name   string
		change func(n *chain.Network)
		want   []string // every problem's text, each naming its field; none when it passes
	}{
		{"matches", func(*chain.Network) {}, nil},
		{"wrong chain id", func(n *chain.Network) { n.ChainID = 8453 },
			[]string{"chains file: chain 8453 rpcUrls[0] (" + dev.RPCURL() + "): eth_chainId answers 1337: the endpoint serves another chain"}},
		{"unreachable endpoint", func(n *chain.Network) { n.RPCURLs = []string{"http://127.0.0.1:1/key/secret"} },
			[]string{"chains file: chain 1337 rpcUrls[0] (http://127.0.0.1:1): eth_chainId: "}},
		{"one endpoint down: the others are checked", func(n *chain.Network) {
			n.RPCURLs = []string{"http://127.0.0.1:1", dev.RPCURL()}
			n.Tokens[1].Decimals = 7
		}, []string{"chain 1337 rpcUrls[0] (http://127.0.0.1:1): eth_chainId", "chain 1337 tokens[1] (USDC) decimals: the file says 7"}},
		{"no code", func(n *chain.Network) { n.Tokens[1].ContractAddress = stranger },
			[]string{"chains file: chain 1337 tokens[1] (USDC) contractAddress 0x00000000000000000000000000000000DeaDBeef: no code at this address"}},
		{"wrong decimals", func(n *chain.Network) { n.Tokens[0].Decimals = 18 },
			[]string{"chains file: chain 1337 tokens[0] (USDT) decimals: the file says 18, the contract's decimals() answers 6"}},
		{"dead feed", func(n *chain.Network) { n.PriceFeeds["ETH"] = usdt.Address }, // a contract, but no feed
			[]string{"chains file: chain 1337 priceFeeds.ETH " + usdt.Address.Hex() + ": latestRoundData(): execution reverted"}},
		{"feed without code", func(n *chain.Network) { n.PriceFeeds["USDC"] = stranger },
			[]string{"chains file: chain 1337 priceFeeds.USDC 0x00000000000000000000000000000000DeaDBeef: no code at this address"}},
		{"eip7702 with its Sweeper", batched(sweeper), nil},
		{"a Sweeper paying another bankroll", batched(elsewhere),
			[]string{"chains file: chain 1337 sweeperAddress " + elsewhere.Hex() + " pays bankroll " + stranger.Hex() +
				", not this chain's bankrollAddress " + common.HexToAddress("0xb0b").Hex()}},
		{"a sweeperAddress that is not a Sweeper", batched(usdt.Address),
			[]string{"chains file: chain 1337 sweeperAddress " + usdt.Address.Hex() + ": bankroll(): execution reverted"}},
		{"a Sweeper sending fees elsewhere", func(n *chain.Network) { batched(sweeper)(n); n.FeeAddress = stranger },
			[]string{"chains file: chain 1337 sweeperAddress " + sweeper.Hex() + " sends fees to 0x0000000000000000000000000000000000000000, not this chain's feeAddress " + stranger.Hex()}},
		{"a sweeperAddress without code", batched(stranger),
			[]string{"chains file: chain 1337 sweeperAddress " + stranger.Hex() + ": no code at this address"}},
		{"every problem at once", func(n *chain.Network) {
			n.Tokens[0].Decimals, n.Tokens[1].ContractAddress, n.PriceFeeds["ETH"] = 8, stranger, stranger
		}, []string{"tokens[0] (USDT) decimals", "tokens[1] (USDC) contractAddress", "priceFeeds.ETH"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := devNetwork(dev)
			tc.change(&n)
			r, err := chain.NewRegistry([]chain.Network{n})
			if err != nil {
				t.Fatal(err)
			}
			err = chain.Verify(t.Context(), r)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("a matching file is refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("verified")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, want := range tc.want {
				if !strings.Contains(lines[i], want) {
					t.Errorf("problem %d = %q\nwant it to contain %q", i, lines[i], want)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the RPC URL's path: %v", err)
			}
		})
	}
}

// Check applies COFFER_CHAINS_VALIDATE: strict refuses, warn logs and starts, off looks at
// nothing.
func TestCheckModes(t *testing.T) {
	t.Parallel()
	r, err := chain.NewRegistry([]chain.Network{{ChainID: 1, Name: "down", RPCURLs: []string{"http://127.0.0.1:1"}, Finalized: true, NativeSymbol: "ETH"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	if err := chain.Check(t.Context(), r, chain.VerifyStrict, log); err == nil || !strings.Contains(err.Error(), "chain 1 rpcUrls[0]") {
		t.Fatalf("strict: %v", err)
	}
	if err := chain.Check(t.Context(), r, chain.VerifyWarn, log); err != nil || !strings.Contains(logs.String(), "chain 1 rpcUrls[0]") {
		t.Fatalf("warn: %v\n%s", err, logs.String())
	}
	logs.Reset()
	if err := chain.Check(t.Context(), r, chain.VerifyOff, log); err != nil || logs.Len() != 0 {
		t.Fatalf("off: %v\n%s", err, logs.String())
	}
	for s, ok := range map[string]bool{"strict": true, "warn": true, "off": true, "": false, "STRICT": false, "on": false} {
		if _, err := chain.ParseVerifyMode(s); (err == nil) != ok {
			t.Errorf("ParseVerifyMode(%q): %v", s, err)
		}
	}
}
