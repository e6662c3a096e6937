package deposit_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/deposit"
)

// What was seen (two workers): a deposit written off again (40 USDT), its money back, waited in
// a batched sweep. One worker read that sweep waiting and stopped before checking it against the
// address's balance (dropUnbackedWrittenOff); meanwhile the other worker put the sweep in batch 3
// and the batch was mined, moving the 40 USDT. The first worker then read the balance short (the
// batch had moved it), took the deposit out of the signed sweep (REORGED, swept_uncredited) and
// closed the sweep as empty (DONE) under the batch in flight: batch 3 stayed in flight in the
// books for good, its transaction pending while mined on the chain. The check now locks the
// sweep and leaves it alone unless it still waits (FUNDING, in no batch): the batch is settled
// and the deposit swept, never credited.
func TestWrittenOffAgainDroppedWhileAnotherWorkerBatchedIt(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	other := deposit.New(e.deps, e.config) // another worker process on the same database
	lost, pay := e.batchLeftTheChainWrittenOff()
	e.laterBatchCredited()
	e.minedAgain(pay, lost.ID)
	bank0 := e.tokenBalance(e.bankroll)
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}

	// This worker stops before it checks the sweep against the address's balance, until the
	// other worker's batch of that sweep is mined.
	paused, release := make(chan struct{}), make(chan struct{})
	fired := false
	deposit.SetCrash(e.svc, func(step string) {
		if step == deposit.StepWrittenOffCheck && !fired {
			fired = true
			close(paused)
			<-release
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			if _, err := e.svc.Settle(e.ctx, lost.ID); err != nil {
				t.Error(err)
				return
			}
			select {
			case <-paused:
				return
			default:
			}
		}
		t.Error("this worker never checked the sweep")
	}()
	select {
	case <-paused:
	case <-time.After(time.Minute):
		t.Fatal("this worker never checked the sweep")
	}
	for range 20 {
		if _, err := other.Settle(e.ctx, lost.ID); err != nil {
			t.Fatal(err)
		}
		if e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.status = 'SENDING'`, lost.ID) == 1 {
			break
		}
	}
	e.dev.Commit() // the other worker's batch is mined
	close(release)
	<-done
	deposit.SetCrash(e.svc, nil)
	for range confirmations + 4 {
		e.dev.Commit()
		e.scan()
		if _, err := other.Settle(e.ctx, lost.ID); err != nil {
			t.Fatal(err)
		}
		e.settleAll()
	}
	if n := e.count(`SELECT count(*) FROM sweep_batches WHERE status <> 'DONE'`); n != 0 {
		t.Errorf("%d batches still in flight (the other worker's batch, mined, was left so)", n)
	}
	e.sweptNotCredited(lost, "USDT", bank0, big.NewInt(0), "DEPOSIT,REORG")
	if n := e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE'`); n != 0 {
		t.Errorf("%d sweeps still open", n)
	}
	e.nothingPending()
	e.reconciled()
}
