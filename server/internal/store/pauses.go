package store

import (
	"context"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// pauseOf maps a payout_pauses row to the domain.
func pauseOf(r dbsqlc.PayoutPause) domain.PayoutPause {
	return domain.PayoutPause{ID: r.ID, Scope: r.Scope, ChainID: r.ChainID.Int64, OperatorID: deref(r.OperatorID), Reason: r.Reason,
		PausedBy: domain.Actor(r.PausedBy), PausedAt: r.PausedAt, ResumedBy: domain.Actor(deref(r.ResumedBy)),
		ResumeReason: deref(r.ResumeReason), ResumedAt: r.ResumedAt}
}

// pauseKey is a pause's scope as the statements take it (NULL where the scope has no value).
func pauseKey(p domain.PayoutPause) (pgtype.Int8, *string) {
	var chainID pgtype.Int8
	var operatorID *string
	if p.Scope == domain.PauseChain {
		chainID = pgtype.Int8{Int64: p.ChainID, Valid: true}
	}
	if p.Scope == domain.PauseOperator {
		operatorID = &p.OperatorID
	}
	return chainID, operatorID
}

// InsertPayoutPause records a pause; a second active pause of the same scope is a unique
// violation (payout_pauses_active_idx).
func (q *Queries) InsertPayoutPause(ctx context.Context, p domain.PayoutPause) (domain.PayoutPause, error) {
	chainID, operatorID := pauseKey(p)
	r, err := sqlc.InsertPayoutPause(ctx, q.db, dbsqlc.InsertPayoutPauseParams{Scope: p.Scope, ChainID: chainID, OperatorID: operatorID,
		Reason: p.Reason, PausedBy: string(p.PausedBy)})
	return pauseOf(r), err
}

// ResumePayoutPause lifts the active pause of p's scope, recording who and why; ErrNotFound
// when that scope is not paused.
func (q *Queries) ResumePayoutPause(ctx context.Context, p domain.PayoutPause, by domain.Actor, reason string) (domain.PayoutPause, error) {
	chainID, operatorID := pauseKey(p)
	r, err := sqlc.ResumePayoutPause(ctx, q.db, dbsqlc.ResumePayoutPauseParams{ResumedBy: string(by), ResumeReason: reason,
		Scope: p.Scope, ChainID: chainID, OperatorID: operatorID})
	return pauseOf(r), notFound(err)
}

// ActivePayoutPause is the pause covering a payout on chainID of operatorID; ErrNotFound when
// none does.
func (q *Queries) ActivePayoutPause(ctx context.Context, chainID int64, operatorID string) (domain.PayoutPause, error) {
	r, err := sqlc.ActivePayoutPause(ctx, q.db, dbsqlc.ActivePayoutPauseParams{ChainID: chainID, OperatorID: operatorID})
	return pauseOf(r), notFound(err)
}

// PayoutPauses lists the active pauses, or all of them (history) with all; newest first.
func (q *Queries) PayoutPauses(ctx context.Context, all bool, limit int32) ([]domain.PayoutPause, error) {
	rows, err := sqlc.ListPayoutPauses(ctx, q.db, dbsqlc.ListPayoutPausesParams{AllPauses: all, MaxRows: limit})
	out := make([]domain.PayoutPause, 0, len(rows))
	for _, r := range rows {
		out = append(out, pauseOf(r))
	}
	return out, err
}
