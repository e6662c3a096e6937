package store

import (
	"context"
	"errors"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const depositorColumns = `operator_id::text, external_user_id, COALESCE(email, ''), COALESCE(address, ''), created_at`

func scanDepositor(row interface{ Scan(...any) error }) (domain.Depositor, error) {
	var d domain.Depositor
	err := row.Scan(&d.OperatorID, &d.ExternalUserID, &d.Email, &d.Address, &d.CreatedAt)
	return d, notFound(err)
}

// InsertDepositor registers a depositor unless it exists; created is false (and d empty) when
// it did.
func (q *Queries) InsertDepositor(ctx context.Context, operatorID, externalUserID, email string) (d domain.Depositor, created bool, err error) {
	d, err = scanDepositor(q.db.QueryRow(ctx, `
		INSERT INTO depositors (operator_id, external_user_id, email) VALUES ($1, $2, NULLIF($3, ''))
		ON CONFLICT (operator_id, external_user_id) DO NOTHING
		RETURNING `+depositorColumns, operatorID, externalUserID, email))
	if errors.Is(err, ErrNotFound) {
		return d, false, nil
	}
	return d, err == nil, err
}

// DepositorForUpdate returns an operator's depositor, holding its row until the transaction ends.
func (q *Queries) DepositorForUpdate(ctx context.Context, operatorID, externalUserID string) (domain.Depositor, error) {
	return scanDepositor(q.db.QueryRow(ctx, `SELECT `+depositorColumns+` FROM depositors
		WHERE operator_id = $1 AND external_user_id = $2 FOR UPDATE`, operatorID, externalUserID))
}

// SetDepositorEmail replaces a depositor's email.
func (q *Queries) SetDepositorEmail(ctx context.Context, operatorID, externalUserID, email string) error {
	_, err := q.db.Exec(ctx, `UPDATE depositors SET email = $3, updated_at = now()
		WHERE operator_id = $1 AND external_user_id = $2`, operatorID, externalUserID, email)
	return err
}

// GetDepositor finds an operator's depositor.
func (q *Queries) GetDepositor(ctx context.Context, operatorID, externalUserID string) (domain.Depositor, error) {
	return scanDepositor(q.db.QueryRow(ctx, `SELECT `+depositorColumns+`
		FROM depositors WHERE operator_id = $1 AND external_user_id = $2`, operatorID, externalUserID))
}
