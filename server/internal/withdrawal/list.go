package withdrawal

import (
	"context"
	"errors"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/ident"
	"github.com/cofferhq/coffer/server/internal/pagetoken"
	"github.com/cofferhq/coffer/server/internal/store"
)

// List pages through withdrawals within a scope, newest first; f.OperatorIDs may name one
// operator of the scope (NOT_FOUND outside it). The page token names the last row of the
// previous page.
func (s *Service) List(ctx context.Context, scope domain.Scope, f domain.WithdrawalFilter, pageToken string) ([]domain.Withdrawal, string, error) {
	if err := ident.UserFilter(f.ExternalUserID); err != nil {
		return nil, "", err
	}
	ids, err := auth.NarrowedIDs(scope, f.OperatorIDs...)
	if err != nil {
		return nil, "", err
	}
	f.OperatorIDs = ids
	return pagetoken.List(pageList, pageToken, f.Limit, func(after *pagetoken.TimeID, limit int) ([]domain.Withdrawal, error) {
		if after != nil {
			f.BeforeTime, f.BeforeID = &after.At, after.ID
		}
		f.Limit = limit
		list, err := store.New(s.pool).ListWithdrawals(ctx, f)
		if err != nil {
			return nil, fault.Wrap(err, "list withdrawals")
		}
		return list, nil
	}, func(w domain.Withdrawal) pagetoken.TimeID { return pagetoken.TimeID{At: w.CreatedAt, ID: w.ID} })
}

// pageList names List's page tokens.
const pageList = "withdrawals"

// Get returns a withdrawal within scope and its audit trail.
func (s *Service) Get(ctx context.Context, scope domain.Scope, id string) (domain.Withdrawal, []domain.WithdrawalTransition, error) {
	q := store.New(s.pool)
	w, err := q.GetWithdrawal(ctx, auth.OperatorIDs(scope), id)
	if errors.Is(err, store.ErrNotFound) {
		return w, nil, fault.New(fault.NotFound, "withdrawal not found")
	} else if err != nil {
		return w, nil, fault.Wrap(err, "load withdrawal")
	}
	trail, err := q.WithdrawalTransitions(ctx, id)
	if err != nil {
		return w, nil, fault.Wrap(err, "load audit trail")
	}
	return w, trail, nil
}
