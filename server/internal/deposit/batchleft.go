package deposit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Batches that left the chain. A batch mined and settled, then taken away by a reorg deeper
// than the depth with its sweeps' deposits (markReorged), stays mined in the books while the
// gas tank's nonce is unused on the chain. readyToReinstate sends it again while a deposit of
// it is back and undecided; nothing else did. So once its deposits were written off, the
// chain's next batch, signed at a later gas-tank nonce, waited behind it for good (and every
// deposit of that batch with it); and a deposit written off again, its money back at its
// address, stayed there for good.
//
// The gas tank cancels such a batch at its own nonce (a 0-value self-send: its gas only, no
// top-up of any address) once every deposit of the batch is reorged, one at least written off
// and the others written off too or with their transfer on the chain (batchDecided; an
// undecided one off the chain may still come back and have readyToReinstate send it again):
// when a later batch waits behind its nonce (cancelBatchGapBefore), or when a deposit of it is
// written off again with its money back (settleWrittenOffAgain), which is then swept anew, never
// credited; one whose transfer is back is swept anew and credited back (resweep). Its cancel is
// never retired: a batch's ref names its sweeps' transaction in the books; the cancel's depth
// is checked where it counts (batchNeverPays).

// cancelLeftBatch cancels the transaction of done batch batchID once it left the chain and its
// deposits are all decided (batchDecided). settled is true when t can move nothing more: mined
// on the chain (it moved what it swept), or its cancel at the confirmation depth.
func (s *Service) cancelLeftBatch(ctx context.Context, n chain.Network, c *chain.Client, batchID int64) (t domain.ChainTx, settled bool, err error) {
	t, err = store.New(s.pool).ChainTxByRef(ctx, PurposeSweepBatch, batchRef(batchID))
	if err != nil {
		return t, false, err
	}
	switch t.State {
	case domain.ChainTxCancelled:
		deep, err := s.allDeep(ctx, n, c, []domain.ChainTx{t})
		return t, deep, err
	case domain.ChainTxMined:
		if left, err := s.leftChain(ctx, c, t); err != nil || !left {
			return t, err == nil, err
		}
	case domain.ChainTxPending:
	case domain.ChainTxReverted, domain.ChainTxFailed:
		return t, false, nil // it never moved anything, and holds no nonce the books do not know
	}
	if decided, err := s.batchDecided(ctx, batchID); err != nil || !decided {
		return t, false, err
	}
	if t.State == domain.ChainTxMined {
		if err := s.engine.Reopen(ctx, t); err != nil {
			return t, false, err
		}
		s.log.Warn("a done sweep batch left the chain and every deposit of it is written off: the gas tank cancels it at its nonce",
			"batch", batchID, "chain", n.ChainID, "tx", t.ID, "hash", t.MinedHash, "nonce", t.Nonce)
		if t, err = store.New(s.pool).ChainTx(ctx, t.ID); err != nil {
			return t, false, err
		}
	}
	if !cancelling(t) {
		err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			return chaintx.RequestAction(ctx, tx, t, domain.TxCancel, domain.System,
				fmt.Sprintf("batch %d left the chain and every deposit of it is written off: it can never pay", batchID))
		})
		if err != nil && !errors.Is(err, chaintx.ErrRefused) { // refused: no longer pending, read next
			return t, false, err
		}
	}
	if t, err = s.engine.Advance(ctx, t.ID); err != nil && !errors.Is(err, chaintx.ErrInsufficientFunds) {
		return t, false, err
	}
	return t, false, nil // the next step reads its cancel (or its bytes mined after all)
}

// leftChain reports whether mined transaction t is off the chain: no receipt, and its sender's
// nonce unused (the node is not merely behind).
func (s *Service) leftChain(ctx context.Context, c *chain.Client, t domain.ChainTx) (bool, error) {
	_, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if err == nil || !errors.Is(err, ethereum.NotFound) || errors.Is(err, chain.ErrIndexing) {
		return false, ignoreNotFound(err)
	}
	used, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	return err == nil && used <= t.Nonce, err
}

// batchDecided reports whether every deposit of a batch's sweeps is reorged, one at least
// written off (decided, its money off the chain: readyToReinstate never sends the batch again,
// its bytes would take a later payment's money at that address), and the others written off
// too or with their transfer on the chain, waiting for the batch (another address's deposit the
// batch took away with it: markReorged). Once the batch is cancelled, those are swept anew and
// counted again (resweep). An undecided one whose transfer is off the chain may still come
// back and have readyToReinstate send the batch again: its engineer decides first.
func (s *Service) batchDecided(ctx context.Context, batchID int64) (bool, error) {
	q := store.New(s.pool)
	sweeps, err := q.BatchSweeps(ctx, batchID)
	if err != nil {
		return false, err
	}
	writtenOff := false
	for _, sw := range sweeps {
		deposits, err := q.SweepDeposits(ctx, sw.ID)
		if err != nil {
			return false, err
		}
		if len(deposits) == 0 {
			// Its deposits, written off, left it (a finished sweep that carried: leaveFinishedSweep):
			// its bytes would move money in their names again (coveredSweepGone).
			writtenOff = true
			continue
		}
		for _, d := range deposits {
			if d.Status != domain.DepositReorged {
				return false, nil
			}
			r, err := q.LockOpenReorg(ctx, d.ID) // a read, outside a transaction
			switch {
			case errors.Is(err, store.ErrNotFound):
				writtenOff = true
			case err != nil:
				return false, err
			case r.ReincludedHash == "" || r.ReincludedHash != d.BlockHash:
				return false, nil
			}
		}
	}
	return writtenOff, nil
}

