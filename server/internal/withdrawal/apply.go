package withdrawal

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Change is an asked-for status change.
type Change struct {
	ID     string
	Action Action
	// Actor is who asks: admin:<id>, operator:<id>, user or system.
	Actor domain.Actor
	Note  string
	// SettlementTxHash is the payout's hash (PayoutConfirmed only).
	SettlementTxHash string
	// Held is why a stopped payout waits (PayoutStopped only).
	Held HeldReason
}

// Applied is a change's result: the withdrawal after it, and what the caller must do in the
// same transaction (queue the payout when Outcome.Payout).
type Applied struct {
	Withdrawal domain.Withdrawal
	Outcome    Outcome
}

// lock loads a withdrawal within scope and holds its row until the transaction ends: changes
// of one withdrawal happen one at a time.
func lock(ctx context.Context, q *store.Queries, scope domain.Scope, id string) (domain.Withdrawal, error) {
	w, err := q.LockWithdrawal(ctx, auth.OperatorIDs(scope), id)
	if errors.Is(err, store.ErrNotFound) {
		return w, fault.New(fault.NotFound, "withdrawal not found")
	} else if err != nil {
		return w, fault.Wrap(err, "load withdrawal")
	}
	return w, nil
}

// Apply makes a change in the caller's transaction: it locks the withdrawal (scoped to the
// operators in scope; domain.AllOperators() for a job acting on any), asks the transition table, and records the change with
// its actor and note. A refused change returns the table's FAILED_PRECONDITION error and
// writes nothing; a repeated decision (Outcome.Unchanged) writes nothing either.
func Apply(ctx context.Context, tx pgx.Tx, scope domain.Scope, c Change) (Applied, error) {
	q := store.New(tx)
	w, err := lock(ctx, q, scope, c.ID)
	if err != nil {
		return Applied{}, err
	}
	from := w.Status
	o, err := Next(StateOf(w), c.Action)
	if err != nil {
		return Applied{}, err
	}
	if o.Unchanged {
		return Applied{Withdrawal: w, Outcome: o}, nil
	}
	if c.Action == PayoutConfirmed && c.SettlementTxHash == "" {
		return Applied{}, fault.Wrap(errors.New("no settlement transaction hash"), "complete withdrawal %s", w.ID)
	}
	t := domain.WithdrawalTransition{From: from, To: o.To, Action: string(c.Action), Actor: c.Actor, Note: c.Note}
	change := store.WithdrawalChange{SettlementTxHash: c.SettlementTxHash, QueuePayout: o.Payout,
		StopPayout: c.Action == PayoutStopped || c.Action == PayoutAbandoned, HeldReason: string(c.Held)}
	if c.Actor.IsAdmin() {
		change.AdminNote = c.Note
	}
	if err := q.SetWithdrawalStatus(ctx, w.ID, t, change); err != nil {
		return Applied{}, fault.Wrap(err, "record withdrawal %s", w.ID)
	}
	if w, err = q.LockWithdrawal(ctx, nil, w.ID); err != nil {
		return Applied{}, fault.Wrap(err, "reload withdrawal")
	}
	return Applied{Withdrawal: w, Outcome: o}, nil
}
