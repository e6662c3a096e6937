package deposit

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Transfers that moved money for a written-off deposit. A sweep's transfer (or its batch) whose
// deposit was written off asks its address for money no confirmed payment stands behind:
// mined, it moved a later payment's money, which may itself still leave the chain. Settled at
// once, it carried that money (carry.go) and the address's next deposit, confirmed, was
// credited from the carry; a reorg shallower than the depth then took the later payment and
// the old transfer away (a transfer of confirmed deposits only is mined again as it was: its
// inputs are on the chain), and the operator was credited money the bankroll never received
// while the confirmed deposit's own money stayed at the address. Such a transfer is settled
// only once its block has the confirmation depth; one that left the chain before is pending
// again, to be cancelled (or its bytes mined again, read anew).

// minedBatchSettles reports whether mined batch transaction t may be settled now: always, but
// for a batch with a reorged deposit (written off, or its reorg open), which must be mined at
// the confirmation depth (minedDeep).
func (s *Service) minedBatchSettles(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx,
	sweeps []domain.Sweep,
) (bool, error) {
	if unbacked, err := s.holdsReorged(ctx, sweeps); err != nil || !unbacked {
		return err == nil, err
	}
	return s.minedDeep(ctx, n, c, t)
}

// retiredMinedDeep reports whether every mined transfer of txs, a retiring sweep's, is mined
// at the confirmation depth (minedDeep), before the sweep is finished or closed on them.
func (s *Service) retiredMinedDeep(ctx context.Context, n chain.Network, c *chain.Client, txs []domain.ChainTx) (bool, error) {
	for _, t := range txs {
		if t.State != domain.ChainTxMined {
			continue
		}
		if deep, err := s.minedDeep(ctx, n, c, t); err != nil || !deep {
			return false, err
		}
	}
	return true, nil
}

// minedDeep reports whether mined transaction t is in a block with the confirmation depth on
// the chain as it is now. One with no receipt left the chain: it is reopened (pending again).
func (s *Service) minedDeep(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) (bool, error) {
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case errors.Is(err, chain.ErrIndexing):
		return false, nil // the node cannot tell yet
	case errors.Is(err, ethereum.NotFound):
		if err := s.engine.Reopen(ctx, t); err != nil {
			return false, err
		}
		s.log.Warn("a transfer that moved money for a written-off deposit left the chain before its depth: pending again, "+
			"not settled", "chain", n.ChainID, "tx", t.ID, "purpose", t.Purpose, "ref", t.Ref, "hash", t.MinedHash,
			"block", t.MinedBlock, "nonce", t.Nonce)
		return false, nil
	case err != nil:
		return false, err
	}
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok {
		return false, err
	}
	return r.BlockNumber.Uint64() <= tip, nil
}

// holdsReorged reports whether a deposit of sweeps is reorged.
func (s *Service) holdsReorged(ctx context.Context, sweeps []domain.Sweep) (bool, error) {
	q := store.New(s.pool)
	for _, sw := range sweeps {
		deposits, err := q.SweepDeposits(ctx, sw.ID)
		if err != nil {
			return false, err
		}
		for _, d := range deposits {
			if d.Status == domain.DepositReorged {
				return true, nil
			}
		}
	}
	return false, nil
}
