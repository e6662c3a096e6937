package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// serviceTeamAdmin is the calling admin when it is a service-team admin (bound to no
// operator): the payout actions act for every operator, so operator-bound admins are refused.
func serviceTeamAdmin(ctx context.Context) (domain.Actor, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return "", err
	}
	if a.OperatorID != "" {
		return "", fault.New(fault.Forbidden, "payout pauses and chain transactions are the service team's: an operator's admin cannot act on them")
	}
	return domain.AdminActor(a.ID), nil
}

// ListPayoutPauses lists pauses for the panel.
func (s *AdminServer) ListPayoutPauses(ctx context.Context, req *cofferv1.AdminServiceListPayoutPausesRequest) (*cofferv1.AdminServiceListPayoutPausesResponse, error) {
	if _, err := serviceTeamAdmin(ctx); err != nil {
		return nil, err
	}
	list, err := s.Withdrawals.PayoutPauses(ctx, req.GetIncludeResumed(), 0)
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceListPayoutPausesResponse{Pauses: protos(list, PauseProto)}, nil
}

// PausePayouts pauses a scope from the panel.
func (s *AdminServer) PausePayouts(ctx context.Context, req *cofferv1.AdminServicePausePayoutsRequest) (*cofferv1.AdminServicePausePayoutsResponse, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.Withdrawals.PausePayouts(ctx, pauseOf(req.GetTarget(), actor))
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServicePausePayoutsResponse{Pause: PauseProto(p)}, nil
}

// ResumePayouts lifts a pause from the panel.
func (s *AdminServer) ResumePayouts(ctx context.Context, req *cofferv1.AdminServiceResumePayoutsRequest) (*cofferv1.AdminServiceResumePayoutsResponse, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.Withdrawals.ResumePayouts(ctx, pauseOf(req.GetTarget(), actor))
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceResumePayoutsResponse{Pause: PauseProto(p)}, nil
}

// ListChainTransactions lists transactions for the panel.
func (s *AdminServer) ListChainTransactions(ctx context.Context, req *cofferv1.AdminServiceListChainTransactionsRequest) (*cofferv1.AdminServiceListChainTransactionsResponse, error) {
	if _, err := serviceTeamAdmin(ctx); err != nil {
		return nil, err
	}
	list, err := s.Withdrawals.ChainTxs(ctx, req.GetStuck(), DefaultStuckAfter, 100)
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceListChainTransactionsResponse{Transactions: protos(list, ChainTxProto)}, nil
}

// ResendChainTransaction re-sends a pending transaction from the panel.
func (s *AdminServer) ResendChainTransaction(ctx context.Context, req *cofferv1.AdminServiceResendChainTransactionRequest) (*cofferv1.AdminServiceResendChainTransactionResponse, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Withdrawals.RequestTx(ctx, req.GetTarget().GetId(), domain.TxResend, actor, req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceResendChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}

// CancelChainTransaction cancels a pending payout from the panel.
func (s *AdminServer) CancelChainTransaction(ctx context.Context, req *cofferv1.AdminServiceCancelChainTransactionRequest) (*cofferv1.AdminServiceCancelChainTransactionResponse, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Withdrawals.RequestTx(ctx, req.GetTarget().GetId(), domain.TxCancel, actor, req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceCancelChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}

// FailChainTransaction marks a payout failed from the panel.
func (s *AdminServer) FailChainTransaction(ctx context.Context, req *cofferv1.AdminServiceFailChainTransactionRequest) (*cofferv1.AdminServiceFailChainTransactionResponse, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Withdrawals.FailPayout(ctx, req.GetTarget().GetId(), actor, req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceFailChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}
