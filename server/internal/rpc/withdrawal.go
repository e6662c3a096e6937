package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// WithdrawalServer implements coffer.v1.WithdrawalService.
type WithdrawalServer struct{}

// DecideWithdrawal is delivered by the withdrawals milestone.
func (s *WithdrawalServer) DecideWithdrawal(ctx context.Context, _ *cofferv1.DecideWithdrawalRequest) (*cofferv1.DecideWithdrawalResponse, error) {
	if _, err := callerOperator(ctx); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "withdrawal decisions are not available yet")
}

// GetWithdrawal is delivered by the withdrawals milestone.
func (s *WithdrawalServer) GetWithdrawal(ctx context.Context, _ *cofferv1.GetWithdrawalRequest) (*cofferv1.GetWithdrawalResponse, error) {
	if _, err := callerOperator(ctx); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "withdrawals are not available yet")
}
