package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Retiring a sweep that can never pay. A sweep is signed for the deposits at its address; when
// a reorg then takes one of them away for good (its payer spent the money elsewhere) and an
// engineer writes it off, the sweep's transfers ask for money the address no longer holds:
// a native transfer sends the lost deposit's value, a token transfer its tokens. Left pending,
// such a transfer held the address's nonce for good, so every later sweep of the address
// waited behind it; and once the same user paid the address again, it was mined with the new
// payment's money (the gas tank, asked to keep the new deposit at the address, topped the
// address up with the lost deposit's whole value, which the bankroll then received for no one).
//
// So a signed, unbatched sweep with a written-off deposit is retired: each transfer not mined
// is cancelled (a 0-value self-send at its nonce, its gas from the gas tank; at most one of the
// two is mined), and once every transfer is cancelled or reverted at the confirmation depth
// (no reorg can bring a transfer back), in one database transaction: the cancelled and
// reverted transactions leave their refs, the sweep closes (SweepRetired, crediting nothing)
// and its deposits leave it. Those still SWEEPING are due again and a new sweep, at the next
// nonce, moves what is really at the address; the written-off one, if an engineer reinstates
// it, too. A transfer mined before its cancel moved money that was at the address (a later
// payment's): the sweep is then finished as any mined sweep (the written-off deposit is never
// credited) and the gas tank covers the later deposit's sweep, as before.

