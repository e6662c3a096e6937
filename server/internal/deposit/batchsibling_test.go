package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: one batch (gas-tank nonce 0) swept two addresses: carol's 10 USDT, paid before
// the fork, and dora's 40 USDT, paid after it. A reorg deeper than the depth took dora's payment
// and the batch away (the node dropped both). Carol's deposit stayed CREDITED while its 10 USDT
// were back at its address: the books short 10 USDT (markReorged reorged only the other deposits
// of the reorged deposit's own sweep, not the batch's other sweeps). Once dora's payment came to
// be paid again (a new 40 USDT payment to dora), the scanner sent the old batch again for
// carol's incident and it swept that new payment's 40 USDT in the written-off deposit's name:
// the new deposit was never credited. With dora's deposit written off, the batch was never
// cancelled (carol's deposit counted as undecided) and the next batch, eve's 5 USDT, waited
// behind nonce 0 for good. Now the batch's other sweeps' deposits are reorged with it (noted
// back at once: their transfers stay), the batch is never sent again while any deposit it moves
// is off the chain or written off, and the gas tank cancels it once one is written off and the
// others wait for it: carol's deposit is swept anew and credited back, the new payment is
// credited, the books reconciled at every step.
func TestBatchThatLeftTheChainWithAnotherAddressesDeposit(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	kept, _ := e.payment(e.newUser(), 0, e.tokenAddress("carol"), "USDT", big.NewInt(10_000_000))
	e.mine(kept)
	parent := e.latestHeader()
	pay, _ := e.payment(e.newUser(), 0, e.tokenAddress("dora"), "USDT", big.NewInt(40_000_000))
	e.mine(pay)
	for range confirmations + 1 { // both confirmed before either is swept: one batch
		e.dev.Commit()
		e.scan()
	}
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	k, lost := e.deposit(e.findDeposit(kept.Hash())), e.deposit(e.findDeposit(pay.Hash()))
	if n := e.count(`SELECT count(DISTINCT batch_id) FROM sweeps WHERE id IN ($1, $2)`, k.SweepID, lost.SweepID); n != 1 ||
		k.SweepID == lost.SweepID {
		t.Fatalf("the test needs both sweeps in one batch (%d batches)", n)
	}

	e.engine.RebroadcastAfter = 0
	oldHead := e.latestHeader().Number.Uint64()
	e.dev.Rollback()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Rollback() // the payment and the batch the fork put back in the pool
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	again, _ := e.payment(e.newUser(), 0, e.tokenAddress("dora"), "USDT", big.NewInt(40_000_000))
	e.mine(again)
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	if d := e.deposit(k.ID); d.Status == domain.DepositCredited && e.tokenBalance(e.tokenAddress("carol")).Sign() > 0 {
		t.Errorf("carol's deposit is CREDITED while its batch left the chain, its money back at its address")
	}
	e.reconciled()
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "the payment left the chain", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.runBlocks(2)
	e.reconciled()
	later, _ := e.payment(e.newUser(), 0, e.tokenAddress("eve"), "USDT", big.NewInt(5_000_000))
	e.mine(later)
	e.scan()
	next, paidAgain := e.findDeposit(later.Hash()), e.findDeposit(again.Hash())
	e.run(func() bool {
		return e.deposit(next).Status == domain.DepositCredited && e.deposit(paidAgain).Status == domain.DepositCredited &&
			e.deposit(k.ID).Status == domain.DepositCredited
	})
	e.runBlocks(confirmations + 2)

	if e.fundKinds(k.ID) != "DEPOSIT,REORG,REINSTATE" || e.depositEvents(k.ID) != 1 || e.fundKinds(lost.ID) != "DEPOSIT,REORG" {
		t.Errorf("carol's fund entries %q, %d DEPOSIT events; dora's written-off %q; want credited back once, and the write-off",
			e.fundKinds(k.ID), e.depositEvents(k.ID), e.fundKinds(lost.ID))
	}
	if got, want := e.available("USDT"), big.NewInt(55_000_000); got.Cmp(want) != 0 {
		t.Errorf("%v USDT available, want carol's, the new payment's and eve's %v", got, want)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 55_000_000 {
		t.Errorf("the bankroll received %v USDT units since the fork, want the three deposits' 55000000", got)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 {
		t.Errorf("the batch that left the chain is not cancelled (%d)", n)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
