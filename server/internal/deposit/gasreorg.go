package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Gas top-ups and reorgs. A token sweep's gas comes from the gas tank (a `gas` transaction to
// the deposit address). A reorg can take a mined top-up's block away; when nothing mines it
// again (the node dropped it, or the gas tank's nonce went to another transaction on the new
// branch) the address is short and the sweep, whose own transactions are sent again, waits
// for gas that never comes. fund looks for such a top-up before it sends a new one
// (lostTopUps), and a reorged deposit's sweep sent again is funded like any other
// (fundSweptAgain).

// recentTopUps bounds how many of an address's mined top-ups lostTopUps checks: the newest
// are those a reorg can still take away.
const recentTopUps = 8

// lostTopUps checks, when address is short of gas, whether one of its recent mined top-ups
// left the chain, and reports whether fund must wait instead of sending a new one. Only those
// mined within the blocks the scanner keeps to see reorgs (Config.KeepBlocks) are checked: an
// older receipt a node no longer indexes proves nothing.
func (s *Service) lostTopUps(ctx context.Context, n chain.Network, c *chain.Client, address string) (wait bool, err error) {
	list, err := store.New(s.pool).MinedTopUps(ctx, n.ChainID, address, PurposeGas, recentTopUps)
	if err != nil || len(list) == 0 {
		return false, err
	}
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range list {
		if t.MinedBlock+s.cfg.KeepBlocks < head {
			continue
		}
		_, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
		switch {
		case err == nil:
			continue // still on the chain
		case errors.Is(err, chain.ErrIndexing):
			return true, nil // the node cannot tell yet: no proof that it left
		case !errors.Is(err, ethereum.NotFound):
			return false, err
		}
		if wait, err := s.lostTopUp(ctx, n, c, t); err != nil || wait {
			return wait, err
		}
	}
	return false, nil
}

// lostTopUp handles a mined top-up whose block left the chain. While its nonce is free it is
// broadcast again (its stored bytes: the same nonce, so it tops up at most once; a new top-up
// would take the next nonce and wait behind the gap for good). While another transaction holds
// the nonce short of the confirmation depth, it may still come back: wait (a new top-up then
// would be a second one). Once the nonce is used at depth it can never be mined: it is marked
// failed and fund sends a new top-up.
func (s *Service) lostTopUp(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) (wait bool, err error) {
	from := common.HexToAddress(t.From)
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	latest, err := c.NonceAt(ctx, from, head)
	if err != nil {
		return false, err
	}
	attrs := []any{"chain", n.ChainID, "address", t.To, "tx", t.ID, "ref", t.Ref, "hash", t.MinedHash, "block", t.MinedBlock, "nonce", t.Nonce}
	if latest <= t.Nonce {
		s.log.WarnContext(ctx, "a gas top-up left the chain in a reorg: broadcasting it again (the same nonce)", attrs...)
		if err := s.engine.Reopen(ctx, t); err != nil {
			return false, err
		}
		if _, err := s.engine.Advance(ctx, t.ID); err != nil && !errors.Is(err, chaintx.ErrInsufficientFunds) {
			return false, err
		}
		return true, nil
	}
	tip, ok, err := s.confirmedTip(ctx, n, c, head, head)
	if err != nil || !ok {
		return true, err
	}
	atDepth, err := c.NonceAt(ctx, from, tip)
	if err != nil {
		return false, err
	}
	if atDepth <= t.Nonce {
		return true, nil // another transaction took its nonce, not at depth yet: it may still come back
	}
	reason := fmt.Sprintf("mined in %s (block %d), which left the chain in a reorg; nonce %d of %s is used at depth by another "+
		"transaction: it can never be mined again", t.MinedHash, t.MinedBlock, t.Nonce, t.From)
	failed := false
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		// Another step may have handled it meanwhile: only the mined transaction read above moves.
		if state, hash, err := q.LockChainTxState(ctx, t.ID); err != nil || state != domain.ChainTxMined || hash != t.MinedHash {
			return err
		}
		if ok, err := q.ReopenChainTx(ctx, t.ID, t.State, t.MinedHash); err != nil || !ok {
			return err
		}
		t.State = domain.ChainTxPending
		failed = true
		return chaintx.MarkFailed(ctx, tx, t, "system", reason)
	})
	if err != nil || !failed {
		return !failed, err // handled by another step meanwhile: the next step looks again
	}
	s.log.WarnContext(ctx, "a gas top-up left the chain in a reorg and its nonce went to another transaction: marked failed, "+
		"a new top-up replaces it", attrs...)
	return false, nil
}

