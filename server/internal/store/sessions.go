package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const sessionColumns = `id::text, operator_id::text, kind, session_ref, external_user_id, lang, fiat_currency,
	user_balance, amount, COALESCE(email, ''), COALESCE(operator_reference, ''), created_at, expires_at, cancelled_at`

func scanSession(row interface{ Scan(...any) error }) (domain.Session, error) {
	var s domain.Session
	err := row.Scan(&s.ID, &s.OperatorID, &s.Kind, &s.SessionRef, &s.ExternalUserID, &s.Lang, &s.FiatCurrency,
		&s.UserBalance, &s.Amount, &s.Email, &s.OperatorReference, &s.CreatedAt, &s.ExpiresAt, &s.CancelledAt)
	return s, notFound(err)
}

// InsertSession creates a session in one statement, registering the depositor of a deposit
// session on the way. CreatedAt and ExpiresAt (creation plus ttl) are set from the database
// clock. An operator reference is claimed first, in the same transaction (ClaimReference).
func (q *Queries) InsertSession(ctx context.Context, s domain.Session, ttl time.Duration) (domain.Session, error) {
	err := q.db.QueryRow(ctx, `
		WITH inserted AS (
			INSERT INTO sessions (id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency,
				user_balance, amount, email, operator_reference, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), NULLIF($11, ''), now() + $12::interval)
			RETURNING operator_id, kind, external_user_id, email, created_at, expires_at
		), depositor AS (
			INSERT INTO depositors (operator_id, external_user_id, email)
			SELECT operator_id, external_user_id, email FROM inserted WHERE kind = 'DEPOSIT'
			ON CONFLICT (operator_id, external_user_id) DO NOTHING
		)
		SELECT created_at, expires_at FROM inserted`,
		s.ID, s.OperatorID, s.Kind, s.SessionRef, s.ExternalUserID, s.Lang, s.FiatCurrency, s.UserBalance,
		s.Amount, s.Email, s.OperatorReference, ttl).Scan(&s.CreatedAt, &s.ExpiresAt)
	return s, err
}

// SessionByID finds a session by sid. The sid is the widget's credential, so this lookup is
// not scoped by operator; operator-facing callers use SessionForOperators.
func (q *Queries) SessionByID(ctx context.Context, sid string) (domain.Session, error) {
	return scanSession(q.db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, sid))
}

// SessionForOperators finds a session owned by one of the given operators.
func (q *Queries) SessionForOperators(ctx context.Context, operatorIDs []string, sid string) (domain.Session, error) {
	return scanSession(q.db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE id = $1 AND operator_id = ANY($2::uuid[])`, sid, operatorIDs))
}

// CancelSession marks an open session cancelled; it returns the session as it now stands.
func (q *Queries) CancelSession(ctx context.Context, sid string) (domain.Session, error) {
	return scanSession(q.db.QueryRow(ctx, `
		UPDATE sessions SET cancelled_at = COALESCE(cancelled_at, now())
		WHERE id = $1 AND expires_at > now()
		RETURNING `+sessionColumns, sid))
}