// retireSweep retires a signed unbatched sweep that must be (see above), as far as it can now.
// retiring is true while it does: the caller leaves the sweep alone this step. A transfer
// mined (before the write-off, or before its cancel) moved money that was at the address: it
// is never cancelled, and once every transfer is mined the sweep is finished as mined (its
// written-off deposit is not credited). Its other transfers are still cancelled, never sent
// again: a sweep of several assets can have one mined and another, of the written-off
// deposit, pending or reverted (closeRetired then credits what was moved); but the fee
// transfer of an asset it moved, none of whose deposits is written off, is sent (feeOfMoved),
// or, cancelled already (its net transfer mined before its own cancel), signed again at the
// address's next nonce when the sweep closes (feesToSendAgain).
func (s *Service) retireSweep(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) (retiring bool, err error) {
	txs, err := s.sweepTxs(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	if due, err := s.mustRetire(ctx, sw, txs); err != nil || !due {
		return false, err
	}
	deposits, err := store.New(s.pool).SweepDeposits(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	for i, t := range txs {
		if t.State != domain.ChainTxPending {
			continue
		}
		keep := unmovedNative(deposits, txs)
		if feeOfMoved(t, deposits, txs) {
			if txs[i], err = s.sendFeeOfMoved(ctx, n, c, sw, t, keep); err != nil {
				return true, err
			}
			continue
		}
		if txs[i], err = s.cancelSweepTx(ctx, n, c, sw, t, keep); err != nil {
			return true, err
		}
		if txs[i].State == domain.ChainTxMined {
			s.log.Error("a transfer of a sweep being retired was mined before its cancel: what it moved counts as swept "+
				"(a written-off deposit is not credited); the money it moved was at the address", "sweep", sw.ID, "chain",
				n.ChainID, "address", sw.Address, "tx", t.ID, "hash", txs[i].MinedHash)
		}
	}
	// What a mined transfer moved may be a later payment's money, not yet confirmed (settledepth.go).
	if deep, err := s.retiredMinedDeep(ctx, n, c, txs); err != nil || !deep {
		return true, err
	}
	unmined := slices.DeleteFunc(slices.Clone(txs), func(t domain.ChainTx) bool { return t.State == domain.ChainTxMined })
	if len(unmined) == 0 {
		return false, nil // every transfer mined: the sweep is finished as mined
	}
	deep, err := s.allDeep(ctx, n, c, unmined)
	if err != nil || !deep {
		return true, err
	}
	again, err := s.feesToSendAgain(ctx, n, txs, deposits)
	if err != nil {
		return true, err
	}
	return true, s.closeRetired(ctx, n, sw, txs, again)
}

// feesToSendAgain prepares, at the address's next nonce, the fee transfers of moved assets that
// the retirement cancelled (feeOfMoved): their cancel was asked for before the net transfer,
// whose signed bytes are public, was mined instead of its own cancel. Their deposits are
// credited from the net transfer and never swept again, so the fee, left at the address, would
// stay there for good; it belongs to the fee address. Each is the same transfer (its first
// attempt's value and data) under the same ref, stored once the cancelled one is retired.
func (s *Service) feesToSendAgain(ctx context.Context, n chain.Network, txs []domain.ChainTx, deposits []domain.Deposit) ([]chaintx.Prepared, error) {
	var out []chaintx.Prepared
	for _, t := range txs {
		if t.State != domain.ChainTxCancelled || !feeOfMoved(t, deposits, txs) {
			continue
		}
		p, err := s.engine.Prepare(ctx, chaintx.Request{ChainID: n.ChainID, From: common.HexToAddress(t.From),
			To: common.HexToAddress(t.To), Value: t.Attempts[0].Value, Data: t.Data, GasLimit: t.GasLimit,
			PaysOwnGas: t.PaysOwnGas, Purpose: t.Purpose, Ref: t.Ref})
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// mustRetire reports whether a signed sweep is to be retired: a deposit of it was written off
// (the caller checked that no reorg of its deposits is open), or a transfer of it is already
// cancelled or cancelling (a retirement under way whose deposit was reinstated meanwhile: the
// cancel may already be mined, so it goes on, and the new sweep moves the deposit).
func (s *Service) mustRetire(ctx context.Context, sw domain.Sweep, txs []domain.ChainTx) (bool, error) {
	for _, t := range txs {
		if t.State == domain.ChainTxCancelled || cancelling(t) {
			return true, nil
		}
	}
	deposits, err := store.New(s.pool).SweepDeposits(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(deposits, func(d domain.Deposit) bool { return d.Status == domain.DepositReorged }), nil
}

// unmovedNative is what the native deposits of a retiring sweep (deposits) that are still at
// its address hold: those neither written off (their money is gone) nor moved by a mined
// transfer of txs. A top-up keeps them there; counting the moved ones too had the gas tank
// send their whole value to the address.
func unmovedNative(deposits []domain.Deposit, txs []domain.ChainTx) *big.Int {
	moved := movedAssets(txs)
	out := new(big.Int)
	for _, d := range deposits {
		if d.ContractAddress == "" && d.Status != domain.DepositReorged && !slices.Contains(moved, d.Currency) {
			out.Add(out, d.GrossAmount)
		}
	}
	return out
}

// feeOfMoved reports whether pending transfer t of a retiring sweep is the fee transfer of an
// asset whose net transfer was mined and none of whose deposits is written off: it moves their
// fee, which is at the address, to the fee address. Cancelled, the fee stayed at the address
// for good (its deposits are credited from the net transfer and never swept again).
func feeOfMoved(t domain.ChainTx, deposits []domain.Deposit, txs []domain.ChainTx) bool {
	asset := refAsset(t.Ref)
	if t.Purpose != PurposeSweepFee || !slices.Contains(movedAssets(txs), asset) {
		return false
	}
	return !slices.ContainsFunc(deposits, func(d domain.Deposit) bool {
		return d.Currency == asset && d.Status == domain.DepositReorged
	})
}

// sendFeeOfMoved advances a fee transfer that a retirement sends (feeOfMoved), as sendSweep
// would: the address holds what it can cost (its gas from the gas tank for a token), keeping
// keep (unmovedNative) there.
func (s *Service) sendFeeOfMoved(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx,
	keep *big.Int,
) (domain.ChainTx, error) {
	margin := new(big.Int)
	if !t.PaysOwnGas {
		margin = maxGasCost(t)
	}
	need := new(big.Int).Add(keep, t.MaxCost())
	if _, err := s.fund(ctx, n, c, sw.Address, sw.ID, need, margin, fmt.Sprintf("sweep:%d", sw.ID), t.Nonce); err != nil {
		return t, err
	}
	t, err := s.engine.Advance(ctx, t.ID)
	if errors.Is(err, chaintx.ErrInsufficientFunds) {
		err = nil // its gas is on the way
	}
	return t, err
}

// cancelSweepTx cancels a pending sweep transfer: it makes sure the address holds the cancel's
// gas (keeping there keep, the native deposits still at it: unmovedNative), asks the engine for
// the cancel, and advances it. The transfer's own bytes are never sent again once the cancel is
// asked for.
func (s *Service) cancelSweepTx(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx,
	keep *big.Int,
) (domain.ChainTx, error) {
	need, err := cancelCost(ctx, c, t)
	if err != nil {
		return t, err
	}
	ready, err := s.fund(ctx, n, c, sw.Address, sw.ID, new(big.Int).Add(need, keep), need, fmt.Sprintf("retire:%d", sw.ID), t.Nonce)
	if err != nil {
		return t, err
	}
	if !cancelling(t) {
		if asked, err := s.askCancel(ctx, n, c, sw, t, ready); err != nil || !asked {
			return t, err
		}
	}
	t, err = s.engine.Advance(ctx, t.ID)
	if errors.Is(err, chaintx.ErrInsufficientFunds) {
		err = nil // a replacement's higher fee: the next step tops the address up for it
	}
	return t, err
}

// askCancel asks for the cancel of t once the address holds its gas (ready), and reports
// whether t is to be advanced now: the cancel is asked for, or t's nonce is used (it was mined
// meanwhile: anyone may send its signed bytes) and Advance reads its receipt (sent again, it
// would be refused).
func (s *Service) askCancel(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx, ready bool) (bool, error) {
	used, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	switch {
	case err != nil:
		return false, err
	case used > t.Nonce:
		return true, nil
	case !ready:
		return false, nil // the cancel's gas is on the way
	}
	return true, s.requestCancel(ctx, n, sw, t)
}

// cancelling reports whether a cancel of t is asked for or sent.
func cancelling(t domain.ChainTx) bool {
	return t.RequestedAction == domain.TxCancel || t.Latest().Cancel
}

// requestCancel asks the engine for the cancel of a retired sweep's transfer, with its audit
// entry. One no longer pending is left for Advance to read.
func (s *Service) requestCancel(ctx context.Context, n chain.Network, sw domain.Sweep, t domain.ChainTx) error {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		return chaintx.RequestAction(ctx, tx, t, domain.TxCancel, domain.System,
			fmt.Sprintf("sweep %d retired: a deposit of it was written off, so its transfers can never pay", sw.ID))
	})
	if errors.Is(err, chaintx.ErrRefused) {
		return nil
	} else if err != nil {
		return err
	}
	s.log.Warn("cancelling a sweep transfer that can never pay: a deposit of its sweep was written off", "sweep", sw.ID,
		"chain", n.ChainID, "address", sw.Address, "tx", t.ID, "purpose", t.Purpose, "nonce", t.Nonce)
	return nil
}

// cancelCost is what the address must hold for a cancel of t and a fee bump of it: 21,000 gas
// at twice the higher of its newest fee cap and the chain's.
func cancelCost(ctx context.Context, c *chain.Client, t domain.ChainTx) (*big.Int, error) {
	_, feeCap, err := c.Fees(ctx)
	if err != nil {
		return nil, err
	}
	if latest := t.Latest().FeeCap; latest.Cmp(feeCap) > 0 {
		feeCap = latest
	}
	cost := new(big.Int).Mul(big.NewInt(2*nativeTransferGas), feeCap)
	return cost, nil
}

// allDeep reports whether every transfer is settled (cancelled or reverted) in a block with the
// confirmation depth on the chain as it is now: none can come back and move money any more.
// The books' block is not proof: one that left the chain is put back to pending (stillSettled).
func (s *Service) allDeep(ctx context.Context, n chain.Network, c *chain.Client, txs []domain.ChainTx) (bool, error) {
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok {
		return false, err
	}
	for _, t := range txs {
		if (t.State != domain.ChainTxCancelled && t.State != domain.ChainTxReverted) || t.MinedBlock > tip {
			return false, nil
		}
		if settled, err := s.stillSettled(ctx, n, c, t, tip); err != nil || !settled {
			return false, err
		}
	}
	return true, nil
}

// stillSettled reports whether t's cancel (or revert) is on the chain up to tip. One whose
// block left the chain (no receipt from a node at least that far) is reopened (chaintx
// LeftChain): its nonce is free again, and the next step cancels it again; retired then, a
// later sweep of the address would wait behind the gap for good and the transfer's public
// bytes could still be mined with a later payment's money.
func (s *Service) stillSettled(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx, tip uint64) (bool, error) {
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case err == nil:
		return r.BlockNumber.Uint64() <= tip, nil
	case errors.Is(err, chain.ErrIndexing):
		return false, nil // the node cannot tell yet
	case !errors.Is(err, ethereum.NotFound):
		return false, err
	}
	if err := s.engine.Reopen(ctx, t); err != nil {
		return false, err
	}
	s.log.Warn("a retired sweep's cancelled or reverted transfer left the chain before its depth: pending again, cancelled again",
		"chain", n.ChainID, "tx", t.ID, "ref", t.Ref, "hash", t.MinedHash, "block", t.MinedBlock, "nonce", t.Nonce)
	return false, nil
}

// closeRetired settles a retired sweep whose transfers not mined are all cancelled or
// reverted at depth, in one database transaction: those leave their refs and the deposits of
// their assets leave the sweep, to be swept again. With none mined the sweep is done,
// crediting nothing (SweepRetired); else it stays SENDING and is credited as any mined sweep
// for the deposits its mined transfers moved. Another job that closed it first leaves nothing
// to do.
func (s *Service) closeRetired(ctx context.Context, n chain.Network, sw domain.Sweep, txs []domain.ChainTx, feesAgain []chaintx.Prepared) error {
	var detached int64
	moved := movedAssets(txs)
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		detach := func() error {
			for _, t := range txs {
				if t.State == domain.ChainTxMined {
					continue
				}
				if err := retireTx(ctx, tx, t); err != nil {
					return err
				}
			}
			for _, p := range feesAgain { // their refs freed above; the sweep, still SENDING, sends them
				if _, _, err := s.engine.Create(ctx, tx, p); err != nil {
					return err
				}
			}
			var err error
			if len(moved) == 0 {
				detached, err = q.DetachSweepDeposits(ctx, sw.ID)
			} else {
				detached, err = q.DetachSweepCurrencies(ctx, sw.ID, unmovedAssets(txs, moved))
			}
			return err
		}
		if len(moved) == 0 {
			return moveSweep(ctx, q, sw.ID, SweepRetired, detach)
		}
		return lockSending(ctx, q, sw.ID, detach)
	})
	if err != nil {
		return err
	}
	s.log.Warn("sweep retired: its transfers not mined are cancelled or reverted at their depth, moving nothing; their "+
		"deposits are swept again", "sweep", sw.ID, "chain", n.ChainID, "address", sw.Address, "deposits", detached,
		"credited_assets", moved, "fee_transfers_signed_again", len(feesAgain))
	return nil
}

