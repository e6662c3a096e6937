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
// the copy's request), its answer the copy's (answer): for a service-team admin only, refused
// before anything is read, who is then the actor. The copies' messages carry the same fields as
// the ops ones.
func panelCopy[Req, Res, Out any](ctx context.Context, ops func(context.Context, *Req) (*Res, error), req *Req,
	answer func(*Res) *Out,
) (*Out, error) {
	actor, err := serviceTeamAdmin(ctx)
	if err != nil {
		return nil, err
	}
	res, err := ops(context.WithValue(ctx, panelActorKey{}, actor), req)
	if err != nil {
		return nil, err
	}
	return answer(res), nil
}

// ops serves the OpsService calls the panel has copies of (the payout actions, dead letters,
// reorged deposits, replays); they use Deposits, Webhooks and Withdrawals only. Those that are
// not the service team's alone take the admin's scope from auth.Scope.
func (s *AdminServer) ops() *OpsServer {
	return &OpsServer{Deposits: s.Deposits, Webhooks: s.Webhooks, Withdrawals: s.Withdrawals}
}

// ListPayoutPauses lists pauses for the panel.
func (s *AdminServer) ListPayoutPauses(ctx context.Context, req *cofferv1.AdminServiceListPayoutPausesRequest) (*cofferv1.AdminServiceListPayoutPausesResponse, error) {
	return panelCopy(ctx, s.ops().ListPayoutPauses, &cofferv1.ListPayoutPausesRequest{IncludeResumed: req.GetIncludeResumed()},
		func(res *cofferv1.ListPayoutPausesResponse) *cofferv1.AdminServiceListPayoutPausesResponse {
			return &cofferv1.AdminServiceListPayoutPausesResponse{Pauses: res.GetPauses()}
		})
}

// PausePayouts pauses a scope from the panel.
func (s *AdminServer) PausePayouts(ctx context.Context, req *cofferv1.AdminServicePausePayoutsRequest) (*cofferv1.AdminServicePausePayoutsResponse, error) {
	return panelCopy(ctx, s.ops().PausePayouts, &cofferv1.PausePayoutsRequest{Target: req.GetTarget()},
		func(res *cofferv1.PausePayoutsResponse) *cofferv1.AdminServicePausePayoutsResponse {
			return &cofferv1.AdminServicePausePayoutsResponse{Pause: res.GetPause()}
		})
}

// ResumePayouts lifts a pause from the panel.
func (s *AdminServer) ResumePayouts(ctx context.Context, req *cofferv1.AdminServiceResumePayoutsRequest) (*cofferv1.AdminServiceResumePayoutsResponse, error) {
	return panelCopy(ctx, s.ops().ResumePayouts, &cofferv1.ResumePayoutsRequest{Target: req.GetTarget()},
		func(res *cofferv1.ResumePayoutsResponse) *cofferv1.AdminServiceResumePayoutsResponse {
			return &cofferv1.AdminServiceResumePayoutsResponse{Pause: res.GetPause()}
		})
}

// ListChainTransactions lists transactions for the panel.
func (s *AdminServer) ListChainTransactions(ctx context.Context, req *cofferv1.AdminServiceListChainTransactionsRequest) (*cofferv1.AdminServiceListChainTransactionsResponse, error) {
	return panelCopy(ctx, s.ops().ListChainTransactions, &cofferv1.ListChainTransactionsRequest{Stuck: req.GetStuck()},
		func(res *cofferv1.ListChainTransactionsResponse) *cofferv1.AdminServiceListChainTransactionsResponse {
			return &cofferv1.AdminServiceListChainTransactionsResponse{Transactions: res.GetTransactions()}
		})
}

// ResendChainTransaction re-sends a pending transaction from the panel.
func (s *AdminServer) ResendChainTransaction(ctx context.Context, req *cofferv1.AdminServiceResendChainTransactionRequest) (*cofferv1.AdminServiceResendChainTransactionResponse, error) {
	return panelCopy(ctx, s.ops().ResendChainTransaction, &cofferv1.ResendChainTransactionRequest{Target: req.GetTarget()},
		func(res *cofferv1.ResendChainTransactionResponse) *cofferv1.AdminServiceResendChainTransactionResponse {
			return &cofferv1.AdminServiceResendChainTransactionResponse{Transaction: res.GetTransaction()}
		})
}

// CancelChainTransaction cancels a pending payout from the panel.
func (s *AdminServer) CancelChainTransaction(ctx context.Context, req *cofferv1.AdminServiceCancelChainTransactionRequest) (*cofferv1.AdminServiceCancelChainTransactionResponse, error) {
	return panelCopy(ctx, s.ops().CancelChainTransaction, &cofferv1.CancelChainTransactionRequest{Target: req.GetTarget()},
		func(res *cofferv1.CancelChainTransactionResponse) *cofferv1.AdminServiceCancelChainTransactionResponse {
			return &cofferv1.AdminServiceCancelChainTransactionResponse{Transaction: res.GetTransaction()}
		})
}

// FailChainTransaction marks a payout failed from the panel.
func (s *AdminServer) FailChainTransaction(ctx context.Context, req *cofferv1.AdminServiceFailChainTransactionRequest) (*cofferv1.AdminServiceFailChainTransactionResponse, error) {
	return panelCopy(ctx, s.ops().FailChainTransaction, &cofferv1.FailChainTransactionRequest{Target: req.GetTarget()},
		func(res *cofferv1.FailChainTransactionResponse) *cofferv1.AdminServiceFailChainTransactionResponse {
			return &cofferv1.AdminServiceFailChainTransactionResponse{Transaction: res.GetTransaction()}
		})
}
