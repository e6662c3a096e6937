package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// WithdrawalServer implements coffer.v1.WithdrawalService: an operator decides its own
// withdrawals (not its sub-operators') and reads its own (a parent those of a sub-operator it
// names).
type WithdrawalServer struct {
	Withdrawals *withdrawal.Service
	Operators   *operator.Service
}

// DecideWithdrawal approves or rejects an AWAITING_APPROVAL withdrawal.
func (s *WithdrawalServer) DecideWithdrawal(ctx context.Context, req *cofferv1.DecideWithdrawalRequest) (*cofferv1.DecideWithdrawalResponse, error) {
	op, scope, err := callerReach(ctx, auth.OwnOperator())
	if err != nil {
		return nil, err
	}
	d, err := s.Withdrawals.Decide(ctx, scope, req.GetWithdrawRequestId(), operatorDecisions().domain(req.GetDecision()),
		domain.OperatorActor(op.ID), req.GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.DecideWithdrawalResponse{WithdrawRequestId: d.Withdrawal.ID, WithdrawStatus: withdrawalStatuses().proto(d.Withdrawal.Status),
		SettlementTxHash: d.Withdrawal.SettlementTxHash, Held: d.Held != "", HeldReason: heldReasons().proto(d.Held)}, nil
}

// GetWithdrawal returns one of the operator's (or a named sub-operator's) withdrawals.
func (s *WithdrawalServer) GetWithdrawal(ctx context.Context, req *cofferv1.GetWithdrawalRequest) (*cofferv1.GetWithdrawalResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	w, _, err := s.Withdrawals.Get(ctx, scope, req.GetWithdrawRequestId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.GetWithdrawalResponse{Withdrawal: withdrawalProto(w)}, nil
}

// ListWithdrawals pages through the operator's (or a named sub-operator's) withdrawals, newest
// first.
func (s *WithdrawalServer) ListWithdrawals(ctx context.Context, req *cofferv1.WithdrawalServiceListWithdrawalsRequest) (*cofferv1.WithdrawalServiceListWithdrawalsResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	f := domain.WithdrawalFilter{ExternalUserID: req.GetExternalUserId(), Statuses: withdrawalStatuses().domains(req.GetStatuses()),
		ChainID: req.GetChainId(), CreatedAfter: optionalTime(req.GetCreatedAfter()), CreatedBefore: optionalTime(req.GetCreatedBefore()),
		Limit: int(req.GetPageSize())}
	list, next, err := s.Withdrawals.List(ctx, scope, f, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &cofferv1.WithdrawalServiceListWithdrawalsResponse{Withdrawals: protos(list, withdrawalProto), NextPageToken: next}, nil
}

func withdrawalProto(w domain.Withdrawal) *cofferv1.Withdrawal {
	p := &cofferv1.Withdrawal{
		WithdrawRequestId:  w.ID,
		OperatorId:         w.OperatorID,
		SessionRef:         w.SessionRef,
		ExternalUserId:     w.ExternalUserID,
		Type:               withdrawalTypes().proto(w.Type),
		Status:             withdrawalStatuses().proto(w.Status),
		ApprovalMode:       approvalModes().proto(w.ApprovalMode),
		Address:            w.Address,
		ChainId:            w.ChainID,
		CryptoCurrencyCode: w.Currency,
		FiatCurrencyCode:   w.FiatCurrency,
		FiatAmount:         money.Fiat(w.FiatAmount),
		CryptoAmountSent:   withdrawal.SentAmount(w),
		SettlementTxHash:   w.SettlementTxHash,
		HeldReason:         heldReasons().proto(withdrawal.HeldReason(w.HeldReason)),
		AdminNote:          w.AdminNote,
		RequestedAt:        ts(w.CreatedAt),
		UpdatedAt:          ts(w.UpdatedAt),
		ExpiresAt:          ts(w.ExpiresAt),
	}
	if w.AmountInUSD.Valid {
		p.AmountInUsd = rates.USDString(w.AmountInUSD.Decimal)
	}
	if w.CompletedAt != nil {
		p.CompletedAt = ts(*w.CompletedAt)
	}
	return p
}
