package rpc

import (
	"context"
	"strings"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/operator"
)

// BalanceServer implements coffer.v1.BalanceService: an operator reads its own funds (a parent
// those of its sub-operators too).
type BalanceServer struct {
	Funds     *funds.Ledger
	Operators *operator.Service
}

// ListBalances lists the caller's (or a sub-operator's) funds.
func (s *BalanceServer) ListBalances(ctx context.Context, req *cofferv1.ListBalancesRequest) (*cofferv1.ListBalancesResponse, error) {
	op, tree, err := callerReach(ctx, auth.SubOperators(s.Operators))
	if err != nil {
		return nil, err
	}
	list, err := s.Funds.OwnBalances(ctx, tree, op.ID, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListBalancesResponse{Items: protos(list, balanceProto)}, nil
}

func balanceProto(b funds.Balance) *cofferv1.OperatorBalance {
	return &cofferv1.OperatorBalance{OperatorId: b.OperatorID, ChainId: b.ChainID, Currency: b.Currency,
		Available: b.Available.StringFixed(b.Decimals), Reserved: b.Reserved.StringFixed(b.Decimals), Decimals: b.Decimals}
}

// GetTreasuryAddress returns the operator's treasury address, assigning it on first use.
func (s *OpsServer) GetTreasuryAddress(ctx context.Context, req *cofferv1.GetTreasuryAddressRequest) (*cofferv1.GetTreasuryAddressResponse, error) {
	addr, err := s.Deposits.TreasuryOn(ctx, strings.ToLower(req.GetOperatorId()), req.GetChainId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.GetTreasuryAddressResponse{Address: addr.Hex(), ChainId: req.GetChainId()}, nil
}

// ListOperatorBalances lists an operator's funds.
func (s *OpsServer) ListOperatorBalances(ctx context.Context, req *cofferv1.ListOperatorBalancesRequest) (*cofferv1.ListOperatorBalancesResponse, error) {
	list, err := s.Funds.ByOperator(ctx, domain.AllOperators(), req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	res := &cofferv1.ListOperatorBalancesResponse{}
	for _, f := range list {
		res.Items = append(res.Items, protos(f.Balances, balanceProto)...)
	}
	return res, nil
}

// AdjustOperatorFunds applies a service-team entry.
func (s *OpsServer) AdjustOperatorFunds(ctx context.Context, req *cofferv1.AdjustOperatorFundsRequest) (*cofferv1.AdjustOperatorFundsResponse, error) {
	b, err := s.Funds.Adjust(ctx, funds.Adjustment{OperatorID: strings.ToLower(req.GetOperatorId()), ChainID: req.GetChainId(),
		Currency: req.GetCurrency(), Amount: req.GetAmount(), Note: req.GetNote(), Actor: "service-team:ops-api"})
	if err != nil {
		return nil, err
	}
	return &cofferv1.AdjustOperatorFundsResponse{Balance: balanceProto(b)}, nil
}

// Reconcile checks the books against the chain.
func (s *OpsServer) Reconcile(ctx context.Context, req *cofferv1.ReconcileRequest) (*cofferv1.ReconcileResponse, error) {
	lines, err := s.Reconciler.Reconcile(ctx, req.GetChainId())
	if err != nil {
		return nil, err
	}
	return ReconcileProto(lines, time.Now()), nil
}

// ReconcileProto is a reconciliation as the API answers it (the CLI prints the same).
func ReconcileProto(lines []funds.Line, at time.Time) *cofferv1.ReconcileResponse {
	res := &cofferv1.ReconcileResponse{Ok: true, CheckedAt: ts(at)}
	for _, l := range lines {
		p := &cofferv1.ReconciliationLine{ChainId: l.ChainID, Currency: l.Currency, Holdings: l.Holdings.String(),
			Available: l.Available.String(), Reserved: l.Reserved.String(), PaidOut: l.PaidOut.String(), Owed: l.Owed.String(),
			Surplus: l.Surplus.String(), Ok: l.OK, Shortfall: l.Shortfall.String()}
		for _, w := range l.ByWallet {
			p.Wallets = append(p.Wallets, &cofferv1.ReconciliationWallet{Role: w.Role, Address: w.Address.Hex(), Amount: w.Amount.String()})
		}
		res.Lines = append(res.Lines, p)
		res.Ok = res.Ok && l.OK
	}
	return res
}

// ListOperatorFunds lists the funds of the operators in the admin's scope.
func (s *AdminServer) ListOperatorFunds(ctx context.Context, req *cofferv1.ListOperatorFundsRequest) (*cofferv1.ListOperatorFundsResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.Funds.ByOperator(ctx, a.Scope(), req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	res := &cofferv1.ListOperatorFundsResponse{}
	for _, f := range list {
		res.Operators = append(res.Operators, &cofferv1.OperatorFunds{OperatorId: f.Operator.ID, OperatorName: f.Operator.Name,
			Balances: protos(f.Balances, balanceProto)})
	}
	return res, nil
}
