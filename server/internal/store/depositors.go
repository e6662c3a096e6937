package store

import (
	"context"
	"time"
)

// Depositor is one of an operator's users.
type Depositor struct {
	OperatorID     string
	ExternalUserID string
	Email          string
	CreatedAt      time.Time
}

// UpsertDepositor registers a depositor, or refreshes its email when one is given; created
// is true when the row is new.
func (q *Queries) UpsertDepositor(ctx context.Context, operatorID, externalUserID, email string) (d Depositor, created bool, err error) {
	err = q.db.QueryRow(ctx, `
		INSERT INTO depositors (operator_id, external_user_id, email) VALUES ($1, $2, NULLIF($3, ''))
		ON CONFLICT (operator_id, external_user_id) DO UPDATE
			SET email = COALESCE(EXCLUDED.email, depositors.email),
			    updated_at = CASE WHEN EXCLUDED.email IS DISTINCT FROM depositors.email AND EXCLUDED.email IS NOT NULL
			                      THEN now() ELSE depositors.updated_at END
		RETURNING operator_id::text, external_user_id, COALESCE(email, ''), created_at, xmax = 0`,
		operatorID, externalUserID, email).Scan(&d.OperatorID, &d.ExternalUserID, &d.Email, &d.CreatedAt, &created)
	return d, created, err
}

// GetDepositor finds an operator's depositor.
func (q *Queries) GetDepositor(ctx context.Context, operatorID, externalUserID string) (Depositor, error) {
	var d Depositor
	err := q.db.QueryRow(ctx, `SELECT operator_id::text, external_user_id, COALESCE(email, ''), created_at
		FROM depositors WHERE operator_id = $1 AND external_user_id = $2`, operatorID, externalUserID).
		Scan(&d.OperatorID, &d.ExternalUserID, &d.Email, &d.CreatedAt)
	return d, notFound(err)
}
