// Package depositor registers and checks an operator's users (depositors). A deposit session
// registers its user too; POST /depositor/create lets an operator do it ahead of time.
package depositor

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/ident"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Service is the depositor service.
type Service struct{ pool *pgxpool.Pool }

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// EmailChange is what a Create did to the depositor's email.
type EmailChange string

// The email outcomes of Create.
const (
	// EmailSet: the depositor had no email and now has the one given (a new one included).
	EmailSet EmailChange = "SET"
	// EmailUpdated: another email replaced the depositor's.
	EmailUpdated EmailChange = "UPDATED"
	// EmailUnchanged: none was given, or the same one.
	EmailUnchanged EmailChange = "UNCHANGED"
)

// EmailChanges lists the email outcomes.
func EmailChanges() []EmailChange {
	return []EmailChange{EmailSet, EmailUpdated, EmailUnchanged}
}

// Created is a Create's result.
type Created struct {
	Depositor domain.Depositor
	// Created is true when this call registered the depositor.
	Created bool
	Email   EmailChange
}

// Create registers a depositor for the operator, or, when it exists, replaces its email with
// the one given (an empty email keeps the stored one). It is idempotent and says what it did.
func (s *Service) Create(ctx context.Context, op domain.Operator, externalUserID, email string) (Created, error) {
	if err := ident.UserID(externalUserID); err != nil {
		return Created{}, err
	}
	var out Created
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		d, created, err := q.InsertDepositor(ctx, op.ID, externalUserID, email)
		if err != nil {
			return err
		}
		if created {
			out = Created{Depositor: d, Created: true, Email: EmailUnchanged}
			if email != "" {
				out.Email = EmailSet
			}
			return nil
		}
		// It exists (perhaps since a concurrent call): the row lock orders the email changes.
		if d, err = q.DepositorForUpdate(ctx, op.ID, externalUserID); err != nil {
			return err
		}
		out = Created{Depositor: d, Email: EmailUnchanged}
		if email == "" || email == d.Email {
			return nil
		}
		out.Email = EmailUpdated
		if d.Email == "" {
			out.Email = EmailSet
		}
		out.Depositor.Email = email
		return q.SetDepositorEmail(ctx, op.ID, externalUserID, email)
	})
	if err != nil {
		return Created{}, fault.Wrap(err, "create depositor")
	}
	return out, nil
}

// Check returns the operator's depositor and whether it exists. An id Create refuses is
// refused here too, rather than answered "not found" as if it could exist.
func (s *Service) Check(ctx context.Context, op domain.Operator, externalUserID string) (domain.Depositor, bool, error) {
	if err := ident.UserID(externalUserID); err != nil {
		return domain.Depositor{}, false, err
	}
	d, err := store.New(s.pool).GetDepositor(ctx, op.ID, externalUserID)
	if errors.Is(err, store.ErrNotFound) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fault.Wrap(err, "check depositor")
	}
	return d, true, nil
}
