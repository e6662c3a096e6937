package deposit

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Sweeps that left the chain while their deposits stayed. A reorg deeper than the depth may
// take away only a sweep's block: its deposits' transfers were mined before the fork (or are
// on the new branch too), the sweep after it. A node puts the sweep back in its pool and mines
// it again, but a node may as well drop it (the dev chain's rollback does), and nothing sent it
// again: its deposits stayed CREDITED while their money was back at their address, the books
// short of the bankroll for good. So the rollback also reorgs the deposits of each sweep whose
// transaction mined after the fork is not on the chain now (a batch: every sweep of it), as it
// does the other deposits of a reorged deposit's sweep: their transfers are noted back at
// once, readyToReinstate sends the sweep again (its stored bytes, the same nonce: the money
// moves once) and, once it is mined again at depth, the scanner counts them again (REINCLUDED:
// a REINSTATE entry, no second DEPOSIT). A sweep the node has mined again by the time the
// rollback reads it is left alone: its inputs and its move are all on the chain.

// sweepsOffChain lists, before the rollback to fork commits (it reads the chain), the sweeps
// whose transaction mined in the books after fork is not on the chain now: no receipt, or one
// that now reverts (it moved nothing). A node still indexing counts as off the chain: the
// deposits then stop counting until the sweep is read mined again, never the other way round.
func (s *Service) sweepsOffChain(ctx context.Context, c *chain.Client, chainID int64, fork uint64) ([]int64, error) {
	txs, err := store.New(s.pool).SweepTxsMinedFrom(ctx, chainID, fork+1)
	if err != nil || len(txs) == 0 {
		return nil, err
	}
	onChain := map[int64]bool{}
	var out []int64
	for _, t := range txs {
		mined, read := onChain[t.TxID]
		if !read {
			if mined, err = stillMined(ctx, c, t.MinedHash); err != nil {
				return nil, err
			}
			onChain[t.TxID] = mined
		}
		if !mined {
			out = append(out, t.SweepID)
		}
	}
	return out, nil
}

