package withdrawal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// SweepArgs is the periodic job that expires unactioned withdrawals past their TTL, cancels
// the open withdrawals of cancelled sessions, and makes sure every paying withdrawal has a
// payout job (one that gave up on a long chain outage is queued again).
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "withdrawal.sweep" }

// SweepWorker works SweepArgs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]

	Service *Service
}

// Work implements river.Worker.
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := w.Service.Sweep(ctx)
	return err
}

// Periodic is the sweep's schedule.
func (s *Service) Periodic() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(s.cfg.SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})}
}

// Swept counts what a sweep did.
type Swept struct {
	Expired, Cancelled, PayoutsQueued int
	// PayoutsResent are mined payouts found on no chain (a deep reorg) and sent again.
	PayoutsResent int
}

// Sweep applies expiry and session cancellations, each withdrawal in its own transaction
// through the transition table. A withdrawal acted on between the listing and its lock (an
// approval just before the TTL) is refused by the table and skipped: it does not stop the run.
func (s *Service) Sweep(ctx context.Context) (Swept, error) {
	var out Swept
	skipped := map[string]bool{}
	for {
		expired, cancelled, err := store.New(s.pool).DueWithdrawals(ctx, s.now(), 200)
		if err != nil {
			return out, err
		}
		fresh := 0
		for _, batch := range []struct {
			ids    []string
			action Action
			note   string
			count  *int
		}{{expired, Expire, "unactioned past the TTL", &out.Expired}, {cancelled, CancelSession, "session cancelled", &out.Cancelled}} {
			for _, id := range batch.ids {
				if skipped[id] {
					continue
				}
				fresh++
				applied, err := s.closeDue(ctx, id, batch.action, batch.note)
				if err != nil {
					return out, err
				}
				if applied {
					*batch.count++
				} else {
					skipped[id] = true
				}
			}
		}
		if fresh == 0 {
			break
		}
	}
	out.PayoutsResent = s.resendPayoutsLeft(ctx)
	s.advanceResolved(ctx)
	paying, err := s.payoutsToFollow(ctx)
	if err != nil {
		return out, err
	}
	for _, id := range paying {
		err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			res, err := s.river.InsertTx(ctx, tx, PayoutArgs{WithdrawalID: id}, nil)
			if err == nil && !res.UniqueSkippedAsDuplicate {
				out.PayoutsQueued++
			}
			return err
		})
		if err != nil {
			return out, err
		}
	}
	if out != (Swept{}) {
		s.log.InfoContext(ctx, "withdrawals swept", "expired", out.Expired, "cancelled", out.Cancelled, "payouts_requeued", out.PayoutsQueued,
			"payouts_resent", out.PayoutsResent)
	}
	return out, nil
}

// closeDue expires or cancels one due withdrawal in a transaction of its own. It reports false,
// changing nothing, when the table refuses the change (refusedClose says why); the run goes on.
func (s *Service) closeDue(ctx context.Context, id string, action Action, note string) (bool, error) {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: id, Action: action, Actor: domain.System, Note: note})
		return err
	})
	if fault.Is(err, fault.FailedPrecondition) {
		return false, s.refusedClose(ctx, id, action, err)
	}
	if err != nil {
		return false, fmt.Errorf("withdrawal %s: %s: %w", id, action, err)
	}
	return true, nil
}

// refusedClose tells a refused expiry or cancel apart: a withdrawal acted on since it was
// listed (the decision stands) is skipped quietly; one still unactioned was refused for another
// reason and would stay open past its due time, so it is logged at ERROR and counted
// (coffer_withdrawals_not_closed_total).
func (s *Service) refusedClose(ctx context.Context, id string, action Action, refusal error) error {
	w, err := store.New(s.pool).GetWithdrawal(ctx, nil, id)
	if err != nil {
		return fmt.Errorf("withdrawal %s: re-read after %s was refused: %w", id, action, err)
	}
	if !unactioned(w) {
		s.log.InfoContext(ctx, "withdrawal acted on before the sweep reached it; the decision stands",
			"withdrawal", id, "status", w.Status, "action", action, "reason", refusal)
		return nil
	}
	metrics.WithdrawalsNotClosed.WithLabelValues(string(action)).Inc()
	s.log.ErrorContext(ctx, "the transition table refused to close a withdrawal nobody acted on: it stays open past its due time",
		"withdrawal", id, "operator_id", w.OperatorID, "status", w.Status, "action", action, "reason", refusal)
	return nil
}

// unactioned reports whether nobody decided the withdrawal yet: PENDING or AWAITING_APPROVAL,
// its payout never queued (the states expiry and session cancels close).
func unactioned(w domain.Withdrawal) bool {
	s := StateOf(w)
	return s == open(domain.WithdrawalPending) || s == open(domain.WithdrawalAwaitingApproval)
}

// SessionCancelled cancels the open withdrawals of a session the user cancelled, in a
// transaction of its own (the session service cancels them in the session's: see
// CancelSessionWithdrawals).
func (s *Service) SessionCancelled(ctx context.Context, sessionID string) error {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error { return s.CancelSessionWithdrawals(ctx, tx, sessionID) })
	var fe *fault.Error
	if err != nil && !errors.As(err, &fe) {
		return fault.Wrap(err, "cancel the withdrawals of session %s", sessionID) // the commit failed
	}
	return err
}

// CancelSessionWithdrawals cancels the open withdrawals of a cancelled session in the caller's
// transaction (SessionCascade). One acted on meanwhile (an APPROVE queued its payout) goes on.
func (s *Service) CancelSessionWithdrawals(ctx context.Context, tx pgx.Tx, sessionID string) error {
	return cancelSessionWithdrawals(ctx, tx, s.log, sessionID)
}

// SessionCascade is what cancelling a withdraw session cancels with it, in the session's
// transaction (session.Config.Cascade): its open withdrawals. It needs no Service, so the
// session service gets it at construction, before the withdrawal service exists.
func SessionCascade(log *slog.Logger) func(ctx context.Context, tx pgx.Tx, sessionID string) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "withdrawal")
	return func(ctx context.Context, tx pgx.Tx, sessionID string) error {
		return cancelSessionWithdrawals(ctx, tx, log, sessionID)
	}
}

func cancelSessionWithdrawals(ctx context.Context, tx pgx.Tx, log *slog.Logger, sessionID string) error {
	err := func() error {
		if err := store.New(tx).LockSession(ctx, sessionID); err != nil {
			return err
		}
		ids, err := store.New(tx).OpenWithdrawalsOfSession(ctx, sessionID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			_, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: id, Action: CancelSession, Actor: domain.User, Note: "session cancelled"})
			if fault.Is(err, fault.FailedPrecondition) {
				// Acted on meanwhile (an APPROVE queued its payout): that decision stands.
				log.InfoContext(ctx, "session cancelled after its withdrawal was acted on; the withdrawal goes on",
					"withdrawal", id, "session", sessionID)
				continue
			}
			if err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		return fault.Wrap(err, "cancel the withdrawals of session %s", sessionID)
	}
	return nil
}
