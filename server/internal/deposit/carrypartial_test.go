package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a later 80 USDT deposit whose batch (batch 2) asked its address only for the
// 40 USDT the carry (40 USDT, moved by a written-off deposit's batch 1) did not cover; a reorg
// deeper than the depth took both batches away (the payment stayed) and the node dropped them.
// The deposit was reorged and batch 2 sent again, but it waited behind batch 1's free gas-tank
// nonce: nothing cancelled batch 1 until another batch of the chain formed, and 80 USDT waited
// at the address, uncounted. The gas tank now cancels a decided batch below one sent again.
func TestPartlyCoveredDepositWhoseCarryLeftTheChain(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	addr := e.tokenAddress("partly")
	pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(80_000_000))
	e.mine(again)
	parent := e.latestHeader()
	e.mine(e.resent(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep-batch' AND t.state = 'pending' ORDER BY a.id LIMIT 1`)...)
	e.scan()
	next := e.findDeposit(again.Hash())
	e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 1)
	e.reconciled()
	e.engine.RebroadcastAfter = 0
	oldHead := e.forkDropping(parent)
	e.dev.Commit()
	bank0 := e.tokenBalance(e.bankroll)
	e.settledPast(oldHead)
	e.sweptAndCredited(next, addr)
	if got := e.tokenBalance(addr); got.Sign() != 0 {
		t.Errorf("the address keeps %v USDT units; the later deposit is %s (%q)", got, e.deposit(next).Status, e.fundKinds(next))
	}
	if got := e.deposit(next); got.Status != domain.DepositCredited || e.fundKinds(next) != "DEPOSIT,REORG,REINSTATE" ||
		e.depositEvents(next) != 1 || e.available("USDT").Int64() != 80_000_000 {
		t.Errorf("the later deposit is %s with fund entries %q, %d DEPOSIT events, %v USDT available; want credited back once",
			got.Status, e.fundKinds(next), e.depositEvents(next), e.available("USDT"))
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 80_000_000 {
		t.Errorf("the bankroll received %v USDT units since the fork, want the payment's 80000000 once", got)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 {
		t.Errorf("the batch that carried, off the chain, is not cancelled")
	}
	e.nothingPending()
	e.reconciled()
}
