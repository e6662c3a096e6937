package deposit

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Transaction purposes of the deposit pipeline (chain_txs.purpose).
const (
	PurposeSweep    = "sweep"     // deposit address → bankroll, the net amount
	PurposeSweepFee = "sweep-fee" // deposit address → fee address, the operator's deposit fee
	PurposeGas      = "gas"       // gas tank → deposit address, gas for a sweep
)

// nativeTransferGas is the gas of a plain value transfer.
const nativeTransferGas = 21000

// SettleArgs settles one deposit: gas for its sweep while it confirms, then the sweep, then the
// credit with its DEPOSIT webhook.
type SettleArgs struct {
	DepositID int64 `json:"depositId"`
}

// Kind implements river.JobArgs.
func (SettleArgs) Kind() string { return "deposit.settle" }

// InsertOpts keeps one settle job per deposit alive.
func (SettleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: jobs.OnePerArgs()}
}

// SettleWorker works SettleArgs.
type SettleWorker struct {
	river.WorkerDefaults[SettleArgs]

	Service *Service
}

// Work advances the deposit as far as it can; it snoozes while waiting for the chain (snoozes
// do not count as attempts).
func (w *SettleWorker) Work(ctx context.Context, job *river.Job[SettleArgs]) error {
	for range 2 {
		done, err := w.Service.Settle(ctx, job.Args.DepositID)
		if err != nil {
			return err
		}
		if !done {
			return river.JobSnooze(w.Service.cfg.SettlePoll)
		}
		if again, err := w.Service.endSettleJob(ctx, job); err != nil || !again {
			return err
		}
	}
	return river.JobSnooze(w.Service.cfg.SettlePoll)
}

// endSettleJob completes the job of a deposit that is done for now. A confirming deposit is
// done until the scanner confirms it and queues its job again; but that insert is skipped
// while this job still runs. So the job completes in a transaction holding the deposit's row,
// which the confirmation updates: either the confirmation comes after the job ended (and
// queues a new one), or it came first and again is true (sweep now, in this job).
func (s *Service) endSettleJob(ctx context.Context, job *river.Job[SettleArgs]) (again bool, err error) {
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		status, err := store.New(tx).LockDepositStatus(ctx, job.Args.DepositID)
		if err != nil {
			return err
		}
		if status == domain.DepositSweeping {
			again = true
			return nil
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	return again, err
}

// Settle moves a deposit as far as it can now; done is true when nothing is left to do for it
// now: credited, orphaned, parked below the minimum, or confirming with its sweep's gas ready.
func (s *Service) Settle(ctx context.Context, id int64) (done bool, err error) {
	d, err := store.New(s.pool).GetDeposit(ctx, id)
	if err != nil {
		return false, err
	}
	n, c, err := s.chains.Lookup(d.ChainID)
	if err != nil {
		return false, err
	}
	switch d.Status {
	case domain.DepositConfirming:
		// A token sweep needs gas at the deposit address: send it while confirmations accrue,
		// so the sweep can go out as soon as the deposit is confirmed. Then there is nothing to
		// do until the scanner confirms the deposit, which queues this job again.
		if d.ContractAddress == "" {
			return true, nil
		}
		return s.prefund(ctx, n, c, d)
	case domain.DepositSweeping, domain.DepositBelowMinimum:
		// A parked deposit's job is queued again when its address may hold enough now
		// (recheckParked): the sweep step takes it, or leaves it parked.
		if err := s.sweepStep(ctx, n, c, d.Address); errors.Is(err, errWaitingForRate) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if d, err = store.New(s.pool).GetDeposit(ctx, id); err != nil {
			return false, err
		}
		return d.Status != domain.DepositSweeping, nil
	case domain.DepositReorged:
		return s.settleReorged(ctx, n, c, d)
	case domain.DepositCredited, domain.DepositOrphaned, domain.DepositUnsweepable:
		return true, nil
	default:
		return true, nil
	}
}

// settleReorged advances the sweep of a reorged deposit once its reorg is resolved: a
// written-off deposit's sweep can never pay and is retired, or its batch cancelled and the
// deposit taken out of it (retire.go), which no other deposit's job may be left to do. done is
// true when nothing is left to do for it: its sweep done (or left), or its reorg still open (a
// resolution queues the job again).
func (s *Service) settleReorged(ctx context.Context, n chain.Network, c *chain.Client, d domain.Deposit) (done bool, err error) {
	if d.SweepID == 0 {
		return true, nil
	}
	q := store.New(s.pool)
	sw, err := q.LockSweep(ctx, d.SweepID) // a read
	if err != nil {
		return false, err
	}
	// Credited from a carry: the batch or transfer that carried, off the chain, is cancelled
	// first (coveredSources): until then its bytes may move the address's money again.
	if waiting, err := s.coveredWaiting(ctx, c, d, true); err != nil || waiting {
		return false, err
	}
	if sw.Status == domain.SweepDone {
		return s.settleWrittenOffAgain(ctx, n, c, sw, d)
	}
	if held, err := q.SweepHeldByReorg(ctx, sw.ID); err != nil || held {
		return err == nil, err
	}
	if err := s.sweepStep(ctx, n, c, d.Address); errors.Is(err, errWaitingForRate) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if d, err = q.GetDeposit(ctx, d.ID); err != nil || d.SweepID == 0 {
		return err == nil, err
	}
	sw, err = q.LockSweep(ctx, d.SweepID)
	return err == nil && sw.Status == domain.SweepDone, err
}

// settleWrittenOffAgain advances a deposit written off again, its transfer back on the chain
// (its money at the address), in a done sweep that left the chain: that sweep is cancelled at
// its nonce (cancelLeftChain) and, once the cancel is retired, the deposit is swept anew,
// crediting nothing (sweepWrittenOff). The write-off does so at once when the cancel is
// already retired; one that came before (the cancel in flight, or not asked for yet) left the
// money at the address for good: nothing else sweeps it. done is true when nothing is left to
// do: not written off with its money back, its sweep mined (it moved the money), or swept anew.
//
// A batched sweep's transaction is the chain's batch, the gas tank's, shared by other addresses'
// sweeps: cancelLeftChain, made for an address's own nonces, reopened it and waited for good on
// a top-up queued behind it (every later gas tank transaction with it). The gas tank cancels it
// itself instead (cancelLeftBatch), and the deposit leaves it once that cancel has the depth.
func (s *Service) settleWrittenOffAgain(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, d domain.Deposit) (done bool, err error) {
	r, err := store.New(s.pool).LatestReorg(ctx, d.ID)
	if err != nil || !writtenOffBack(r, d) {
		return err == nil, err
	}
	if gone, done, err := s.oldSweepGone(ctx, n, c, sw, d); err != nil || !gone {
		return done, err
	}
	var swept bool
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		locked, err := q.LockDeposit(ctx, d.ID)
		if err != nil {
			return err
		}
		// The deposit, then its reorg, as ResolveReorg locks them: one reopened or reinstated
		// meanwhile is no longer written off.
		if r, err = q.LatestReorg(ctx, d.ID); err != nil || !writtenOffBack(r, locked) || locked.SweepID != d.SweepID {
			return err
		}
		if sw.Batched {
			swept, err = true, s.sweepOutOfBatch(ctx, tx, locked)
			return err
		}
		swept, err = s.sweepWrittenOff(ctx, tx, r, locked)
		return err
	})
	if err == nil && swept {
		s.log.Warn("a deposit written off again, its money back at its address, before its old sweep's cancel was retired: "+
			"swept anew now, not credited (the write-off stands)", "deposit", d.ID, "chain", d.ChainID, "old_sweep", d.SweepID)
	}
	return false, err // swept: its job sweeps it now
}

