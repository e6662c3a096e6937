package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

func pauseScopes() enum[domain.PauseScope, cofferv1.PauseScope] {
	return byName[cofferv1.PauseScope](domain.PauseScopes())
}

// PauseProto is a payout pause as the API answers it (the CLI prints the same).
func PauseProto(p domain.PayoutPause) *cofferv1.PayoutPause {
	out := &cofferv1.PayoutPause{Id: p.ID, Scope: pauseScopes().proto(p.Scope), ChainId: p.ChainID, OperatorId: p.OperatorID,
		Reason: p.Reason, PausedBy: string(p.PausedBy), PausedAt: ts(p.PausedAt), ResumedBy: string(p.ResumedBy),
		ResumeReason: p.ResumeReason}
	if p.ResumedAt != nil {
		out.ResumedAt = ts(*p.ResumedAt)
	}
	return out
}

func pauseOf(t *cofferv1.PayoutPauseTarget, actor domain.Actor) withdrawal.Pause {
	return withdrawal.Pause{Scope: pauseScopes().domain(t.GetScope()), ChainID: t.GetChainId(), OperatorID: t.GetOperatorId(),
		Reason: t.GetReason(), Actor: actor}
}

// PausePayouts pauses a scope's payouts.
func (s *OpsServer) PausePayouts(ctx context.Context, req *cofferv1.PausePayoutsRequest) (*cofferv1.PausePayoutsResponse, error) {
	p, err := s.Withdrawals.PausePayouts(ctx, pauseOf(req.GetTarget(), opsCaller(ctx)))
	if err != nil {
		return nil, err
	}
	return &cofferv1.PausePayoutsResponse{Pause: PauseProto(p)}, nil
}

// ResumePayouts lifts a scope's pause.
func (s *OpsServer) ResumePayouts(ctx context.Context, req *cofferv1.ResumePayoutsRequest) (*cofferv1.ResumePayoutsResponse, error) {
	p, err := s.Withdrawals.ResumePayouts(ctx, pauseOf(req.GetTarget(), opsCaller(ctx)))
	if err != nil {
		return nil, err
	}
	return &cofferv1.ResumePayoutsResponse{Pause: PauseProto(p)}, nil
}

// ListPayoutPauses lists pauses.
func (s *OpsServer) ListPayoutPauses(ctx context.Context, req *cofferv1.ListPayoutPausesRequest) (*cofferv1.ListPayoutPausesResponse, error) {
	list, err := s.Withdrawals.PayoutPauses(ctx, req.GetIncludeResumed(), 0)
	if err != nil {
		return nil, err
	}
	return PausesProto(list), nil
}

// PausesProto is a list of pauses as ListPayoutPauses answers it (the CLI prints the same).
func PausesProto(list []domain.PayoutPause) *cofferv1.ListPayoutPausesResponse {
	return &cofferv1.ListPayoutPausesResponse{Pauses: protos(list, PauseProto)}
}
