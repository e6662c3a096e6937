// Package depositor registers and checks an operator's users (depositors). A deposit session
// registers its user too; POST /depositor/create lets an operator do it ahead of time.
package depositor

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Service is the depositor service.
type Service struct{ pool *pgxpool.Pool }

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Create registers a depositor for the operator; it is idempotent and created reports
// whether this call registered it.
func (s *Service) Create(ctx context.Context, op store.Operator, externalUserID, email string) (store.Depositor, bool, error) {
	d, created, err := store.New(s.pool).UpsertDepositor(ctx, op.ID, externalUserID, email)
	if err != nil {
		return d, false, fault.Wrap(err, "create depositor")
	}
	return d, created, nil
}

// Check returns the operator's depositor and whether it exists.
func (s *Service) Check(ctx context.Context, op store.Operator, externalUserID string) (store.Depositor, bool, error) {
	d, err := store.New(s.pool).GetDepositor(ctx, op.ID, externalUserID)
	if errors.Is(err, store.ErrNotFound) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fault.Wrap(err, "check depositor")
	}
	return d, true, nil
}
