package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen (a third review of batch carries): a 40 USDT deposit written off
// in its signed batch; a later 40 USDT payment, and the old batch's bytes mined with it (carry
// 40); the later deposit covered by the carry, credited with no batch. A reorg deeper than the
// depth then took the later payment and the old batch away; the payment was mined again on the
// new branch, the old batch was not (its gas-tank nonce unused). readyToReinstate found the
// covered sweep with no transaction to wait for and resolved the deposit REINCLUDED (fund
// entries DEPOSIT,REORG,REINSTATE): reconciliation USDT holdings 0, owed 40 (short 40), for
// good, and the payment's 40 USDT at the address for good (the deposit's sweep is done). The
// carry it was credited from stands for a batch no longer on the chain. A covered sweep now
// never pays while no sweep that carried to its address is on the chain (coveredNeverPays):
// the deposit is swept anew and credited back once.
func TestCoveredDepositReincludedWithoutItsCarryingBatch(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	addr := e.tokenAddress("covered")
	pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	payer := e.newUser()
	parent := e.latestHeader()
	again, _ := e.payment(payer, 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(again)
	e.mineMoving(oldestPendingBatch)
	next := e.laterCredited(lost.ID, again)
	if e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batch_id IS NULL`, next) != 1 {
		t.Fatal("the test needs the later deposit covered by the carry")
	}
	e.reconciled()
	e.deepReorg(parent, nil, e.scan)
	e.resent("", again)
	e.mine(again)
	e.run(func() bool {
		e.reconciled()
		return e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NOT NULL`, next) == 1
	})
	e.run(func() bool {
		e.reconciled()
		return e.deposit(next).Status == domain.DepositCredited && e.tokenBalance(addr).Sign() == 0
	})
	e.runBlocks(confirmations + 2)
	e.reconciled()
	if d := e.deposit(next); d.Status != domain.DepositCredited || e.tokenBalance(addr).Sign() != 0 || e.depositEvents(next) != 1 {
		t.Errorf("the later deposit is %s with %v USDT at its address and %d DEPOSIT events; want credited back once, "+
			"its money swept", d.Status, e.tokenBalance(addr), e.depositEvents(next))
	}
	if got := e.available("USDT"); got.Int64() != 40_000_000 {
		t.Errorf("%v USDT available, want the later deposit's 40 once", got)
	}
}
