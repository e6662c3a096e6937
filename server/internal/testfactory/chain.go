package testfactory

import (
	"context"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
)

// DevChain starts an embedded dev chain; it is closed when the test ends.
func DevChain(ctx context.Context, tb testing.TB, opts devchain.Options) *devchain.Chain {
	tb.Helper()
	dev, err := devchain.Start(ctx, opts)
	if err != nil {
		tb.Fatalf("testfactory: dev chain: %v", err)
	}
	tb.Cleanup(func() { dev.Close() })
	return dev
}

// DevNetwork is the embedded dev chain as `coffer dev` lists it: its tokens, confirmations
// deep, and a made-up bankroll address.
func DevNetwork(dev *devchain.Chain, confirmations int32) chain.Network {
	n := chain.Network{ChainID: dev.ChainID(), Name: "Coffer Dev Chain", RPCURLs: []string{dev.RPCURL()}, Confirmations: confirmations,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: common.HexToAddress("0x00000000000000000000000000000000000bea11")}
	for _, t := range dev.Tokens() {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: t.Address, Decimals: int32(t.Decimals)})
	}
	return n
}

// Ether is n ether in wei.
func Ether(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18)) }

// Fund pays addr ether (whole ether) and mints it usdt (token units; none when zero) on the
// dev chain, and mines both.
func Fund(ctx context.Context, tb testing.TB, dev *devchain.Chain, addr common.Address, ether, usdt int64) {
	tb.Helper()
	fund, err := dev.SendNative(ctx, addr, Ether(ether))
	if err != nil {
		tb.Fatalf("testfactory: fund: %v", err)
	}
	txs := []common.Hash{fund}
	if usdt != 0 {
		mint, err := dev.Mint(ctx, "USDT", addr, big.NewInt(usdt))
		if err != nil {
			tb.Fatalf("testfactory: mint: %v", err)
		}
		txs = append(txs, mint)
	}
	if _, err := dev.Mine(ctx, txs...); err != nil {
		tb.Fatalf("testfactory: mine: %v", err)
	}
}

// Dial registers the network and dials it; the client is closed when the test ends.
func Dial(tb testing.TB, n chain.Network) (*chain.Registry, *chain.Client) {
	tb.Helper()
	registry, err := chain.NewRegistry([]chain.Network{n})
	if err != nil {
		tb.Fatalf("testfactory: network: %v", err)
	}
	client := chain.Dial(n, nil)
	tb.Cleanup(client.Close)
	return registry, client
}

// TokenBalance is owner's balance of the ERC-20 token at the latest block.
func TokenBalance(ctx context.Context, tb testing.TB, client *chain.Client, token, owner common.Address) *big.Int {
	tb.Helper()
	bal, err := client.TokenBalance(ctx, token, owner)
	if err != nil {
		tb.Fatalf("testfactory: token balance: %v", err)
	}
	return bal
}
