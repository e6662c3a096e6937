package deposit

import (
	"context"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
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
	if pageToken != "" {
		id, err := pagetoken.Decode[pagetoken.Seq](depositPages, pageToken)
		if err != nil {
			return nil, "", err
		}
		f.BeforeID = int64(id)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	asked := ""
	if len(f.OperatorIDs) == 1 {
		asked = f.OperatorIDs[0]
	}
	narrowed, ok := scope.Narrow(asked)
	if !ok {
		return nil, "", fault.New(fault.NotFound, "operator not found")
	}
	f.OperatorIDs = auth.OperatorIDs(narrowed)
	deps, err := store.New(s.pool).ListDeposits(ctx, f)
	if err != nil {
		return nil, "", fault.Wrap(err, "list deposits")
	}
	next := ""
	if len(deps) == f.Limit {
		next = pagetoken.Encode(depositPages, pagetoken.Seq(deps[len(deps)-1].ID))
	}
	return deps, next, nil
}

// depositPages names List's page tokens.
const depositPages = "deposits"
