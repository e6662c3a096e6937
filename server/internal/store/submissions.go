package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// SessionWithdrawal is what a new submission looks at of one of its session's withdrawals.
type SessionWithdrawal struct {
	ID     string
	Status domain.WithdrawalStatus
	// Paying: its payout is queued.
	Paying bool
}

// SessionWithdrawals lists a session's withdrawals, oldest first. With lock it holds their
// rows until the transaction ends, so no admin action or decision changes them meanwhile.
func (q *Queries) SessionWithdrawals(ctx context.Context, sessionID string, lock bool) ([]SessionWithdrawal, error) {
	var rows []dbsqlc.SessionWithdrawalsRow
	var err error
	if lock {
		var locked []dbsqlc.LockSessionWithdrawalsRow
		locked, err = sqlc.LockSessionWithdrawals(ctx, q.db, sessionID)
		for _, r := range locked {
			rows = append(rows, dbsqlc.SessionWithdrawalsRow(r))
		}
	} else {
		rows, err = sqlc.SessionWithdrawals(ctx, q.db, sessionID)
	}
	if err != nil {
		return nil, err
	}
	var out []SessionWithdrawal
	for _, r := range rows {
		out = append(out, SessionWithdrawal{ID: r.ID, Status: r.Status, Paying: r.Paying})
	}
	return out, nil
}

// TakeSubmitLease marks a session as submitting until now + d, unless an unexpired mark is
// there already; then ok is false and until is when that one ends. The mark is the lease's
// token: ReleaseSubmitLease clears only its own.
func (q *Queries) TakeSubmitLease(ctx context.Context, sessionID string, d time.Duration) (until time.Time, ok bool, err error) {
	r, err := sqlc.TakeSubmitLease(ctx, q.db, dbsqlc.TakeSubmitLeaseParams{ID: sessionID, Seconds: d.Seconds()})
	return r.Until, r.Ok, notFound(err)
}

// ReleaseSubmitLease ends a lease TakeSubmitLease gave (a no-op once another replaced it).
func (q *Queries) ReleaseSubmitLease(ctx context.Context, sessionID string, until time.Time) error {
	return sqlc.ReleaseSubmitLease(ctx, q.db, dbsqlc.ReleaseSubmitLeaseParams{ID: sessionID, Until: until})
}
