package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a credited batched deposit (40 USDT) left the chain with its batch (gas-tank
// nonce 0) and was written off; the next batch, another address's 10 USDT, had the gas tank
// cancel the old batch at nonce 0 (cancelLeftBatch) and was mined. When the written-off payment
// was mined again, its money back at the deposit address, REINSTATE was refused SWEEP_NOT_MINED
// for good, even once the cancel had the depth ("REINSTATE once the cancel has the confirmation
// depth"): the batch's cancel is never retired, and only a retired cancel counted as a sweep
// that can never pay. Now REINSTATE puts it back SWEEPING, out of the dead batch, and a new
// batch moves its money and credits it back, as for an address's own sweep.
func TestReinstateAfterItsBatchWasCancelledSweepsItAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		// batchFirst: the batch's bytes are mined again before the payment, skipping its address
		batchFirst bool
	}{
		{"the batch cancelled by the gas tank", false},
		{"the batch mined again before the payment", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			reinstatedAfterItsBatch(t, c.batchFirst)
		})
	}
}

func reinstatedAfterItsBatch(t *testing.T, batchFirst bool) {
	t.Helper()
	e := setupBatched(t, 0)
	lost, pay := e.batchLeftTheChainWrittenOff()
	if batchFirst {
		e.mine(e.resent(firstBatch)...)
	}
	next := e.laterBatchCredited()
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 && !batchFirst {
		t.Fatalf("the batch that left the chain is not cancelled (%d)", n)
	}
	e.minedAgain(pay, lost.ID)
	e.runBlocks(confirmations + 2)
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)

	got, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
		Note: "the payment came back", Actor: "service-team:cli:eve"})
	if err != nil {
		t.Fatalf("REINSTATE once its batch can never pay (cancelled, or mined skipping the address, at depth): %v", err)
	}
	if got.Deposit.Status != domain.DepositSweeping || got.Deposit.SweepID != 0 {
		t.Fatalf("reinstated: %s in sweep %d; want SWEEPING in no sweep", got.Deposit.Status, got.Deposit.SweepID)
	}
	e.reconciled()
	e.run(func() bool { return e.deposit(lost.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	d := e.deposit(lost.ID)
	if d.SweepID == lost.SweepID || e.fundKinds(d.ID) != "DEPOSIT,REORG,REINSTATE" || e.depositEvents(d.ID) != 1 {
		t.Errorf("credited back: sweep %d (the cancelled batch's was %d), fund entries %q, %d DEPOSIT events; want a new "+
			"sweep, one DEPOSIT", d.SweepID, lost.SweepID, e.fundKinds(d.ID), e.depositEvents(d.ID))
	}
	want := new(big.Int).Add(e.deposit(next).Amount, lost.Amount)
	if e.available("USDT").Cmp(want) != 0 {
		t.Errorf("%v USDT available, want %v (both deposits once)", e.available("USDT"), want)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(lost.GrossAmount) != 0 {
		t.Errorf("the bankroll received %v USDT units from the new batch, want the deposit's %v", got, lost.GrossAmount)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
