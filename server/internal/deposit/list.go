package deposit

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

// Progress is a deposit as the widget shows it.
type Progress struct {
	domain.Deposit

	// Confirmations so far and required; with a finalized-tag chain, Required is 0.
	Confirmations, Required int32
}

// SessionProgress lists a session's deposits with their confirmation counts.
func (s *Service) SessionProgress(ctx context.Context, sessionID string) ([]Progress, error) {
	q := store.New(s.pool)
	deps, err := q.SessionDeposits(ctx, sessionID)
	if err != nil {
		return nil, fault.Wrap(err, "session deposits")
	}
	heads := map[int64]uint64{}
	out := make([]Progress, 0, len(deps))
	for _, d := range deps {
		head, ok := heads[d.ChainID]
		if !ok {
			if head, err = q.ChainHead(ctx, d.ChainID); err != nil {
				return nil, fault.Wrap(err, "chain head")
			}
			heads[d.ChainID] = head
		}
		p := Progress{Deposit: d}
		if n, ok := s.chains.Network(d.ChainID); ok && !n.Finalized {
			p.Required = n.Confirmations
		}
		if head >= d.BlockNumber {
			p.Confirmations = int32(min(head-d.BlockNumber+1, 1<<20))
		}
		if d.Status != "CONFIRMING" && p.Confirmations < p.Required {
			p.Confirmations = p.Required
		}
		out = append(out, p)
	}
	return out, nil
}

// List pages through deposits within a scope, newest first; f.OperatorIDs may name one
// operator of the scope (NOT_FOUND outside it). The page token names the last deposit of the
// previous page.
func (s *Service) List(ctx context.Context, scope domain.Scope, f domain.DepositFilter, pageToken string) ([]domain.Deposit, string, error) {
	if err := ident.UserFilter(f.ExternalUserID); err != nil {
		return nil, "", err
	}
	ids, err := auth.NarrowedIDs(scope, f.OperatorIDs...)
	if err != nil {
		return nil, "", err
	}
	f.OperatorIDs = ids
	return pagetoken.List(depositPages, pageToken, f.Limit, func(after *pagetoken.Seq, limit int) ([]domain.Deposit, error) {
		if after != nil {
			f.BeforeID = int64(*after)
		}
		f.Limit = limit
		deps, err := store.New(s.pool).ListDeposits(ctx, f)
		if err != nil {
			return nil, fault.Wrap(err, "list deposits")
		}
		return deps, nil
	}, func(d domain.Deposit) pagetoken.Seq { return pagetoken.Seq(d.ID) })
}

// depositPages names List's page tokens.
const depositPages = "deposits"

// Record is a deposit with the session its DEPOSIT webhook describes (nil for a direct send).
type Record struct {
	domain.Deposit

	Session *domain.Session
}

// Records pages through deposits within a scope like List, each with its session.
func (s *Service) Records(ctx context.Context, scope domain.Scope, f domain.DepositFilter, pageToken string) ([]Record, string, error) {
	deps, next, err := s.List(ctx, scope, f, pageToken)
	if err != nil {
		return nil, "", err
	}
	recs, err := s.withSessions(ctx, deps)
	return recs, next, err
}

// Get returns a deposit within scope with its session; one outside it is NOT_FOUND, as if it
// did not exist.
func (s *Service) Get(ctx context.Context, scope domain.Scope, id int64) (Record, error) {
	d, err := store.New(s.pool).GetDeposit(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !scope.Includes(d.OperatorID)) {
		return Record{}, fault.New(fault.NotFound, "deposit %d not found", id)
	} else if err != nil {
		return Record{}, fault.Wrap(err, "load deposit")
	}
	recs, err := s.withSessions(ctx, []domain.Deposit{d})
	if err != nil {
		return Record{}, err
	}
	return recs[0], nil
}

// withSessions loads the sessions of deposits in one query.
func (s *Service) withSessions(ctx context.Context, deps []domain.Deposit) ([]Record, error) {
	var ids []string
	for _, d := range deps {
		if d.SessionID != "" {
			ids = append(ids, d.SessionID)
		}
	}
	sessions := map[string]domain.Session{}
	if len(ids) > 0 {
		var err error
		if sessions, err = store.New(s.pool).SessionsByIDs(ctx, ids); err != nil {
			return nil, fault.Wrap(err, "load deposit sessions")
		}
	}
	out := make([]Record, len(deps))
	for i, d := range deps {
		out[i] = Record{Deposit: d}
		if sess, ok := sessions[d.SessionID]; ok {
			out[i].Session = &sess
		}
	}
	return out, nil
}
