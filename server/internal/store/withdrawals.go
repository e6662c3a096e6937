package store

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// withdrawalOf maps a withdrawals row, with its session's handle and operatorReference, to the
// domain.
func withdrawalOf(r dbsqlc.Withdrawal, sessionRef, operatorReference string) domain.Withdrawal {
	return domain.Withdrawal{ID: r.ID, OperatorID: r.OperatorID, SessionID: r.SessionID, ExternalUserID: r.ExternalUserID,
		Type: r.Type, ApprovalMode: r.ApprovalMode, Status: r.Status, ChainID: r.ChainID, Currency: r.Currency,
		ContractAddress: deref(r.ContractAddress), Decimals: r.Decimals, Address: r.Address, FiatCurrency: r.FiatCurrency,
		FiatAmount: r.FiatAmount, CryptoAmount: r.CryptoAmount, AmountInUSD: r.AmountInUsd, CapAmount: r.CapAmount,
		CapCurrency: deref(r.CapCurrency), SettlementTxHash: deref(r.SettlementTxHash), PayoutQueuedAt: r.PayoutQueuedAt, HeldReason: deref(r.HeldReason),
		AdminNote: r.AdminNote, OfframpProvider: deref(r.OfframpProvider), OfframpRef: deref(r.OfframpRef),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ExpiresAt: r.ExpiresAt, CompletedAt: r.CompletedAt,
		SessionRef: sessionRef, OperatorReference: operatorReference}
}

// InsertWithdrawal records an accepted withdrawal in its first status, created at w.CreatedAt
// (now when it is zero).
func (q *Queries) InsertWithdrawal(ctx context.Context, w domain.Withdrawal) (domain.Withdrawal, error) {
	var createdAt *time.Time
	if !w.CreatedAt.IsZero() {
		createdAt = &w.CreatedAt
	}
	r, err := sqlc.InsertWithdrawal(ctx, q.db, dbsqlc.InsertWithdrawalParams{CreatedAt: createdAt, ID: w.ID, OperatorID: w.OperatorID,
		SessionID: w.SessionID, ExternalUserID: w.ExternalUserID, Type: w.Type, ApprovalMode: w.ApprovalMode,
		Status: w.Status, ChainID: w.ChainID, Currency: w.Currency, ContractAddress: w.ContractAddress,
		Decimals: w.Decimals, Address: w.Address, FiatCurrency: w.FiatCurrency, FiatAmount: w.FiatAmount,
		CryptoAmount: w.CryptoAmount, ExpiresAt: w.ExpiresAt, AmountInUsd: w.AmountInUSD, CapAmount: w.CapAmount,
		CapCurrency: w.CapCurrency, OfframpProvider: w.OfframpProvider, OfframpRef: w.OfframpRef})
	if err != nil {
		return domain.Withdrawal{}, notFound(err)
	}
	return withdrawalOf(r.Withdrawal, r.SessionRef, r.OperatorReference), nil
}

// LockWithdrawal returns a withdrawal whose operator is in scope (nil: any), holding its row
// until the transaction ends: status changes of one withdrawal happen one at a time.
func (q *Queries) LockWithdrawal(ctx context.Context, scope []string, id string) (domain.Withdrawal, error) {
	r, err := sqlc.LockWithdrawal(ctx, q.db, dbsqlc.LockWithdrawalParams{ID: id, OperatorIDs: scope})
	if err != nil {
		return domain.Withdrawal{}, notFound(err)
	}
	return withdrawalOf(r.Withdrawal, r.SessionRef, r.OperatorReference), nil
}

// WithdrawalChange is what a transition writes besides the status.
type WithdrawalChange struct {
	// SettlementTxHash is set with COMPLETED.
	SettlementTxHash string
	// QueuePayout marks the withdrawal paying.
	QueuePayout bool
	// StopPayout marks it not paying any more, held with HeldReason.
	StopPayout bool
	HeldReason string
	// AdminNote replaces the last admin note when set.
	AdminNote string
}

// SetWithdrawalStatus moves a locked withdrawal to its status t.To (which may be its current
// one, when the action only queued the payout) and records who did it. The update only
// applies while the withdrawal is still in t.From.
func (q *Queries) SetWithdrawalStatus(ctx context.Context, id string, t domain.WithdrawalTransition, c WithdrawalChange) error {
	return sqlc.SetWithdrawalStatus(ctx, q.db, dbsqlc.SetWithdrawalStatusParams{ID: id, FromStatus: t.From, ToStatus: t.To,
		Action: t.Action, Actor: string(t.Actor), Note: t.Note, SettlementTxHash: c.SettlementTxHash,
		QueuePayout: c.QueuePayout, StopPayout: c.StopPayout, HeldReason: c.HeldReason, AdminNote: c.AdminNote})
}

