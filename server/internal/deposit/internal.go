package deposit

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// InternalLogIndex is the log index that keys the internal transfer with this ordinal in its
// transaction (chain.InternalTransfer.Ordinal): -2, -3, …, apart from the top-level transfer's
// -1 and the token logs' 0, 1, …. The ordinal counts every internal transfer of the
// execution, so the scanner and a replay give a transfer the same key.
func InternalLogIndex(ordinal int) int64 { return -2 - int64(ordinal) }

// traceBlock traces a scanned block by hash, so the trace is of the very block whose hash the
// scan links into the chain.
func traceBlock(ctx context.Context, n chain.Network, c *chain.Client, b *types.Block) ([]chain.TxTrace, error) {
	traces, err := c.TraceBlock(ctx, b.Hash())
	if err != nil {
		return nil, fmt.Errorf("deposit: trace block %d of chain %d: %w", b.NumberU64(), n.ChainID, err)
	}
	if len(traces) != len(b.Transactions()) {
		return nil, fmt.Errorf("deposit: the trace of block %s has %d transactions, the block %d", b.Hash().Hex(), len(traces), len(b.Transactions()))
	}
	return traces, nil
}

// internalDeposits returns the internal transfers of a traced block (none when it was not
// traced) to watched deposit addresses (owners) that moved value (no reverted frame above
// them) in a successful transaction not sent by one of Coffer's own wallets (own: their
// transfers to deposit addresses are gas top-ups).
func (s *Service) internalDeposits(ctx context.Context, q *store.Queries, n chain.Network, c *chain.Client, rb readBlock,
	signer types.Signer, own map[common.Address]bool, owners map[common.Address]store.DepositAddress) ([]domain.Deposit, error) {
	b, txs := rb.block, rb.block.Transactions()
	var found []domain.Deposit
	for i, tr := range rb.traces {
		tx := txs[i]
		if tr.TxHash != (common.Hash{}) && tr.TxHash != tx.Hash() {
			return nil, fmt.Errorf("deposit: the trace of block %s lists %s where the block has %s", b.Hash().Hex(), tr.TxHash.Hex(), tx.Hash().Hex())
		}
		var paid []chain.InternalTransfer
		for _, t := range chain.InternalTransfers(tr.Root) {
			if _, watched := owners[t.To]; watched && !t.Reverted {
				paid = append(paid, t)
			}
		}
		if len(paid) == 0 {
			continue
		}
		if sender, err := types.Sender(signer, tx); err == nil && own[sender] {
			continue
		}
		// The receipt, not the tracer's top-level error, is the authority on whether the
		// transaction succeeded.
		r, err := c.Receipt(ctx, tx.Hash())
		if err != nil {
			return nil, err
		}
		if r.Status != types.ReceiptStatusSuccessful {
			continue
		}
		for _, t := range paid {
			d, err := s.newDeposit(ctx, q, n, b, tx.Hash(), InternalLogIndex(t.Ordinal), owners[t.To], t.To, n.NativeSymbol, n.NativeDecimals, common.Address{}, t.Value)
			if err != nil {
				return nil, err
			}
			found = append(found, d)
		}
	}
	return found, nil
}
