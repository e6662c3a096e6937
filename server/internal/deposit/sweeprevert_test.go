package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// A token sweep whose transaction reverts: its gas limit was estimated while the bankroll held
// the token, and the bankroll was emptied (the service team moved its liquidity) before the
// sweep was mined, so crediting the bankroll's balance cost more gas than the estimate's
// margin. The tokens are still at the deposit address: the deposit must still end CREDITED,
// once, with the bankroll holding what it credits.
func TestRevertedTokenSweepIsSweptAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	bankrollKey, bankroll := e.keys.DevBankroll()
	testfactory.Fund(e.ctx, t, e.dev, bankroll, 1, 1) // 1 ETH and 1 USDT
	addr, _, _, u := e.sweepStart()
	e.mine(e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 5_000_000), 2))
	for e.count(`SELECT count(*) FROM sweeps WHERE status = 'SENDING'`) == 0 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	// The bankroll's USDT leaves ahead of the sweep, in the block that mines it.
	held := e.tokenBalance(bankroll)
	tip := big.NewInt(50e9)
	empty := types.MustSignNewTx(bankrollKey, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(e.dev.ChainID()), Nonce: 0, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, big.NewInt(100e9)),
		Gas: 100_000, To: &e.usdt.Address, Data: erc20Transfer(common.HexToAddress("0x00000000000000000000000000000000000000e1"), held.Int64())})
	if err := e.client.Send(e.ctx, empty); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	eth0 := e.balance(bankroll) // after paying the gas of emptying itself
	if got := e.tokenBalance(bankroll); got.Sign() != 0 {
		t.Fatalf("the bankroll still holds %v USDT units", got)
	}
	e.run(func() bool {
		return e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state IN ('reverted', 'failed')`) == 1
	})
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	e.checkCredited(e.all(), eth0, new(big.Int))
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'mined'`); n != 1 {
		t.Fatalf("%d mined sweep transfers, want the one sent again", n)
	}
	// Settling again, at any depth, sends and credits nothing more.
	e.runBlocks(confirmations + 2)
	if n := len(e.hooks.all()); n != 1 || e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep'`) != 2 {
		t.Fatalf("%d DEPOSIT events, %d sweep transfers", n, e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep'`))
	}
	if f := e.funds("USDT"); f.Available.Int64() != 5_000_000 {
		t.Fatalf("USDT funds %v, want the 5 USDT deposit once", f.Available)
	}
	e.reconciled()
}