// HoldWithdrawal records why an APPROVE could not settle (the status does not change).
func (q *Queries) HoldWithdrawal(ctx context.Context, id string, t domain.WithdrawalTransition, reason string) error {
	return sqlc.HoldWithdrawal(ctx, q.db, dbsqlc.HoldWithdrawalParams{ID: id, FromStatus: t.From, ToStatus: t.To,
		Action: t.Action, Actor: string(t.Actor), Note: t.Note, HeldReason: reason})
}

// MoveSettlement sets a completed withdrawal's settlementTxHash to hash, with the audit row of
// t (its status does not change). It reports false when the withdrawal is not COMPLETED or
// already names hash.
func (q *Queries) MoveSettlement(ctx context.Context, id, hash string, t domain.WithdrawalTransition) (bool, error) {
	n, err := sqlc.MoveSettlement(ctx, q.db, dbsqlc.MoveSettlementParams{ID: id, SettlementTxHash: hash, Action: t.Action,
		Actor: string(t.Actor), Note: t.Note})
	return n > 0, err
}

// GetWithdrawal returns a withdrawal whose operator is in scope (nil: any).
func (q *Queries) GetWithdrawal(ctx context.Context, scope []string, id string) (domain.Withdrawal, error) {
	r, err := sqlc.GetWithdrawal(ctx, q.db, dbsqlc.GetWithdrawalParams{ID: id, OperatorIDs: scope})
	if err != nil {
		return domain.Withdrawal{}, notFound(err)
	}
	return withdrawalOf(r.Withdrawal, r.SessionRef, r.OperatorReference), nil
}

// LockOperatorCaps holds the operator's row until the transaction ends: approvals of one
// operator are checked against its caps one at a time, so concurrent ones cannot together
// pass a cap. NO KEY UPDATE, not UPDATE: it must not block the key-share locks that inserts
// referencing the operator take (fund entries, webhook events), or an approval holding this
// lock and waiting for the operator's funds row deadlocks with a payout completion holding
// that row and inserting its fund entry.
func (q *Queries) LockOperatorCaps(ctx context.Context, operatorID string) (domain.Operator, error) {
	r, err := sqlc.LockOperatorCaps(ctx, q.db, operatorID)
	return operatorOf(r), notFound(err)
}

// LockOperatorShare reads an operator and keeps its row from changing until the transaction ends.
func (q *Queries) LockOperatorShare(ctx context.Context, operatorID string) (domain.Operator, error) {
	r, err := sqlc.LockOperatorShare(ctx, q.db, operatorID)
	return operatorOf(r), notFound(err)
}

// PaidCaps is what an operator's withdrawals paid or paying since a moment count toward its
// caps, in one currency.
type PaidCaps struct {
	// Currency the amounts are in; "" for withdrawals recorded before it was (the operator's).
	Currency string
	Amount   decimal.Decimal
	USD      decimal.Decimal
}

// PaidSince is the cap amounts of an operator's withdrawals paid or paying since a moment, per
// currency they are in.
func (q *Queries) PaidSince(ctx context.Context, operatorID string, since time.Time) ([]PaidCaps, error) {
	rows, err := sqlc.PaidSince(ctx, q.db, dbsqlc.PaidSinceParams{OperatorID: operatorID, Since: since})
	return many(rows, err, func(r dbsqlc.PaidSinceRow) (PaidCaps, error) {
		return PaidCaps{Currency: r.CapCurrency, Amount: r.CapAmount, USD: r.AmountInUsd}, nil
	})
}

// LockPayoutLiquidity serialises the liquidity checks of one chain's hot wallet until the
// transaction ends.
func (q *Queries) LockPayoutLiquidity(ctx context.Context, chainID int64) error {
	return sqlc.LockPayoutLiquidity(ctx, q.db, int32(chainID)) //nolint:gosec // G115: an advisory lock key: a chain ID beyond int4 that wraps only shares a lock with another chain
}

