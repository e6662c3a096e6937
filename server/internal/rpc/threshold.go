package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
)

// ThresholdProto is a wallet threshold as the API answers it (the CLI prints the same).
func ThresholdProto(t domain.WalletThreshold) *cofferv1.WalletThreshold {
	p := &cofferv1.WalletThreshold{ChainId: t.ChainID, Wallet: t.Wallet, Currency: t.Currency, SetBy: string(t.SetBy), Reason: t.Reason,
		SetAt: ts(t.SetAt)}
	if !t.Removed {
		p.Amount = t.Amount.String()
	}
	return p
}

// SetWalletThreshold sets or removes a wallet's low-balance threshold.
func (s *OpsServer) SetWalletThreshold(ctx context.Context, req *cofferv1.SetWalletThresholdRequest) (*cofferv1.SetWalletThresholdResponse, error) {
	t, err := s.Funds.SetThreshold(ctx, funds.ThresholdChange{ChainID: req.GetChainId(), Wallet: req.GetWallet(), Currency: req.GetCurrency(),
		Amount: req.GetAmount(), Reason: req.GetReason(), Actor: opsActor})
	if err != nil {
		return nil, err
	}
	return &cofferv1.SetWalletThresholdResponse{Threshold: ThresholdProto(t)}, nil
}

// ListWalletThresholds lists the thresholds in force.
func (s *OpsServer) ListWalletThresholds(ctx context.Context, _ *cofferv1.ListWalletThresholdsRequest) (*cofferv1.ListWalletThresholdsResponse, error) {
	list, err := s.Funds.Thresholds(ctx)
	if err != nil {
		return nil, err
	}
	return ThresholdsProto(list), nil
}

// ThresholdsProto is a list of thresholds as ListWalletThresholds answers it (the CLI prints
// the same).
func ThresholdsProto(list []domain.WalletThreshold) *cofferv1.ListWalletThresholdsResponse {
	return &cofferv1.ListWalletThresholdsResponse{Thresholds: protos(list, ThresholdProto)}
}
