package withdrawal

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// A payout pause (OpsService.PausePayouts, `coffer ops pause`) stops payouts from being
// decided or sent without losing any: while one covers a withdrawal (global, its chain, its
// operator), an APPROVE is held TEMPORARILY_UNAVAILABLE (the spec's retryable held reason),
// an admin COMPLETED is refused UNAVAILABLE with the pause's reason, and a payout already
// queued is not signed, or not broadcast for the first time, until the pause is lifted: its
// job snoozes. A payout already on the network is followed to its end (a pause cannot recall
// it; cancel it instead). Pausing and resuming are audited on the pause's row.

// ErrPaused marks the refusal of an admin COMPLETED while payouts are paused.
var ErrPaused = errors.New("payouts paused")

// Pause describes a pause to make, or which scope to resume.
type Pause struct {
	Scope      domain.PauseScope
	ChainID    int64
	OperatorID string
	Reason     string
	Actor      domain.Actor
}

func (s *Service) checkPauseScope(ctx context.Context, p Pause) (domain.PayoutPause, error) {
	k := domain.PayoutPause{Scope: p.Scope}
	if strings.TrimSpace(p.Reason) == "" {
		return k, fault.Invalid("reason", "a reason is required (it is kept in the audit trail)")
	}
	switch p.Scope {
	case domain.PauseGlobal:
		if p.ChainID != 0 || p.OperatorID != "" {
			return k, fault.Invalid("scope", "a global pause takes no chain id or operator")
		}
	case domain.PauseChain:
		if p.OperatorID != "" {
			return k, fault.Invalid("operator_id", "a chain pause takes no operator")
		}
		if _, ok := s.chains.Network(p.ChainID); !ok {
			return k, fault.New(fault.NotFound, "chain %d is not configured", p.ChainID)
		}
		k.ChainID = p.ChainID
	case domain.PauseOperator:
		if p.ChainID != 0 {
			return k, fault.Invalid("chain_id", "an operator pause takes no chain id")
		}
		if _, err := store.New(s.pool).GetOperator(ctx, p.OperatorID); errors.Is(err, store.ErrNotFound) {
			return k, fault.New(fault.NotFound, "operator %s not found", p.OperatorID)
		} else if err != nil {
			return k, fault.Wrap(err, "load operator")
		}
		k.OperatorID = p.OperatorID
	default:
		return k, fault.Invalid("scope", "must be global, chain or operator")
	}
	return k, nil
}

// PausePayouts pauses the payouts of a scope. Pausing a scope already paused is CONFLICT
// naming the active pause (the first pause and its reason stay).
func (s *Service) PausePayouts(ctx context.Context, p Pause) (domain.PayoutPause, error) {
	k, err := s.checkPauseScope(ctx, p)
	if err != nil {
		return k, err
	}
	k.Reason, k.PausedBy = strings.TrimSpace(p.Reason), p.Actor
	out, err := store.New(s.pool).InsertPayoutPause(ctx, k)
	if _, dup := store.IsUniqueViolation(err); dup {
		return out, fault.New(fault.Conflict, "already paused: resume it first to change the reason")
	} else if err != nil {
		return out, fault.Wrap(err, "pause payouts")
	}
	s.logPause(ctx, "payouts paused", out, out.PausedBy, out.Reason)
	return out, nil
}

// ResumePayouts lifts the active pause of a scope; NOT_FOUND when that scope is not paused.
// Payouts the pause held go out on their jobs' next run.
func (s *Service) ResumePayouts(ctx context.Context, p Pause) (domain.PayoutPause, error) {
	k, err := s.checkPauseScope(ctx, p)
	if err != nil {
		return k, err
	}
	out, err := store.New(s.pool).ResumePayoutPause(ctx, k, p.Actor, strings.TrimSpace(p.Reason))
	if errors.Is(err, store.ErrNotFound) {
		return out, fault.New(fault.NotFound, "that scope is not paused")
	} else if err != nil {
		return out, fault.Wrap(err, "resume payouts")
	}
	s.logPause(ctx, "payouts resumed", out, out.ResumedBy, out.ResumeReason)
	return out, nil
}

// logPause logs a pause or a resume (a warning: payouts stop or go out again).
func (s *Service) logPause(ctx context.Context, msg string, p domain.PayoutPause, actor domain.Actor, reason string) {
	s.log.WarnContext(ctx, msg, "scope", p.Scope, "chain_id", p.ChainID, "operator_id", p.OperatorID,
		"actor", actor, "reason", reason)
}

// PayoutPauses lists the active pauses, or with all every pause and resume (newest first, at
// most limit).
func (s *Service) PayoutPauses(ctx context.Context, all bool, limit int) ([]domain.PayoutPause, error) {
	if limit <= 0 || limit > 500 {
		limit = 500
	}
	list, err := store.New(s.pool).PayoutPauses(ctx, all, int32(limit))
	if err != nil {
		return nil, fault.Wrap(err, "list pauses")
	}
	return list, nil
}

// pausedFor is the pause covering w's payout, or nil. q may be the deciding transaction.
func pausedFor(ctx context.Context, q *store.Queries, w domain.Withdrawal) (*domain.PayoutPause, error) {
	p, err := q.ActivePayoutPause(ctx, w.ChainID, w.OperatorID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil //nolint:nilnil // no pause is not an error
	}
	if err != nil {
		return nil, fault.Wrap(err, "read payout pauses")
	}
	return &p, nil
}

// refuseIfPaused is an admin COMPLETED's pause check: UNAVAILABLE with the pause's reason.
func refuseIfPaused(ctx context.Context, tx pgx.Tx, w domain.Withdrawal) error {
	p, err := pausedFor(ctx, store.New(tx), w)
	if err != nil || p == nil {
		return err
	}
	return &fault.Error{Code: fault.Unavailable, Cause: ErrPaused,
		Message: p.Describe() + "; nothing was reserved or paid: set it COMPLETED again once payouts are resumed"}
}

// PauseLabels lists the active pauses for the coffer_payouts_paused gauge.
func (s *Service) PauseLabels(ctx context.Context) ([]metrics.PauseLabels, error) {
	list, err := store.New(s.pool).PayoutPauses(ctx, false, 500)
	out := make([]metrics.PauseLabels, 0, len(list))
	for _, p := range list {
		out = append(out, metrics.PauseLabels{Scope: string(p.Scope), ChainID: p.ChainID, OperatorID: p.OperatorID})
	}
	return out, err
}
