package store

import (
	"context"
	"errors"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// depositorOf maps a depositors row to the domain.
func depositorOf(r dbsqlc.Depositor) domain.Depositor {
	return domain.Depositor{OperatorID: r.OperatorID, ExternalUserID: r.ExternalUserID, Email: deref(r.Email),
		Address: deref(r.Address), CreatedAt: r.CreatedAt}
}

// oneDepositor maps a single-row depositor query's result.
func oneDepositor(r dbsqlc.Depositor, err error) (domain.Depositor, error) {
	if err != nil {
		return domain.Depositor{}, notFound(err)
	}
	return depositorOf(r), nil
}

// InsertDepositor registers a depositor unless it exists; created is false (and d empty) when
// it did.
func (q *Queries) InsertDepositor(ctx context.Context, operatorID, externalUserID, email string) (d domain.Depositor, created bool, err error) {
	d, err = oneDepositor(sqlc.InsertDepositor(ctx, q.db, dbsqlc.InsertDepositorParams{OperatorID: operatorID,
		ExternalUserID: externalUserID, Email: email}))
	if errors.Is(err, ErrNotFound) {
		return d, false, nil
	}
	return d, err == nil, err
}

// DepositorForUpdate returns an operator's depositor, holding its row until the transaction ends.
func (q *Queries) DepositorForUpdate(ctx context.Context, operatorID, externalUserID string) (domain.Depositor, error) {
	return oneDepositor(sqlc.DepositorForUpdate(ctx, q.db, dbsqlc.DepositorForUpdateParams{OperatorID: operatorID,
		ExternalUserID: externalUserID}))
}

// SetDepositorEmail replaces a depositor's email.
func (q *Queries) SetDepositorEmail(ctx context.Context, operatorID, externalUserID, email string) error {
	return sqlc.SetDepositorEmail(ctx, q.db, dbsqlc.SetDepositorEmailParams{OperatorID: operatorID, ExternalUserID: externalUserID,
		Email: email})
}

// GetDepositor finds an operator's depositor.
func (q *Queries) GetDepositor(ctx context.Context, operatorID, externalUserID string) (domain.Depositor, error) {
	return oneDepositor(sqlc.GetDepositor(ctx, q.db, dbsqlc.GetDepositorParams{OperatorID: operatorID, ExternalUserID: externalUserID}))
}