// writtenOffBack reports whether r, deposit d's latest reorg, is a write-off made with d's
// transfer on the chain again (its money at the deposit address).
func writtenOffBack(r domain.Reorg, d domain.Deposit) bool {
	return d.Status == domain.DepositReorged && r.Resolution == domain.ReorgWriteOff && r.ReincludedHash != "" &&
		r.ReincludedHash == d.BlockHash
}

// oldSweepGone reports whether done sweep sw, which deposit d (written off again) is in, can
// never move money any more: its transfers cancelled and retired (cancelLeftChain), or its
// batch cancelled at depth by the gas tank (cancelLeftBatch). done: nothing is left to do, it
// was mined (again) and moved the money, or a deposit of it counts again. Neither: the job
// polls.
func (s *Service) oldSweepGone(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, d domain.Deposit) (gone, done bool, err error) {
	if sw.Batched && sw.BatchID == 0 {
		return true, false, nil // covered by a carry (coveredSweepGone)
	}
	if covered, err := s.coveredSweep(ctx, sw); err != nil {
		return false, false, err
	} else if covered {
		// Covered by a carry with no transfer (coveredSweep): gone once no transfer that carried
		// can pay (the caller waited while one may: coveredWaiting); else one is on the chain and
		// moved the money.
		never, err := s.coveredNeverPays(ctx, c, sw)
		return never, err == nil && !never, err
	}
	if sw.Batched {
		t, settled, err := s.cancelLeftBatch(ctx, n, c, sw.BatchID)
		if err != nil || !settled {
			return false, false, err
		}
		if t.State == domain.ChainTxCancelled {
			return true, false, nil
		}
		skipped, deep, err := s.batchSkipped(ctx, n, c, sw, t)
		return skipped && deep, !skipped && deep, err
	}
	txs, err := s.sweepTxsRetiredToo(ctx, d.SweepID)
	if err != nil || allCancelled(txs) {
		return err == nil, false, err
	}
	if settled, err := s.cancelLeftChain(ctx, n, c, sw); err != nil || !settled {
		return false, false, err
	}
	if txs, err = s.sweepTxsRetiredToo(ctx, d.SweepID); err != nil {
		return false, false, err
	}
	return allCancelled(txs), !allCancelled(txs), nil
}