// lockSending runs work in q's transaction with the sweep locked, while it is still SENDING.
func lockSending(ctx context.Context, q *store.Queries, sweepID int64, work func() error) error {
	sw, err := q.LockSweep(ctx, sweepID)
	if err != nil || sw.Status != domain.SweepSending {
		return err
	}
	return work()
}

// movedAssets are the assets whose sweep transfer (not its fee transfer) was mined: their
// deposits' money reached the bankroll, and they are credited from it.
func movedAssets(txs []domain.ChainTx) []string {
	var out []string
	for _, t := range txs {
		if t.Purpose == PurposeSweep && t.State == domain.ChainTxMined {
			out = append(out, refAsset(t.Ref))
		}
	}
	return out
}

// unmovedAssets are the assets of txs not in moved.
func unmovedAssets(txs []domain.ChainTx, moved []string) []string {
	var out []string
	for _, t := range txs {
		if a := refAsset(t.Ref); !slices.Contains(moved, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// refAsset is the asset of a sweep transfer's ref (sweepRef).
func refAsset(ref string) string {
	parts := strings.SplitN(ref, ":", 4)
	if len(parts) < 3 {
		return ""
	}
	return parts[2]
}

// retireTx frees the ref of a retired sweep's transfer: a mined cancel is retired, a reverted
// transfer (its nonce used, nothing moved) failed. One another job freed first (the caller
// holds the sweep's row) is left alone.
func retireTx(ctx context.Context, tx pgx.Tx, t domain.ChainTx) error {
	t, err := store.New(tx).ChainTx(ctx, t.ID)
	switch {
	case err != nil:
		return err
	case strings.Contains(t.Ref, ":resolved:"):
		return nil
	case t.State == domain.ChainTxCancelled:
		return chaintx.Retire(ctx, tx, t)
	}
	return chaintx.MarkFailed(ctx, tx, t, domain.System, "its sweep was retired: a deposit of it was written off")
}

// Batched sweeps. A batch is the gas tank's transaction and moves exact amounts from each
// address, so a written-off deposit holds no nonce; but a batch in flight planned with its
// amount takes it from whatever the address holds when it is mined: a later payment's money,
// credited to no one. So a pending batch with a written-off deposit in one of its sweeps is
// cancelled (its other sweeps go in the next batch, as after any batch that was not mined),
// and a waiting sweep loses its written-off deposits before it joins a batch (formBatch; an
// empty one closes). A batch whose bytes are mined before its cancel carries what it moved for
// the written-off deposit to the address's next sweep (carry.go).

// cancelBatchOfWrittenOff asks for the cancel of pending batch transaction t when a deposit of
// one of its sweeps is written off, instead of sending it again.
func (s *Service) cancelBatchOfWrittenOff(ctx context.Context, n chain.Network, b domain.SweepBatch, t domain.ChainTx) error {
	if cancelling(t) {
		return nil
	}
	q := store.New(s.pool)
	sweeps, err := q.BatchSweeps(ctx, b.ID)
	if err != nil {
		return err
	}
	for _, sw := range sweeps {
		if held, err := q.SweepHeldByReorg(ctx, sw.ID); err != nil || held {
			if err != nil {
				return err
			}
			continue // its reorg is open: held as before
		}
		txs := []domain.ChainTx{t}
		if due, err := s.mustRetire(ctx, sw, txs); err != nil || !due {
			if err != nil {
				return err
			}
			continue
		}
		err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			return chaintx.RequestAction(ctx, tx, t, domain.TxCancel, domain.System,
				fmt.Sprintf("batch %d cancelled: a deposit of its sweep %d was written off, its amount is no longer at %s", b.ID, sw.ID, sw.Address))
		})
		if err != nil && !errors.Is(err, chaintx.ErrRefused) { // refused: no longer pending, read next
			return err
		}
		s.log.Warn("cancelling a sweep batch: a deposit of one of its sweeps was written off; its sweeps go in the next batch",
			"batch", b.ID, "chain", n.ChainID, "sweep", sw.ID, "address", sw.Address)
		return nil
	}
	return nil
}

// A done sweep whose transfer left the chain. A sweep mined and credited, then taken away by a
// reorg with its deposits (markReorged), keeps its transaction mined in the books while the
// address's nonce is unused on the chain. Nothing sends it again once every deposit of it is
// written off (readyToReinstate does for re-included ones), so the address's next sweep, signed
// at the next nonce, waited behind it for good; and its signed bytes, sent again by anyone,
// would move the later payment's money. So when a sweep waits behind such a gap, the
// transfers in the gap are cancelled the same way (cancelGapBefore), the done sweep staying
// done. Not before: while nothing waits, the written-off transfer may still come back and the
// sweep be sent again with its own money (reopenWrittenOff, readyToReinstate).

// cancelGapBefore cancels the transfers of earlier sweeps that hold nonces below the sweep's
// pending transfers (cancelLeftChain): mined in the books at or above the chain's nonce (in a
// block that left the chain), or being cancelled. It reports whether the sweep waits behind
// any: until each cancel has the depth and is retired.
func (s *Service) cancelGapBefore(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) (waiting bool, err error) {
	txs, err := s.sweepTxs(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	var from string
	var first uint64
	for _, t := range txs {
		if t.State == domain.ChainTxPending && (from == "" || t.Nonce < first) {
			from, first = t.From, t.Nonce
		}
	}
	if from == "" {
		return false, nil
	}
	onChain, err := c.Nonce(ctx, common.HexToAddress(from), false)
	if err != nil {
		return false, err
	}
	ids, err := store.New(s.pool).GapChainTxIDs(ctx, n.ChainID, from, onChain, first)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		done, err := s.cancelGapTx(ctx, n, c, sw, id)
		if err != nil {
			return true, err
		}
		waiting = waiting || !done
	}
	return waiting, nil
}

// cancelGapTx hands the earlier sweep of a transaction below the sweep's to cancelLeftChain.
func (s *Service) cancelGapTx(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, id int64) (done bool, err error) {
	q := store.New(s.pool)
	t, err := q.ChainTx(ctx, id)
	if err != nil {
		return false, err
	}
	var sweepID int64
	if _, err := fmt.Sscanf(t.Ref, "sweep:%d:", &sweepID); err != nil || (t.Purpose != PurposeSweep && t.Purpose != PurposeSweepFee) {
		return false, fmt.Errorf("deposit: %s's nonce %d is held in the books by %s %s, not on the chain: resolve it by hand",
			t.From, t.Nonce, t.Purpose, t.Ref)
	}
	if sweepID == sw.ID {
		return true, nil // the sweep's own (sendSweep advances it)
	}
	gone, err := q.LockSweep(ctx, sweepID) // a read
	if err != nil {
		return false, err
	}
	return s.cancelLeftChain(ctx, n, c, gone)
}

// cancelLeftChain cancels the transfers of a done sweep that left the chain, once every
// deposit of it is reorged, one written off for good and none open off the chain
// (leftChainReorgs), or none is left in it (each written off left it when it finished:
// leaveFinishedSweep; what it moved in their name was carried, and the deposits that carry
// covered wait for the cancel: coveredSources), and retires each cancel at its depth. done is
// true when nothing is left to do.
func (s *Service) cancelLeftChain(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) (done bool, err error) {
	q := store.New(s.pool)
	deposits, err := q.SweepDeposits(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	open, writtenOff, err := s.leftChainReorgs(ctx, n, c, deposits)
	writtenOff = writtenOff || len(deposits) == 0
	switch {
	case err != nil || open:
		return false, err // an engineer decides first
	case slices.ContainsFunc(deposits, func(d domain.Deposit) bool { return d.Status != domain.DepositReorged }):
		return true, nil // one counts again: its transfer is to be mined again, not cancelled
	case !writtenOff:
		return false, nil // every one is back: readyToReinstate sends the sweep again
	}
	txs, err := s.sweepTxs(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	done = true
	for _, t := range txs {
		if t.State == domain.ChainTxMined {
			if t, err = s.reopenIfLeft(ctx, n, c, sw, t); err != nil {
				return false, err
			}
		}
		if t.State == domain.ChainTxPending {
			if t, err = s.cancelSweepTx(ctx, n, c, sw, t, new(big.Int)); err != nil { // its deposits are all reorged: none at the address
				return false, err
			}
		}
		settled, err := s.retireDeepCancel(ctx, n, c, t)
		if err != nil {
			return false, err
		}
		done = done && settled
	}
	return done, nil
}

// leftChainReorgs reads the reorgs of a done sweep's reorged deposits, the sweep having left
// the chain: open is true when one of them is open and its transfer is not on the chain again
// at depth (it may come back, and the sweep be sent again with its own money: an engineer
// decides first); writtenOff when one is written off for good. A deposit whose own block
// stayed while the sweep left (noted re-included at once) holds nothing: its money is at the
// address, and once the cancel is retired its REINSTATE has a new sweep move it (resweep).
func (s *Service) leftChainReorgs(ctx context.Context, n chain.Network, c *chain.Client, deposits []domain.Deposit) (open, writtenOff bool, err error) {
	tip, ok, err := s.confirmedTipNow(ctx, n, c)
	if err != nil || !ok {
		return true, false, err
	}
	q := store.New(s.pool)
	for _, d := range deposits {
		if d.Status != domain.DepositReorged {
			continue
		}
		r, err := q.LatestReorg(ctx, d.ID)
		switch {
		case err != nil:
			return true, false, err
		case r.Resolution != domain.ReorgOpen:
			writtenOff = true
		case r.ReincludedBlock == 0 || r.ReincludedBlock > tip:
			open = true
		}
	}
	return open, writtenOff, nil
}

// reopenIfLeft puts a mined sweep transfer back to pending when it is not on the chain: no
// receipt, and its sender's nonce unused (the node is not merely behind).
func (s *Service) reopenIfLeft(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx) (domain.ChainTx, error) {
	_, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if err == nil || !errors.Is(err, ethereum.NotFound) || errors.Is(err, chain.ErrIndexing) {
		return t, ignoreNotFound(err)
	}
	used, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	if err != nil || used > t.Nonce {
		return t, err
	}
	if err := s.engine.Reopen(ctx, t); err != nil {
		return t, err
	}
	s.log.Warn("a done sweep's transfer left the chain and every deposit of it is written off: cancelling it", "sweep", sw.ID,
		"chain", n.ChainID, "address", sw.Address, "tx", t.ID, "hash", t.MinedHash, "nonce", t.Nonce)
	return store.New(s.pool).ChainTx(ctx, t.ID)
}

// ignoreNotFound is err, but nil for a receipt not found (the caller reads no proof in it).
func ignoreNotFound(err error) error {
	if errors.Is(err, ethereum.NotFound) {
		return nil
	}
	return err
}

// retireDeepCancel frees the ref of a mined cancel once it has the confirmation depth, and
// reports whether t is settled for good: mined, or its cancel retired.
func (s *Service) retireDeepCancel(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) (bool, error) {
	switch {
	case t.State == domain.ChainTxMined:
		return true, nil
	case t.State != domain.ChainTxCancelled:
		return false, nil
	case strings.Contains(t.Ref, ":resolved:"):
		return true, nil // retired already
	}
	deep, err := s.allDeep(ctx, n, c, []domain.ChainTx{t})
	if err != nil || !deep {
		return false, err
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error { return chaintx.Retire(ctx, tx, t) })
	if errors.Is(err, chaintx.ErrRefused) {
		err = nil // retired meanwhile
	}
	return err == nil, err
}