// stillMined reports whether the transaction mined as hash is on the chain now, successful.
func stillMined(ctx context.Context, c *chain.Client, hash string) (bool, error) {
	r, err := c.Receipt(ctx, common.HexToHash(hash))
	switch {
	case errors.Is(err, ethereum.NotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return r.Status == types.ReceiptStatusSuccessful, nil
}

// A batch that left the chain with a deposit written off can never be sent again (its bytes
// would move a later payment's money in the written-off deposit's name). The gas tank cancelled
// it only when a later batch waited behind its nonce (cancelBatchGapBefore) or a deposit of it
// was written off again: with neither, another address's deposit it had swept, its payment
// still on the chain and its money back at its address, stayed reorged and uncounted, its money
// at the address, until some unrelated batch formed. readyToReinstate, waiting on that deposit,
// now has the gas tank cancel the batch once its deposits are decided (batchDecided); at the
// cancel's depth the deposit is swept anew and counted again (resweep, creditBack).

// leftMissingDeposit is txMissingDeposit for sweep transaction t, off the chain, of reorged
// deposit d; a batch missing one is cancelled once its deposits are decided (cancelDecidedBatch).
func (s *Service) leftMissingDeposit(ctx context.Context, c *chain.Client, d domain.Deposit, t domain.ChainTx, upTo uint64) (bool, error) {
	missing, err := s.txMissingDeposit(ctx, t, d.SweepID, upTo)
	if err != nil || !missing || t.Purpose != PurposeSweepBatch {
		return missing, err
	}
	return true, s.cancelDecidedBatch(ctx, c, d.ChainID, t)
}

// cancelDecidedBatch cancels done batch transaction t that left the chain, once every deposit
// of it is decided (cancelLeftBatch); a batch still in flight is advanceBatch's.
func (s *Service) cancelDecidedBatch(ctx context.Context, c *chain.Client, chainID int64, t domain.ChainTx) error {
	var batchID int64
	if _, err := fmt.Sscanf(t.Ref, "batch:%d", &batchID); err != nil {
		return fmt.Errorf("deposit: batch transaction %d: ref %q: %w", t.ID, t.Ref, err)
	}
	b, err := store.New(s.pool).LockSweepBatch(ctx, batchID) // a read
	if err != nil || b.Status != domain.BatchDone {
		return err
	}
	n, ok := s.chains.Network(chainID)
	if !ok {
		return fmt.Errorf("deposit: batch %d: chain %d is not configured", batchID, chainID)
	}
	_, _, err = s.cancelLeftBatch(ctx, n, c, batchID)
	return err
}

// coveredSweepGone: a done batched sweep in no batch was credited from its address's carry
// (creditCovered): no transaction moved money in its name, and none ever will. A deposit of it
// written off again with its payment back (its money at the address) had its settle job read
// the batch of "batch 0" on every run (not found, for good), its money left at the address;
// oldSweepGone now takes such a sweep as gone, and the deposit is swept anew, never credited
// (sweepOutOfBatch; a carry source mined again meanwhile, the address no longer holding the
// money, drops it: dropUnbackedWrittenOff). The batch that carried, its written-off deposits
// gone from its finished sweep (leaveFinishedSweep), is decided (batchDecided): left off the
// chain, the gas tank cancels it, else the chain's next batch waits behind its nonce for good.

// Deposits credited from a carry whose sweep left the chain. A carry stands for money a
// finished sweep moved to the bankroll for no deposit of it (carry.go); a deposit the carry
// covers is credited with no transaction of its own (creditCovered). When the sweep that
// carried leaves the chain, so does that money: the covered deposit stayed CREDITED while its
// money was back at its address, the books short for good. So the rollback reorgs it too
// (coveredDepositsOff), its transfer noted back at once; while no sweep that carried to its
// address is on the chain, its covered sweep never pays (coveredNeverPays): counted again (the
// scanner's REINCLUDED, or an engineer's REINSTATE), it is swept anew and credited back once
// (resweep), the gas tank cancelling the sweep that carried (batchDecided) when it is a batch.

// coveredDepositsOff locks, in the rollback's transaction, the deposits of the covered sweeps
// that took a carry recorded by a sweep of offChain.
func coveredDepositsOff(ctx context.Context, q *store.Queries, chainID int64, fork uint64, offChain []int64) ([]domain.Deposit, error) {
	if len(offChain) == 0 {
		return nil, nil
	}
	ids, err := q.SweepsCoveredBy(ctx, offChain)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	return q.LockCoveredDeposits(ctx, chainID, fork+1, ids)
}

// coveredNeverPays reports whether covered sweep sw's money can never be in the bankroll: no
// sweep that carried to its address has a transaction on the chain now.
func (s *Service) coveredNeverPays(ctx context.Context, c *chain.Client, sw domain.Sweep) (bool, error) {
	sources, err := store.New(s.pool).CarrySources(ctx, sw.ChainID, sw.Address, sw.ID)
	if err != nil {
		return false, err
	}
	for _, id := range sources {
		txs, err := s.sweepTxs(ctx, id)
		if err != nil {
			return false, err
		}
		for _, t := range txs {
			if t.State != domain.ChainTxMined {
				continue
			}
			if mined, err := stillMined(ctx, c, t.MinedHash); err != nil || mined {
				return false, err
			}
		}
	}
	return true, nil
}

// cancelGapBelowResent has the gas tank cancel the done batches that left the chain below batch
// transaction t, sent again for a reorged deposit, once their deposits are decided
// (cancelBatchGapBefore, as advanceBatch does for a batch in flight). A batch that carried to an
// address, off the chain, held the gas tank's nonce below the address's later batch sent again,
// and nothing cancelled it until some other batch of the chain formed: the later deposit waited
// uncounted, its money at its address.
func (s *Service) cancelGapBelowResent(ctx context.Context, c *chain.Client, chainID int64, t domain.ChainTx) error {
	n, ok := s.chains.Network(chainID)
	if !ok {
		return fmt.Errorf("deposit: batch transaction %d: chain %d is not configured", t.ID, chainID)
	}
	return s.cancelBatchGapBefore(ctx, n, c, t)
}
