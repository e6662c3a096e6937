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

// panelActorKey carries the admin a panel copy of an OpsService call acts for (panelCopy, and
// ReplayDeposit for any admin of the scope).
type panelActorKey struct{}

// opsCaller is who acts in an OpsService handler that keeps an audit actor (payout actions,
// replays): the admin of an AdminService copy, else the ops API.
func opsCaller(ctx context.Context) domain.Actor {
	if a, ok := ctx.Value(panelActorKey{}).(domain.Actor); ok {
		return a
	}
	return opsActor
}

// panelCopy serves an AdminService copy of an OpsService payout call by that call (ops, on
// the copy's request): for a service-team admin only, refused before anything is read, who is
// then the actor. The copies' messages carry the same fields as the ops ones.
func panelCopy[Req, Res any](ctx context.Context, ops func(context.Context, *Req) (*Res, error), req *Req) (*Res, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	return ops(context.WithValue(ctx, panelActorKey{}, actor), req)
}

// ops serves the OpsService calls the panel has copies of (the payout actions, dead letters,
// reorged deposits, replays); they use Deposits, Webhooks and Withdrawals only. Those that are
// not the service team's alone take the admin's scope from auth.Scope.
func (s *AdminServer) ops() *OpsServer {
	return &OpsServer{Deposits: s.Deposits, Webhooks: s.Webhooks, Withdrawals: s.Withdrawals}
}

// ListPayoutPauses lists pauses for the panel.
func (s *AdminServer) ListPayoutPauses(ctx context.Context, req *cofferv1.AdminServiceListPayoutPausesRequest) (*cofferv1.AdminServiceListPayoutPausesResponse, error) {
	res, err := panelCopy(ctx, s.ops().ListPayoutPauses, &cofferv1.ListPayoutPausesRequest{IncludeResumed: req.GetIncludeResumed()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceListPayoutPausesResponse{Pauses: res.GetPauses()}, nil
}

// PausePayouts pauses a scope from the panel.
func (s *AdminServer) PausePayouts(ctx context.Context, req *cofferv1.AdminServicePausePayoutsRequest) (*cofferv1.AdminServicePausePayoutsResponse, error) {
	res, err := panelCopy(ctx, s.ops().PausePayouts, &cofferv1.PausePayoutsRequest{Target: req.GetTarget()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServicePausePayoutsResponse{Pause: res.GetPause()}, nil
}

// ResumePayouts lifts a pause from the panel.
func (s *AdminServer) ResumePayouts(ctx context.Context, req *cofferv1.AdminServiceResumePayoutsRequest) (*cofferv1.AdminServiceResumePayoutsResponse, error) {
	res, err := panelCopy(ctx, s.ops().ResumePayouts, &cofferv1.ResumePayoutsRequest{Target: req.GetTarget()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceResumePayoutsResponse{Pause: res.GetPause()}, nil
}

// ListChainTransactions lists transactions for the panel.
func (s *AdminServer) ListChainTransactions(ctx context.Context, req *cofferv1.AdminServiceListChainTransactionsRequest) (*cofferv1.AdminServiceListChainTransactionsResponse, error) {
	res, err := panelCopy(ctx, s.ops().ListChainTransactions, &cofferv1.ListChainTransactionsRequest{Stuck: req.GetStuck()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceListChainTransactionsResponse{Transactions: res.GetTransactions()}, nil
}

// ResendChainTransaction re-sends a pending transaction from the panel.
func (s *AdminServer) ResendChainTransaction(ctx context.Context, req *cofferv1.AdminServiceResendChainTransactionRequest) (*cofferv1.AdminServiceResendChainTransactionResponse, error) {
	res, err := panelCopy(ctx, s.ops().ResendChainTransaction, &cofferv1.ResendChainTransactionRequest{Target: req.GetTarget()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceResendChainTransactionResponse{Transaction: res.GetTransaction()}, nil
}

// CancelChainTransaction cancels a pending payout from the panel.
func (s *AdminServer) CancelChainTransaction(ctx context.Context, req *cofferv1.AdminServiceCancelChainTransactionRequest) (*cofferv1.AdminServiceCancelChainTransactionResponse, error) {
	res, err := panelCopy(ctx, s.ops().CancelChainTransaction, &cofferv1.CancelChainTransactionRequest{Target: req.GetTarget()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceCancelChainTransactionResponse{Transaction: res.GetTransaction()}, nil
}

// FailChainTransaction marks a payout failed from the panel.
func (s *AdminServer) FailChainTransaction(ctx context.Context, req *cofferv1.AdminServiceFailChainTransactionRequest) (*cofferv1.AdminServiceFailChainTransactionResponse, error) {
	res, err := panelCopy(ctx, s.ops().FailChainTransaction, &cofferv1.FailChainTransactionRequest{Target: req.GetTarget()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdminServiceFailChainTransactionResponse{Transaction: res.GetTransaction()}, nil
}