// cancelBatchGapBefore cancels the done batches that left the chain below pending gas-tank
// transaction t's nonce (cancelLeftBatch), a batch's or a gas top-up's (fund), so that t is
// not left behind a gas-tank nonce nothing will ever use; and advances those being cancelled
// until their cancel is read (it fills the nonce: t may be mined in the same block).
func (s *Service) cancelBatchGapBefore(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) error {
	onChain, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	if err != nil {
		return err
	}
	q := store.New(s.pool)
	ids, err := q.GapChainTxIDs(ctx, n.ChainID, t.From, onChain, t.Nonce)
	if err != nil {
		return err
	}
	for _, id := range ids {
		gap, err := q.ChainTx(ctx, id)
		if err != nil {
			return err
		}
		var batchID int64
		if gap.Purpose != PurposeSweepBatch || gap.State == domain.ChainTxCancelled {
			continue // a top-up (lostTopUps), or a cancel mined: its nonce is used
		}
		if _, err := fmt.Sscanf(gap.Ref, "batch:%d", &batchID); err != nil {
			return fmt.Errorf("deposit: batch transaction %d: ref %q: %w", gap.ID, gap.Ref, err)
		}
		if b, err := q.LockSweepBatch(ctx, batchID); err != nil || b.Status != domain.BatchDone {
			if err != nil {
				return err
			}
			continue // in flight: advanceBatch sends it
		}
		if _, _, err := s.cancelLeftBatch(ctx, n, c, batchID); err != nil {
			return err
		}
	}
	return nil
}

// batchNeverPays reports whether done batched sweep sw's batch can never move money from its
// address: the gas tank's cancel of it has the confirmation depth (cancelLeftBatch), or it
// was mined again, at depth, skipping the address. It reads the chain and requests nothing.
func (s *Service) batchNeverPays(ctx context.Context, sw domain.Sweep) (bool, error) {
	if sw.BatchID == 0 && sw.Status != domain.SweepDone {
		return false, nil
	}
	n, c, err := s.chains.Lookup(sw.ChainID)
	if err != nil {
		return false, err
	}
	if sw.BatchID == 0 {
		return s.coveredNeverPays(ctx, c, sw) // credited from a carry (sweepleft.go)
	}
	t, err := store.New(s.pool).ChainTxByRef(ctx, PurposeSweepBatch, batchRef(sw.BatchID))
	if err != nil {
		return false, err
	}
	switch t.State {
	case domain.ChainTxCancelled:
		return s.allDeep(ctx, n, c, []domain.ChainTx{t})
	case domain.ChainTxMined:
		skipped, deep, err := s.batchSkipped(ctx, n, c, sw, t)
		return skipped && deep, err
	case domain.ChainTxPending, domain.ChainTxReverted, domain.ChainTxFailed:
	}
	return false, nil // pending: it may still pay; reverted or failed, its sweeps left it (settleBatch)
}

// cancelBatchGapBeforeTopUp is cancelBatchGapBefore for pending gas top-up id, before it is
// advanced (as advanceBatch does for a batch: the cancels are read while it is pending in the
// books): only a batch in flight did it, so with no batch forming the top-up waited behind a
// done batch's unused nonce for good.
func (s *Service) cancelBatchGapBeforeTopUp(ctx context.Context, n chain.Network, c *chain.Client, id int64) error {
	if !n.Batched() {
		return nil
	}
	t, err := store.New(s.pool).ChainTx(ctx, id)
	if err != nil || t.State != domain.ChainTxPending {
		return err
	}
	return s.cancelBatchGapBefore(ctx, n, c, t)
}

// batchSkipped reports whether mined batch transaction t skipped sweep sw's address (mined
// again after its block left the chain, before a written-off deposit's payment came back, it
// moved nothing from there: the payment's money is at the address), and whether t has the
// confirmation depth (until then neither answer is final).
func (s *Service) batchSkipped(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx) (skipped, deep bool, err error) {
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if err != nil {
		return false, false, ignoreNotFound(err)
	}
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok || r.BlockNumber.Uint64() > tip {
		return false, false, err
	}
	sweeps, err := store.New(s.pool).BatchSweeps(ctx, sw.BatchID)
	if err != nil {
		return false, false, err
	}
	results, err := s.batchResults(ctx, n, c, t, sweeps)
	if err != nil {
		return false, false, err
	}
	return !results[common.HexToAddress(sw.Address)].Swept, true, nil
}