// UnminedPayouts is the amount (smallest unit) of a chain's payouts in one currency that are
// queued but whose transaction is not mined yet, a completed withdrawal's sent again after its
// block left the chain included: the hot wallet still holds it, but it is spoken for.
func (q *Queries) UnminedPayouts(ctx context.Context, chainID int64, currency, purpose string) (decimal.Decimal, error) {
	return sqlc.UnminedPayouts(ctx, q.db, dbsqlc.UnminedPayoutsParams{ChainID: chainID, Currency: currency, Purpose: purpose})
}

// OpenWithdrawalsOfSession lists a session's withdrawals nobody has acted on yet.
func (q *Queries) OpenWithdrawalsOfSession(ctx context.Context, sessionID string) ([]string, error) {
	ids, err := sqlc.OpenWithdrawalsOfSession(ctx, q.db, sessionID)
	return nonNil(ids), err
}

// DueWithdrawals lists unactioned withdrawals past their deadline, and those of cancelled
// sessions.
func (q *Queries) DueWithdrawals(ctx context.Context, now time.Time, limit int) (expired, cancelled []string, err error) {
	rows, err := sqlc.DueWithdrawals(ctx, q.db, dbsqlc.DueWithdrawalsParams{Now: now, MaxRows: rowLimit(limit)})
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if r.Expired {
			expired = append(expired, r.ID)
		} else {
			cancelled = append(cancelled, r.ID)
		}
	}
	return expired, cancelled, nil
}

// WithdrawalWasApproved reports whether a withdrawal open again had its payout queued once
// (stopped or abandoned since): it was approved, so its TTL no longer applies.
func (q *Queries) WithdrawalWasApproved(ctx context.Context, id string) (bool, error) {
	return sqlc.WithdrawalWasApproved(ctx, q.db, id)
}

// PayingWithdrawals lists the withdrawals whose payout is queued and not yet confirmed.
func (q *Queries) PayingWithdrawals(ctx context.Context) ([]string, error) {
	ids, err := sqlc.PayingWithdrawals(ctx, q.db)
	return nonNil(ids), err
}

// CompletedWithdrawalsPayingAgain lists the completed withdrawals whose payout transaction (of
// purpose) is pending again: its block left the chain after they completed.
func (q *Queries) CompletedWithdrawalsPayingAgain(ctx context.Context, purpose string) ([]string, error) {
	ids, err := sqlc.CompletedWithdrawalsPayingAgain(ctx, q.db, purpose)
	return nonNil(ids), err
}

// ListWithdrawals lists withdrawals, newest first.
func (q *Queries) ListWithdrawals(ctx context.Context, f domain.WithdrawalFilter) ([]domain.Withdrawal, error) {
	statuses := make([]string, 0, len(f.Statuses))
	for _, st := range f.Statuses {
		statuses = append(statuses, string(st))
	}
	var beforeID *string
	if f.BeforeID != "" {
		beforeID = &f.BeforeID
	}
	rows, err := sqlc.ListWithdrawals(ctx, q.db, dbsqlc.ListWithdrawalsParams{OperatorIDs: f.OperatorIDs, Statuses: statuses,
		ExternalUserID: f.ExternalUserID, ChainID: f.ChainID, CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore,
		BeforeTime: f.BeforeTime, BeforeID: beforeID, MaxRows: rowLimit(f.Limit)})
	if err != nil {
		return nil, err
	}
	out := make([]domain.Withdrawal, 0, len(rows))
	for _, r := range rows {
		out = append(out, withdrawalOf(r.Withdrawal, r.SessionRef, r.OperatorReference))
	}
	return out, nil
}

// LockSession holds a session's row until the transaction ends: submissions of one session
// happen one at a time (the newest supersedes the open earlier ones).
func (q *Queries) LockSession(ctx context.Context, sid string) error {
	return sqlc.LockSession(ctx, q.db, sid)
}

// WithdrawalTransitions is a withdrawal's audit trail, oldest first.
func (q *Queries) WithdrawalTransitions(ctx context.Context, id string) ([]domain.WithdrawalTransition, error) {
	rows, err := sqlc.WithdrawalTransitions(ctx, q.db, id)
	return many(rows, err, transitionOf)
}

// transitionOf maps a withdrawal_transitions row to the domain.
func transitionOf(r dbsqlc.WithdrawalTransition) (domain.WithdrawalTransition, error) {
	return domain.WithdrawalTransition{From: r.FromStatus, To: r.ToStatus, Action: r.Action, Actor: domain.Actor(r.Actor),
		Note: r.Note, At: r.At}, nil
}
