package rpc

import (
	"context"

	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/deposit"
)

// ListSweepBatches lists EIP-7702 batch sweeps.
func (s *OpsServer) ListSweepBatches(ctx context.Context, req *cofferv1.ListSweepBatchesRequest) (*cofferv1.ListSweepBatchesResponse, error) {
	size := int(req.GetPageSize())
	if size == 0 {
		size = 100
	}
	list, err := s.Deposits.ListBatches(ctx, req.GetChainId(), req.GetOpen(), size)
	if err != nil {
		return nil, err
	}
	return SweepBatchesProto(list), nil
}

// SweepBatchesProto is a list of batches as ListSweepBatches answers it (the CLI prints the same).
func SweepBatchesProto(list []deposit.ListedBatch) *cofferv1.ListSweepBatchesResponse {
	return &cofferv1.ListSweepBatchesResponse{Batches: protos(list, sweepBatchProto)}
}

func sweepBatchProto(b deposit.ListedBatch) *cofferv1.SweepBatch {
	p := &cofferv1.SweepBatch{Id: b.ID, ChainId: b.ChainID, Status: string(b.Status), CreatedAt: ts(b.CreatedAt),
		TxId: b.Tx.ID, TxState: string(b.Tx.State), MinedHash: b.Tx.MinedHash, MinedBlock: b.Tx.MinedBlock,
		Authorizations: int32(min(b.Authorizations, 1<<30)), //nolint:gosec // bounded
		Entries:        protos(b.Entries, sweepBatchEntryProto)}
	if b.DoneAt != nil {
		p.DoneAt = ts(*b.DoneAt)
	}
	return p
}

func sweepBatchEntryProto(e deposit.BatchEntry) *cofferv1.SweepBatchEntry {
	p := &cofferv1.SweepBatchEntry{SweepId: e.SweepID, Address: e.Address, Authorized: e.Authorized, Outcome: string(e.Outcome),
		Skips: e.Skips, SweepStatus: string(e.SweepStatus), CurrentBatchId: e.CurrentBatchID, DepositIds: e.DepositIDs}
	for _, a := range e.Assets {
		pa := &cofferv1.SweepBatchAsset{Currency: a.Currency, Amount: a.Amount.String(), Fee: "0"}
		if a.Fee != nil {
			pa.Fee = a.Fee.String()
		}
		if a.Token != (common.Address{}) {
			pa.Token = a.Token.Hex()
		}
		p.Assets = append(p.Assets, pa)
	}
	return p
}
