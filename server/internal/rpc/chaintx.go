package rpc

import (
	"context"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// ChainTxProto is a transaction as the API answers it (the CLI prints the same).
func ChainTxProto(t withdrawal.TxWithActions) *cofferv1.ChainTransaction {
	p := &cofferv1.ChainTransaction{Id: t.ID, ChainId: t.ChainID, FromAddress: t.From, ToAddress: t.To, Nonce: t.Nonce,
		Value: t.Value.String(), Purpose: t.Purpose, Ref: t.Ref, State: string(t.State), MinedHash: t.MinedHash,
		MinedBlock: t.MinedBlock, RequestedAction: string(t.RequestedAction), WithdrawalId: t.WithdrawalID, CreatedAt: ts(t.CreatedAt)}
	for _, a := range t.Attempts {
		pa := &cofferv1.ChainTransactionAttempt{Hash: a.Hash, TipCap: a.TipCap.String(), FeeCap: a.FeeCap.String(), Cancel: a.Cancel,
			CreatedAt: ts(a.CreatedAt)}
		if a.BroadcastAt != nil {
			pa.BroadcastAt = ts(*a.BroadcastAt)
		}
		p.Attempts = append(p.Attempts, pa)
	}
	for _, a := range t.Actions {
		p.Actions = append(p.Actions, &cofferv1.ChainTransactionAction{Action: string(a.Action), Actor: string(a.Actor), Reason: a.Reason,
			CreatedAt: ts(a.CreatedAt)})
	}
	return p
}

// DefaultStuckAfter is how long a pending transaction waits before a --stuck list shows it.
const DefaultStuckAfter = 2 * time.Minute

// ListChainTransactions lists transactions.
func (s *OpsServer) ListChainTransactions(ctx context.Context, req *cofferv1.ListChainTransactionsRequest) (*cofferv1.ListChainTransactionsResponse, error) {
	after := DefaultStuckAfter
	if d := req.GetStuckAfter(); d != nil {
		after = d.AsDuration()
	}
	size := int(req.GetPageSize())
	if size == 0 {
		size = 100
	}
	list, err := s.Withdrawals.ChainTxs(ctx, req.GetStuck(), after, size)
	if err != nil {
		return nil, err
	}
	return ChainTxsProto(list), nil
}

// ChainTxsProto is a list of transactions as ListChainTransactions answers it (the CLI prints
// the same).
func ChainTxsProto(list []withdrawal.TxWithActions) *cofferv1.ListChainTransactionsResponse {
	return &cofferv1.ListChainTransactionsResponse{Transactions: protos(list, ChainTxProto)}
}

// ResendChainTransaction asks the worker to re-send a pending transaction at a higher fee.
func (s *OpsServer) ResendChainTransaction(ctx context.Context, req *cofferv1.ResendChainTransactionRequest) (*cofferv1.ResendChainTransactionResponse, error) {
	t, err := s.Withdrawals.RequestTx(ctx, req.GetTarget().GetId(), domain.TxResend, opsCaller(ctx), req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.ResendChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}

// CancelChainTransaction asks the worker to cancel a pending payout.
func (s *OpsServer) CancelChainTransaction(ctx context.Context, req *cofferv1.CancelChainTransactionRequest) (*cofferv1.CancelChainTransactionResponse, error) {
	t, err := s.Withdrawals.RequestTx(ctx, req.GetTarget().GetId(), domain.TxCancel, opsCaller(ctx), req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.CancelChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}

// FailChainTransaction marks a payout that can never be mined failed.
func (s *OpsServer) FailChainTransaction(ctx context.Context, req *cofferv1.FailChainTransactionRequest) (*cofferv1.FailChainTransactionResponse, error) {
	t, err := s.Withdrawals.FailPayout(ctx, req.GetTarget().GetId(), opsCaller(ctx), req.GetTarget().GetReason())
	if err != nil {
		return nil, err
	}
	return &cofferv1.FailChainTransactionResponse{Transaction: ChainTxProto(t)}, nil
}