// A deposit written off again is swept anew for the money its transfer, mined again, brought
// back to its address (sweepWrittenOff). One a finished batch had moved money for, with no
// swept_uncredited row to say so (rows from before migration 0036), was swept anew for money the
// address no longer held: its batch skipped the sweep on every pass (backing off to every 10
// minutes, for good), the address's later deposits waited behind it, and a later payment large
// enough would have been taken in its name. So a waiting batched sweep holding one is checked
// before it joins a batch: the address must hold, of each asset, what the sweep moves and what
// its deposits no sweep has taken yet need; short, the deposits written off again leave it,
// REORGED again and noted in swept_uncredited (never swept anew again), with an ERROR.

// stepWrittenOffCheck: a waiting sweep holding deposits written off again is about to be
// checked against its address's balance (where two workers' planners of it meet).
const stepWrittenOffCheck = "written-off-check"

// dropUnbackedWrittenOff takes out of waiting batched sweep sw the deposits written off again
// whose money the address does not hold, and returns the deposits left.
func (s *Service) dropUnbackedWrittenOff(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, deposits []domain.Deposit) ([]domain.Deposit, error) {
	again, err := s.writtenOffAgainIn(ctx, deposits)
	if err != nil || len(again) == 0 {
		return deposits, err
	}
	if s.crash != nil {
		s.crash(stepWrittenOffCheck)
	}
	short, err := s.shortAssets(ctx, n, c, sw, deposits)
	if err != nil {
		return nil, err
	}
	var drop []int64
	for _, d := range again {
		if short[d.ContractAddress] {
			drop = append(drop, d.ID)
		}
	}
	if len(drop) == 0 {
		return deposits, nil
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		// Another worker may have put the sweep in a batch since this one read it waiting (its
		// balance read then after that batch moved the money): a deposit taken out of a signed
		// sweep would leave the batch's amounts unexplained.
		if err := lockWaiting(ctx, q, sw.ID); err != nil {
			return err
		}
		for _, id := range drop {
			if ok, err := q.SetDepositStatus(ctx, id, domain.DepositSweeping, domain.DepositReorged); err != nil || !ok {
				return cmp.Or(err, errBatchStale) // moved meanwhile: the next step reads it again
			}
		}
		_, err := q.DetachUncredited(ctx, sw.ID, drop)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.Error("deposits written off again were to be swept anew, but their address does not hold their money (a finished "+
		"sweep moved it, with no swept_uncredited row: one from before migration 0036): left REORGED and never swept anew; "+
		"the bankroll has it", "sweep", sw.ID, "chain", n.ChainID, "address", sw.Address, "deposits", drop)
	return slices.DeleteFunc(deposits, func(d domain.Deposit) bool { return slices.Contains(drop, d.ID) }), nil
}

// writtenOffAgainIn are the deposits of a waiting sweep that were written off again and are swept
// anew (SWEEPING, the engineer's latest decision a write-off: writtenOffAgain).
func (s *Service) writtenOffAgainIn(ctx context.Context, deposits []domain.Deposit) ([]domain.Deposit, error) {
	q := store.New(s.pool)
	var again []domain.Deposit
	for _, d := range deposits {
		r, err := q.LatestDecision(ctx, d.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		if r.Resolution == domain.ReorgWriteOff && d.Status == domain.DepositSweeping {
			again = append(again, d)
		}
	}
	return again, nil
}

// shortAssets are the assets (by contract address, "" for the native currency) of which sweep
// sw's address holds less than the sweep's deposits and those no sweep has taken yet, less
// what a carry stands for them (already in the bankroll: carry.go). Leaving the sweep is for
// good, so both sides are read at the confirmed tip: a payment scanned in a newer block may
// still leave the chain (counted, the address read short, a deposit whose money is there would
// be dropped and its money left at the address for good). Without a confirmed tip, no asset is
// short.
func (s *Service) shortAssets(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, deposits []domain.Deposit) (map[string]bool, error) {
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok {
		return nil, err
	}
	q := store.New(s.pool)
	unswept, err := q.UnsweptDeposits(ctx, n.ChainID, sw.Address)
	if err != nil {
		return nil, err
	}
	need := map[string]*big.Int{}
	for _, d := range append(slices.Clone(deposits), unswept...) {
		if d.BlockNumber > tip {
			continue // not confirmed: its money may still leave the chain
		}
		if need[d.ContractAddress] == nil {
			carry, err := q.CarryBalance(ctx, n.ChainID, sw.Address, d.Currency, 0)
			if err != nil {
				return nil, err
			}
			need[d.ContractAddress] = new(big.Int).Neg(new(big.Int).Add(carry.Bankroll, carry.Fee))
		}
		need[d.ContractAddress].Add(need[d.ContractAddress], d.GrossAmount)
	}
	short := map[string]bool{}
	owner := common.HexToAddress(sw.Address)
	for contract, amount := range need {
		var held *big.Int
		if contract == "" {
			held, err = c.BalanceAt(ctx, owner, tip)
		} else {
			held, err = c.TokenBalanceAt(ctx, common.HexToAddress(contract), owner, tip)
		}
		if err != nil {
			return nil, err
		}
		short[contract] = held.Cmp(amount) < 0
	}
	return short, nil
}