// supersededTopUp marks failed a pending top-up that can never be mined: none of its attempts
// is mined and the gas tank's nonce it holds is used at depth by another transaction (a lost
// top-up sent again with its own bytes, which the node then dropped while the gas tank's nonce
// went elsewhere; the engine, finding its nonce used, waits for a receipt that never comes).
// It reports whether it did: fund then sends a new top-up in its place, as lostTopUp does.
func (s *Service) supersededTopUp(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) (bool, error) {
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok {
		return false, err
	}
	atDepth, err := c.NonceAt(ctx, common.HexToAddress(t.From), tip)
	if err != nil || atDepth <= t.Nonce {
		return false, err
	}
	// Its attempts once more, after the nonce was read: one of them mined shows its receipt.
	for _, a := range t.Attempts {
		if _, err := c.Receipt(ctx, common.HexToHash(a.Hash)); err == nil || !errors.Is(err, ethereum.NotFound) {
			return false, err
		} else if errors.Is(err, chain.ErrIndexing) {
			return false, nil // the node cannot tell yet
		}
	}
	reason := fmt.Sprintf("none of its attempts is mined and nonce %d of %s is used at depth by another transaction: it can "+
		"never be mined", t.Nonce, t.From)
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error { return chaintx.MarkFailed(ctx, tx, t, domain.System, reason) })
	if errors.Is(err, chaintx.ErrRefused) {
		return false, nil // moved meanwhile: the next step reads it again
	} else if err != nil {
		return false, err
	}
	s.log.WarnContext(ctx, "a pending gas top-up's nonce went to another transaction: marked failed, a new top-up replaces it",
		"chain", n.ChainID, "address", t.To, "tx", t.ID, "ref", t.Ref, "nonce", t.Nonce)
	return true, nil
}

// waitingForGas logs at ERROR and counts (coffer_gas_topup_overdue_total) a sweep or
// prefunding still waiting for its top-up t past Config.GasWaitAlert: the gas tank may be
// empty, the top-up stuck, or its nonce blocked; nothing else says so while the sweep waits.
func (s *Service) waitingForGas(ctx context.Context, n chain.Network, address string, sweepID int64, refPrefix string, t domain.ChainTx) {
	waited := time.Since(t.CreatedAt)
	if waited < s.cfg.GasWaitAlert {
		return
	}
	s.log.ErrorContext(ctx, "a sweep has waited for its gas top-up longer than expected: check the gas tank's balance "+
		"(coffer_wallet_balance{wallet=\"gas_tank\"}) and the top-up (coffer tx)", "sweep", sweepID, "for", refPrefix,
		"address", address, "chain", n.ChainID, "topup_tx", t.ID, "topup_nonce", t.Nonce, "waited", waited.Round(time.Second))
	metrics.GasTopUpOverdue.WithLabelValues(strconv.FormatInt(n.ChainID, 10)).Inc()
}

// fundSweptAgain tops up a reorged deposit's address for the token transfers of its sweep that
// readyToReinstate sent again (sent, the IDs it advanced): their gas came from a top-up that
// may have left the chain with them, and nothing else funds a sweep that was mined once. The
// gas tank only ever pays gas: a native transfer pays its own out of the deposits it moves (or,
// crediting one back, moves them whole and its gas is the gas tank's), and when the address no
// longer holds what those move (a deposit left the chain for good) nothing is topped up, or
// the gas tank's ETH would reach the bankroll as the missing deposit.
func (s *Service) fundSweptAgain(ctx context.Context, c *chain.Client, d domain.Deposit, sent map[int64]bool) error {
	n, ok := s.chains.Network(d.ChainID)
	if !ok {
		return fmt.Errorf("deposit %d: chain %d is not configured", d.ID, d.ChainID)
	}
	txs, err := s.sweepTxs(ctx, d.SweepID)
	if err != nil {
		return err
	}
	need, margin, own := new(big.Int), new(big.Int), new(big.Int)
	var nonces []uint64
	for _, t := range txs {
		if !sent[t.ID] || t.State != domain.ChainTxPending || !strings.EqualFold(t.From, d.Address) {
			continue
		}
		nonces = append(nonces, t.Nonce)
		need.Add(need, t.MaxCost())
		if t.PaysOwnGas {
			own.Add(own, t.MaxCost())
		} else {
			own.Add(own, t.Latest().Value)    // a credited-back native transfer's (planNative)
			margin.Add(margin, maxGasCost(t)) // room for fee bumps of the gas tank's gas
		}
	}
	if margin.Sign() == 0 {
		return nil // every transfer pays its own gas: nothing the gas tank pays for
	}
	if own.Sign() > 0 {
		bal, err := c.Balance(ctx, common.HexToAddress(d.Address))
		if err != nil || bal.Cmp(own) < 0 {
			return err // what the native transfers move is not all there: never the gas tank's to fill
		}
	}
	_, err = s.fund(ctx, n, c, d.Address, d.SweepID, need, margin, fmt.Sprintf("sweep:%d", d.SweepID), nonces...)
	return err
}
