package e2e

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/gethdev"
)

func eth(milli int64) *big.Int { return new(big.Int).Mul(big.NewInt(milli), big.NewInt(1e15)) }

// newAddress is the address of a fresh key nobody sends from.
func newAddress(t *testing.T) common.Address {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey)
}

// usdtChain is a geth --dev node (a block a second) with the test ERC20 USDT (6 decimals),
// whose supply of 1,000,000 a funded account (100 ETH) holds.
type usdtChain struct {
	node   *gethdev.Node
	holder gethdev.Account
	usdt   common.Address
}

// startGeth starts a geth --dev node (a block a second) and funds an account with eth ether.
func startGeth(t *testing.T, eth int64) (*gethdev.Node, gethdev.Account) {
	t.Helper()
	node := gethdev.Start(t, time.Second)
	a, err := node.NewAccount(context.Background(), eth)
	if err != nil {
		t.Fatal(err)
	}
	return node, a
}

func startUSDTChain(t *testing.T) usdtChain {
	t.Helper()
	node, holder := startGeth(t, 100)
	usdt, err := node.DeployToken(context.Background(), holder, "USDT", 6, big.NewInt(1_000_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	return usdtChain{node: node, holder: holder, usdt: usdt}
}

// startCoffer runs Coffer in the test process on the chain (two confirmations, a scan every
// 200 ms); bankroll receives swept deposits (none when zero).
func (c usdtChain) startCoffer(t *testing.T, bankroll common.Address) *apptest.Env {
	t.Helper()
	return apptest.Start(t, apptest.Options{ScanInterval: 200 * time.Millisecond, Chains: []chain.Network{{
		ChainID: c.node.ChainID, Name: "geth dev", RPCURLs: []string{c.node.URL}, Confirmations: 2, NativeSymbol: "ETH",
		NativeDecimals: 18, BankrollAddress: bankroll, Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: c.usdt, Decimals: 6}}}}})
}

// sendUSDT transfers units of USDT from the holder to an address.
func (c usdtChain) sendUSDT(t *testing.T, to common.Address, units int64) {
	t.Helper()
	if _, err := c.node.Transact(context.Background(), c.holder, &c.usdt, nil, contracts.NewTestToken().PackTransfer(to, big.NewInt(units))); err != nil {
		t.Fatal(err)
	}
}

// fund sends each address 10 ETH.
func (c usdtChain) fund(t *testing.T, to ...common.Address) {
	t.Helper()
	for _, a := range to {
		if err := c.node.Fund(context.Background(), a, eth(10_000)); err != nil {
			t.Fatal(err)
		}
	}
}

// usdtOf is an address's USDT balance in units.
func (c usdtChain) usdtOf(t *testing.T, owner common.Address) *big.Int {
	t.Helper()
	b, err := c.node.TokenBalance(context.Background(), c.usdt, owner)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
