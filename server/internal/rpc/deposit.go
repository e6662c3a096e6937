package rpc

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/operator"
)

// DepositServer implements coffer.v1.DepositService: an operator reads its own deposits (a
// parent those of a sub-operator it names), to reconcile.
type DepositServer struct {
	Deposits  *deposit.Service
	Operators *operator.Service
}

// ListDeposits pages through the caller's (or a sub-operator's) deposits, newest first.
func (s *DepositServer) ListDeposits(ctx context.Context, req *cofferv1.DepositServiceListDepositsRequest) (*cofferv1.DepositServiceListDepositsResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	f := domain.DepositFilter{ExternalUserID: req.GetExternalUserId(), Statuses: depositStatuses().domains(req.GetStatuses()),
		ChainID: req.GetChainId(), DetectedAfter: optionalTime(req.GetDetectedAfter()),
		DetectedBefore: optionalTime(req.GetDetectedBefore()), Limit: int(req.GetPageSize())}
	recs, next, err := s.Deposits.Records(ctx, scope, f, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &cofferv1.DepositServiceListDepositsResponse{Deposits: protos(recs, operatorDepositProto), NextPageToken: next}, nil
}

// GetDeposit returns one of the caller's (or a named sub-operator's) deposits.
func (s *DepositServer) GetDeposit(ctx context.Context, req *cofferv1.GetDepositRequest) (*cofferv1.GetDepositResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	rec, err := s.Deposits.Get(ctx, scope, req.GetDepositId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.GetDepositResponse{Deposit: operatorDepositProto(rec)}, nil
}

// optionalTime is a request's optional time (nil when unset).
func optionalTime(t *timestamppb.Timestamp) *time.Time {
	if t == nil {
		return nil
	}
	v := t.AsTime()
	return &v
}

// operatorDepositProto is a deposit as its operator reconciles it. The settlement values are
// those of its DEPOSIT webhook (deposit.DepositEvent), present once it was credited.
func operatorDepositProto(r deposit.Record) *cofferv1.OperatorDeposit {
	d := r.Deposit
	p := &cofferv1.OperatorDeposit{DepositId: d.ID, OperatorId: d.OperatorID, IdempotencyKey: d.IdempotencyKey,
		ExternalUserId: d.ExternalUserID, GrossAmount: d.GrossAmount.String(), Type: cofferv1.DepositType_DEPOSIT_TYPE_NATIVE,
		TransactionHash: d.TxHash, ChainId: d.ChainID, Status: depositStatuses().proto(d.Status), DetectedAt: ts(d.DetectedAt),
		Currency: d.Currency, Address: d.Address, BlockNumber: blockNumber(d.BlockNumber), LogIndex: d.LogIndex,
		Manual: d.Manual, Treasury: d.Treasury}
	if d.ContractAddress != "" {
		p.Type, p.ContractAddress = cofferv1.DepositType_DEPOSIT_TYPE_ERC20, new(d.ContractAddress)
	}
	if d.SessionRef != "" {
		p.SessionRef = new(d.SessionRef)
	}
	if d.OperatorReference != "" {
		p.OperatorReference = new(d.OperatorReference)
	}
	if r.Session != nil {
		p.SessionAmount = new(money.Fiat(r.Session.Amount))
	}
	if d.SweepTxHash != "" {
		p.SweepTxHash = new(d.SweepTxHash)
	}
	if d.ConfirmedAt != nil {
		p.ConfirmedAt = ts(*d.ConfirmedAt)
	}
	if d.CreditedAt != nil {
		p.CreditedAt = ts(*d.CreditedAt)
	}
	if d.Amount != nil { // credited (now or before a reorg): the webhook's settlement values
		ev := deposit.DepositEvent(d, r.Session)
		p.Amount, p.FeeAmount = new(ev.GetAmount()), new(ev.GetFeeAmount())
		p.AmountInDollar, p.AmountInLocalCurrency, p.FeeInDollar = ev.AmountInDollar, ev.AmountInLocalCurrency, ev.FeeInDollar
		if ev.GetLocalCurrencyCode() != "" {
			p.LocalCurrencyCode, p.Pair = new(ev.GetLocalCurrencyCode()), new(ev.GetPair())
		}
		if d.FiatPerUSD.Valid {
			p.CurrentRate = new(ev.GetCurrentRate())
		}
	}
	return p
}
