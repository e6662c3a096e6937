package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
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
	sql := `SELECT id::text, status, payout_queued_at IS NOT NULL FROM withdrawals WHERE session_id = $1 ORDER BY created_at, id`
	if lock {
		sql += ` FOR UPDATE`
	}
	rows, err := q.db.Query(ctx, sql, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SessionWithdrawal
	for rows.Next() {
		var w SessionWithdrawal
		if err := rows.Scan(&w.ID, &w.Status, &w.Paying); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// TakeSubmitLease marks a session as submitting until now + d, unless an unexpired mark is
// there already; then ok is false and until is when that one ends. The mark is the lease's
// token: ReleaseSubmitLease clears only its own.
func (q *Queries) TakeSubmitLease(ctx context.Context, sessionID string, d time.Duration) (until time.Time, ok bool, err error) {
	err = q.db.QueryRow(ctx, `
		WITH took AS (
			UPDATE sessions SET submitting_until = clock_timestamp() + make_interval(secs => $2)
			WHERE id = $1 AND (submitting_until IS NULL OR submitting_until <= clock_timestamp())
			RETURNING submitting_until
		)
		SELECT submitting_until, true FROM took
		UNION ALL
		-- NULL here: a concurrent call took the lease after this statement's snapshot.
		SELECT COALESCE(submitting_until, clock_timestamp() + interval '1 second'), false FROM sessions
		WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM took)`,
		sessionID, d.Seconds()).Scan(&until, &ok)
	return until, ok, notFound(err)
}

// ReleaseSubmitLease ends a lease TakeSubmitLease gave (a no-op once another replaced it).
func (q *Queries) ReleaseSubmitLease(ctx context.Context, sessionID string, until time.Time) error {
	_, err := q.db.Exec(ctx, `UPDATE sessions SET submitting_until = NULL WHERE id = $1 AND submitting_until = $2`,
		sessionID, until)
	return err
}
