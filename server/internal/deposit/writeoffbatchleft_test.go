package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a batched token deposit (40 USDT) was credited, then a reorg deeper than the
// depth took its payment and its batch away (gas-tank nonce 0) and an engineer wrote it off.
// The books kept the batch mined while the gas tank's nonce 0 was unused on the chain: the next
// batch, another address's 10 USDT, was signed at nonce 1 and stayed pending for good (its
// deposit SWEEPING), and every later batch of the chain with it. With the payment mined again
// and written off a second time, its 40 USDT also stayed at the deposit address for good (a
// batched sweep was left alone). The gas tank now cancels a done batch that left the chain at
// its own nonce once its deposits are all written off, and a deposit written off again is then
// swept to the bankroll, never credited; the gas tank pays gas only.
func TestDoneBatchThatLeftTheChainIsCancelledByTheGasTank(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		back bool // the written-off payment is mined again and written off a second time
		// batchFirst: the batch's bytes are mined again before the payment, skipping its address
		batchFirst bool
	}{
		{"written off once", false, false},
		{"written off again, the payment back", true, false},
		{"written off again, the batch mined again before the payment", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			lost, pay := e.batchLeftTheChainWrittenOff()
			tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
			if c.batchFirst {
				e.mine(e.resent(firstBatch)...)
			}
			if c.back {
				e.minedAgain(pay, lost.ID)
				if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
					Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
					t.Fatal(err)
				}
				e.settleUntil(lost.ID, e.sweptAnew(lost)) // its job, queued by the write-off
			}
			next := e.laterBatchCredited()

			owed := e.deposit(next).Amount
			if c.back {
				e.sweptNotCredited(lost, "USDT", bank0, owed, "DEPOSIT,REORG") // the write-off stands
			} else if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(owed) != 0 {
				t.Errorf("the bankroll received %v USDT units, want the later deposit's %v", got, owed)
			}
			if e.available("USDT").Cmp(owed) != 0 || len(e.hooks.all()) != 2 {
				t.Errorf("%v USDT available, %d DEPOSIT events; want the later deposit's %v, two events", e.available("USDT"),
					len(e.hooks.all()), owed)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 && !c.batchFirst {
				t.Errorf("the batch that left the chain is not cancelled (%d)", n)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 0 {
				t.Errorf("%d gas top-ups on a batched chain", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// batchLeftTheChainWrittenOff has a user pay 40 USDT to a token-deposit address; once its batch
// credited it, a reorg deeper than the depth takes the payment and the batch away (the node
// drops both), and an engineer writes the deposit off. It returns the deposit as credited and
// its payment.
// laterBatchCredited pays another address 10 USDT and runs the service until a later batch
// has credited it, and the chain a little past its depth (the setup of the tests whose lost
// batch 1 that later batch waits behind). It returns the deposit's id.
func (e *env) laterBatchCredited() int64 {
	e.t.Helper()
	later, _ := e.payment(e.newUser(), 0, e.tokenAddress("eve"), "USDT", big.NewInt(10_000_000))
	e.mine(later)
	e.scan()
	next := e.findDeposit(later.Hash())
	e.run(func() bool { return e.deposit(next).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)
	return next
}

func (e *env) batchLeftTheChainWrittenOff() (domain.Deposit, *types.Transaction) {
	e.t.Helper()
	payer := e.newUser()
	parent := e.latestHeader()
	pay, _ := e.payment(payer, 0, e.tokenAddress("dora"), "USDT", big.NewInt(40_000_000))
	e.mine(pay)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	lost := e.deposit(e.findDeposit(pay.Hash()))
	e.engine.RebroadcastAfter = 0
	e.deepReorg(parent, nil, func() { e.scan(); e.settleAll() }) // the node drops the payment and the batch
	if d := e.deposit(lost.ID); d.Status != domain.DepositReorged {
		e.t.Fatalf("after the reorg the deposit is %s, want REORGED", d.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "the payment left the chain", Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	e.runBlocks(2)
	return lost, pay
}

// What was seen (rows from before migration 0036): a batched deposit (40 USDT) written off in its
// signed batch, whose bytes were then mined with a later payment's 40 USDT: the finished batch
// moved that money in its name, and it left its sweep uncredited, with no swept_uncredited row
// and no carry (deleted here: the code before 0036 wrote neither). The later deposit was swept
// with the written-off payment's money once that was mined again; written off a second time,
// the deposit was swept anew for money the address no longer held: its batch skipped it on
// every pass (up to every 10 minutes, for good), and the address's next payment (10 USDT)
// waited behind that sweep, never credited. Such a deposit now leaves its sweep before it joins a batch, REORGED
// again and never swept anew (logged at ERROR), and the next payment is credited.
func TestWrittenOffAgainWithoutASweptUncreditedRowNeverWedgesItsAddress(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	addr := e.tokenAddress("old")
	pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(again)
	e.mine(e.resent(oldestPendingBatch)...)
	e.scan()
	next := e.findDeposit(again.Hash())
	e.carriedUnscanned(lost.ID)
	// Nor did that code carry anything for a batch (the later deposit has taken nothing yet).
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM swept_uncredited WHERE deposit_id = $1`, lost.ID); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM sweep_carries WHERE kind = 'TAKEN'`); n != 0 || e.deposit(next).SweepID != 0 {
		t.Fatalf("the test needs the later deposit unswept, the old batch's carry not taken: %d taken", n)
	}
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM sweep_carries`); err != nil {
		t.Fatal(err)
	}
	e.minedAgain(pay, lost.ID)
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	later, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(10_000_000))
	e.mine(later)
	e.scan()
	last := e.findDeposit(later.Hash())
	e.settleUntil(lost.ID, func() bool { return e.deposit(last).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	if d := e.deposit(lost.ID); d.Status != domain.DepositReorged || e.fundKinds(d.ID) != "" || d.SweepID != 0 {
		t.Errorf("the written-off deposit is %s in sweep %d, fund entries %q; want REORGED, in no sweep, never credited", d.Status,
			d.SweepID, e.fundKinds(d.ID))
	}
	if got, want := e.available("USDT"), big.NewInt(50_000_000); got.Cmp(want) != 0 {
		t.Errorf("%v USDT available, want the two later deposits' %v", got, want)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 90_000_000 || e.tokenBalance(addr).Sign() != 0 {
		t.Errorf("the bankroll received %v USDT units and the address keeps %v; want all three payments' 90000000, nothing left",
			got, e.tokenBalance(addr))
	}
	if n := e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE'`); n != 0 {
		t.Errorf("%d sweeps still open", n)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
