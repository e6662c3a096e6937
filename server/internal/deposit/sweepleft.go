package deposit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

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

// sweepsRead is what a pass read on the chain, before it commits, of the sweep transactions
// mined in the books (sweepsOffChain, sweepsLeftAhead).
type sweepsRead struct {
	// offChain are the sweeps whose transaction is not on the chain now.
	offChain []int64
	// moved are the transactions the chain has in another block than the books (MinedBlock:
	// where they are now), recorded in the pass's transaction (recordMoved).
	moved []store.SweepTx
	// left are the transactions ahead of the scanner not in the block the books have them in
	// and on the chain nowhere else (sweepsLeftAhead).
	left []store.SweepTx
}

// sweepsOffChain lists, before the rollback to fork commits (it reads the chain), the sweeps
// whose transaction mined in the books after fork is not on the chain now: no receipt, or one
// that now reverts (it moved nothing). A node still indexing counts as off the chain: the
// deposits then stop counting until the sweep is read mined again, never the other way round.
// One the node mined again in another block is recorded there (recordMoved): the books keep
// the block a transaction was first read mined in, and a later rollback above that block
// would miss it.
func (s *Service) sweepsOffChain(ctx context.Context, c *chain.Client, chainID int64, fork uint64) (sweepsRead, error) {
	txs, err := store.New(s.pool).SweepTxsMinedFrom(ctx, chainID, fork+1)
	if err != nil || len(txs) == 0 {
		return sweepsRead{}, err
	}
	onChain := map[int64]bool{}
	var out sweepsRead
	for _, t := range txs {
		mined, read := onChain[t.TxID]
		if !read {
			r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
			switch {
			case errors.Is(err, ethereum.NotFound):
			case err != nil:
				return sweepsRead{}, err
			default:
				mined = r.Status == types.ReceiptStatusSuccessful
				if at := r.BlockNumber.Uint64(); at != t.MinedBlock {
					out.moved = append(out.moved, store.SweepTx{TxID: t.TxID, MinedHash: t.MinedHash, MinedBlock: at})
				}
			}
			onChain[t.TxID] = mined
		}
		if !mined {
			out.offChain = append(out.offChain, t.SweepID)
		}
	}
	return out, nil
}

// Sweeps that left the chain ahead of the scanner. A sweep is credited once its transaction is
// mined, at any depth; the scanner may not have read its block yet. A reorg that takes that
// block before the scanner reads it brings no rollback (the scanner kept no hash of it): the
// node dropping the sweep, its deposits stayed CREDITED while their money was back at their
// address, the books short for good; the node mining it again higher, the books kept its old
// block, and a later rollback above that block (taking the new one) missed it the same way. So
// a pass checks the sweep transactions the books have mined in the blocks it read
// (sweepsLeftAhead): one in its block is on the chain; one elsewhere on the chain is recorded
// there (recordMoved); one nowhere has its deposits marked as the rollback marks those of a
// sweep off the chain (markSweepsLeft): sent again, counted again at depth (REINCLUDED).

// sweepsLeftAhead reads, before the pass commits, the sweep transactions the books have mined
// in the blocks the pass read (w) and reports those not in their block. A transaction in its
// block is found in the block the pass already holds: only one that is not there costs a call
// (its receipt).
func (s *Service) sweepsLeftAhead(ctx context.Context, c *chain.Client, chainID int64, w readWindow) (sweepsRead, error) {
	if len(w.refs) == 0 {
		return sweepsRead{}, nil
	}
	first, last := w.refs[0].Number, w.refs[len(w.refs)-1].Number
	txs, err := store.New(s.pool).SweepTxsMinedIn(ctx, chainID, first, last)
	if err != nil {
		return sweepsRead{}, err
	}
	hashes := make(map[uint64]string, len(w.refs))
	for _, b := range w.refs {
		hashes[b.Number] = b.Hash
	}
	contents := map[uint64]map[common.Hash]bool{} // the transactions of the blocks holding a sweep
	type txNow struct {
		off bool
		at  uint64 // the block it left the chain in (its books' block, or the one it now reverts in)
	}
	where := map[int64]txNow{} // the transactions read
	var out sweepsRead
	for _, t := range txs {
		now, read := where[t.TxID]
		if !read {
			if now.off, now.at, err = s.sweepTxLeft(ctx, c, t, w, hashes, contents, &out); err != nil {
				return sweepsRead{}, err
			}
			where[t.TxID] = now
		}
		if now.off {
			out.offChain = append(out.offChain, t.SweepID)
			out.left = append(out.left, store.SweepTx{SweepID: t.SweepID, TxID: t.TxID, MinedHash: t.MinedHash, MinedBlock: now.at})
		}
	}
	return out, nil
}

// sweepTxLeft checks sweep transaction t against the block the pass read at its height in the
// books (w): there, it stays; elsewhere on the chain, it is recorded moved (out.moved), off
// when it now reverts there (at); nowhere (or a node still indexing: no proof that it is
// anywhere), off at its books' block. A receipt read on another branch than the pass's
// (hashes) is ErrRaced.
func (s *Service) sweepTxLeft(ctx context.Context, c *chain.Client, t store.SweepTx, w readWindow, hashes map[uint64]string,
	contents map[uint64]map[common.Hash]bool, out *sweepsRead) (off bool, at uint64, err error) {
	in, ok := contents[t.MinedBlock]
	if !ok {
		b := w.blocks[t.MinedBlock]
		if b == nil { // the statement lists only the window's blocks, all read
			return false, 0, fmt.Errorf("deposit: sweep transaction %d: block %d is not among the blocks the pass read", t.TxID, t.MinedBlock)
		}
		in = make(map[common.Hash]bool, len(b.Transactions()))
		for _, x := range b.Transactions() {
			in[x.Hash()] = true
		}
		contents[t.MinedBlock] = in
	}
	if in[common.HexToHash(t.MinedHash)] {
		return false, 0, nil
	}
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case errors.Is(err, ethereum.NotFound):
		return true, t.MinedBlock, nil
	case err != nil:
		return false, 0, err
	}
	at = r.BlockNumber.Uint64()
	if h, read := hashes[at]; read && h != r.BlockHash.Hex() {
		return false, 0, ErrRaced
	}
	out.moved = append(out.moved, store.SweepTx{TxID: t.TxID, MinedHash: t.MinedHash, MinedBlock: at})
	return r.Status != types.ReceiptStatusSuccessful, at, nil
}

// recordMoved records, in the pass's transaction, the blocks it read its sweep transactions in,
// so that later rollbacks find the sweeps their blocks take (store.SweepTxsMinedFrom,
// LockDepositsSweptFrom). One no longer mined as read is left alone.
func recordMoved(ctx context.Context, q *store.Queries, moved []store.SweepTx) error {
	for _, t := range moved {
		if _, err := q.MoveMinedBlock(ctx, t.TxID, t.MinedHash, t.MinedBlock); err != nil {
			return err
		}
	}
	return nil
}

// markSweepsLeft records, in the scan pass's transaction, what sweepsLeftAhead read: the blocks
// the chain has its sweep transactions in (recordMoved), and the deposits of the sweeps whose
// transaction left the chain ahead of the scanner marked as a rollback to the block before it
// marks those of a sweep off the chain.
func (s *Service) markSweepsLeft(ctx context.Context, tx pgx.Tx, chainID int64, ahead sweepsRead) ([]reorged, error) {
	if err := recordMoved(ctx, store.New(tx), ahead.moved); err != nil {
		return nil, err
	}
	left := ahead.left
	var out []reorged
	for i, t := range left {
		if i > 0 && left[i-1].TxID == t.TxID {
			continue // marked with the transaction's first sweep
		}
		var sweeps []int64
		for _, x := range left[i:] {
			if x.TxID == t.TxID {
				sweeps = append(sweeps, x.SweepID)
			}
		}
		marked, err := s.markSweepsOff(ctx, tx, chainID, t.MinedBlock-1, sweeps)
		if err != nil {
			return nil, err
		}
		out = append(out, marked...)
	}
	return out, nil
}

// markSweepsOff marks REORGED, in the caller's transaction, the deposits before fork+1 of the
// sweeps offChain (their transaction, mined in the books after fork, is not on the chain) and
// those credited from a carry one of them recorded, their transfer noted back at once, as
// markReorged does.
func (s *Service) markSweepsOff(ctx context.Context, tx pgx.Tx, chainID int64, fork uint64, offChain []int64) ([]reorged, error) {
	q := store.New(tx)
	swept, err := lockDepositsSweptFrom(ctx, q, chainID, fork, offChain)
	if err != nil {
		return nil, err
	}
	covered, err := coveredDepositsOff(ctx, q, chainID, fork, offChain)
	if err != nil {
		return nil, err
	}
	out, err := s.reorgDeposits(ctx, tx, chainID, append(swept, covered...), func(d domain.Deposit) (uint64, string) {
		return fork, fmt.Sprintf("its sweep (%d), or the sweep that carried to its address, was mined in block %d ahead of the "+
			"scanner, which read that block without it: it left the chain; its own block %d (%s) stays; the deposit was %s",
			d.SweepID, fork+1, d.BlockNumber, d.BlockHash, d.Status)
	})
	if err != nil {
		return nil, err
	}
	for _, x := range out {
		if _, err := q.NoteReinclusion(ctx, x.deposit.ID, x.deposit.BlockNumber, x.deposit.BlockHash); err != nil {
			return nil, err
		}
	}
	return out, s.queueCoveredSettles(ctx, tx, offChain, out)
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

// queueCoveredSettles queues, in the rollback's transaction, the settle job of each deposit
// reorged (out) that was credited from a carry a sweep of offChain recorded: the job has the gas
// tank cancel the batch that carried (settleReorged, coveredWaiting), which nothing else did
// before a later gas tank transaction waited behind its nonce.
func (s *Service) queueCoveredSettles(ctx context.Context, tx pgx.Tx, offChain []int64, out []reorged) error {
	if len(offChain) == 0 || len(out) == 0 {
		return nil
	}
	ids, err := store.New(tx).SweepsCoveredBy(ctx, offChain)
	if err != nil {
		return err
	}
	for _, x := range out {
		if x.deposit.SweepID == 0 || !slices.Contains(ids, x.deposit.SweepID) {
			continue
		}
		if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: x.deposit.ID}, nil); err != nil {
			return err
		}
	}
	return nil
}

// coveredNeverPays reports whether covered sweep sw's money can never be in the bankroll: no
// sweep that carried to its address has a transaction on the chain now, nor one that can still
// be mined (coveredSources).
func (s *Service) coveredNeverPays(ctx context.Context, c *chain.Client, sw domain.Sweep) (bool, error) {
	pays, waiting, err := s.coveredSources(ctx, c, sw, false)
	return err == nil && !pays && !waiting, err
}

// A batch that carried, off the chain, is not gone for good until the gas tank's cancel has the
// confirmation depth: its stored bytes are public and a node may mine them again (the same
// nonce) before the cancel, or instead of it. Taken as never paying as soon as it was off the
// chain, its covered deposit was swept anew (resweep) while the batch could still move the
// address's money: mined again, it moved the payment to the bankroll in the written-off
// deposit's name, and the new sweep asked the address for money it no longer held, SWEEPING
// for good, uncredited, the books over by its amount. So such a batch keeps its covered
// deposits waiting, REORGED (readyToReinstate, refuseBeforeSweptAgain), while the gas tank
// cancels it (cancelDecidedBatch): mined again, the deposit counts again as it was (REINCLUDED);
// its cancel at depth, it is swept anew and credited back once.

// A plain transfer that carried (a sweep of the address's own, at its nonce) is the same: off
// the chain, its bytes are public and a node may mine them again at that nonce until a cancel
// there has the depth. It was read as never paying as soon as it left, and before that the
// rollback did not reorg the deposit it covered at all (SweepsCoveredBy took batched sweeps
// only): the deposit stayed CREDITED while its money was back at its address, the books short
// for good. So the deposit is reorged, and waits while the transfer, off the chain, may still be
// mined (its nonce unused), is pending again for its cancel, or its cancel is short of the
// depth; its deposit's job and readyToReinstate have the address's nonce cancelled
// (cancelLeftChain: a 0-value self-send, its gas from the gas tank). Mined again, the deposit
// counts again as it was (REINCLUDED); cancelled at depth (or its nonce taken by another
// transaction), it is swept anew and credited back once.

// coveredSources reads the transactions of the sweeps that carried to covered sweep sw's
// address: pays, one is on the chain now, successful (a batch: it swept the address); else
// waiting, one is off the chain but not final: a batch's not cancelled at depth, or mined again
// skipping the address short of the depth; a plain transfer's with its nonce unused, pending
// again for its cancel, or cancelled short of the depth. With cancel, the gas tank is asked to
// cancel such a batch once its deposits are decided (cancelDecidedBatch), and a plain
// transfer's nonce is cancelled (cancelLeftChain).
func (s *Service) coveredSources(ctx context.Context, c *chain.Client, sw domain.Sweep, cancel bool) (pays, waiting bool, err error) {
	q := store.New(s.pool)
	sources, err := q.CarrySources(ctx, sw.ChainID, sw.Address, sw.ID)
	if err != nil {
		return false, false, err
	}
	n, ok := s.chains.Network(sw.ChainID)
	if !ok {
		return false, false, fmt.Errorf("deposit: sweep %d: chain %d is not configured", sw.ID, sw.ChainID)
	}
	var left []domain.ChainTx
	var plain []int64 // the plain sources whose transfer is off the chain, not final, or whose cancel is not retired
	for _, id := range sources {
		txs, err := s.sweepTxs(ctx, id)
		if err != nil {
			return false, false, err
		}
		for _, t := range txs {
			batch := t.Purpose == PurposeSweepBatch
			if !batch {
				on, final, err := s.plainSourceOnChain(ctx, n, c, t)
				switch {
				case err != nil:
					return false, false, err
				case on:
					return true, false, nil
				case !final:
					waiting = true
					fallthrough
				case t.State == domain.ChainTxCancelled: // its cancel, not retired yet, is retired at depth
					if !slices.Contains(plain, id) {
						plain = append(plain, id)
					}
				}
				continue
			}
			switch t.State {
			case domain.ChainTxMined:
				src, err := q.LockSweep(ctx, id) // a read
				if err != nil {
					return false, false, err
				}
				on, final, err := s.batchSourceOnChain(ctx, n, c, src, t)
				switch {
				case err != nil:
					return false, false, err
				case on:
					return true, false, nil
				case !final:
					waiting = true
					left = append(left, t)
				}
			case domain.ChainTxPending: // reopened by the gas tank's cancel (cancelLeftBatch): its bytes may still be mined
				waiting = true
				left = append(left, t)
			case domain.ChainTxCancelled:
				deep, err := s.allDeep(ctx, n, c, []domain.ChainTx{t})
				if err != nil {
					return false, false, err
				}
				waiting = waiting || !deep
			case domain.ChainTxReverted, domain.ChainTxFailed:
			}
		}
	}
	if cancel {
		for _, t := range left {
			if err := s.cancelDecidedBatch(ctx, c, sw.ChainID, t); err != nil {
				return false, false, err
			}
		}
		for _, id := range plain {
			src, err := q.LockSweep(ctx, id) // a read
			if err != nil {
				return false, false, err
			}
			if _, err := s.cancelLeftChain(ctx, n, c, src); err != nil {
				return false, false, err
			}
		}
	}
	return false, waiting, nil
}

// plainSourceOnChain reads transfer t (its address's own, at its nonce) of a sweep that
// carried: on, it is mined on the chain now, successfully; final, it can never move money any
// more: reverted, failed, cancelled at depth, or, mined in the books but off the chain, its
// nonce taken on the chain by another transaction. Off the chain with its nonce unused (or a
// node still indexing), pending again for its cancel, or cancelled short of the depth, it is
// neither: its public bytes may still be mined.
func (s *Service) plainSourceOnChain(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx) (on, final bool, err error) {
	switch t.State {
	case domain.ChainTxPending:
		return false, false, nil
	case domain.ChainTxCancelled:
		deep, err := s.allDeep(ctx, n, c, []domain.ChainTx{t})
		return false, deep, err
	case domain.ChainTxReverted, domain.ChainTxFailed:
		return false, true, nil
	case domain.ChainTxMined:
	}
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case err == nil:
		return r.Status == types.ReceiptStatusSuccessful, r.Status != types.ReceiptStatusSuccessful, nil
	case errors.Is(err, chain.ErrIndexing):
		return false, false, nil // the node cannot tell yet
	case !errors.Is(err, ethereum.NotFound):
		return false, false, err
	}
	used, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	return false, err == nil && used > t.Nonce, err
}

// batchSourceOnChain reads batch transaction t, mined in the books, of sweep src that carried:
// on, it is on the chain now, successful, and swept src's address; final, it can never move
// that address's money (reverted, or mined skipping the address at the confirmation depth).
// Off the chain, it is neither: its bytes may still be mined until the gas tank's cancel is.
func (s *Service) batchSourceOnChain(ctx context.Context, n chain.Network, c *chain.Client, src domain.Sweep, t domain.ChainTx) (on, final bool, err error) {
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case errors.Is(err, ethereum.NotFound):
		return false, false, nil
	case err != nil:
		return false, false, err
	case r.Status != types.ReceiptStatusSuccessful:
		return false, true, nil
	}
	sweeps, err := store.New(s.pool).BatchSweeps(ctx, src.BatchID)
	if err != nil {
		return false, false, err
	}
	results, err := s.batchResults(ctx, n, c, t, sweeps)
	if err != nil {
		return false, false, err
	}
	if results[common.HexToAddress(src.Address)].Swept {
		return true, false, nil
	}
	_, deep, err := s.batchSkipped(ctx, n, c, src, t)
	return false, deep, err
}

// coveredWaiting reports whether deposit d, reorged, was credited from a carry by a covered
// sweep whose carrying batch or transfer is off the chain but not gone for good
// (coveredSources), and has it cancelled when cancel is set.
func (s *Service) coveredWaiting(ctx context.Context, c *chain.Client, d domain.Deposit, cancel bool) (bool, error) {
	sw, err := store.New(s.pool).LockSweep(ctx, d.SweepID) // a read
	if err != nil {
		return false, err
	}
	if covered, err := s.coveredSweep(ctx, sw); err != nil || !covered {
		return false, err
	}
	pays, waiting, err := s.coveredSources(ctx, c, sw, cancel)
	return err == nil && !pays && waiting, err
}

// coveredSweep reports whether sweep sw is done with no transaction of its own: its deposits
// were credited from its address's carry (a batched one in no batch: creditCovered; an
// unbatched one with no transfer, failed ones aside: sweepTxsRetiredToo).
func (s *Service) coveredSweep(ctx context.Context, sw domain.Sweep) (bool, error) {
	switch {
	case sw.Status != domain.SweepDone:
		return false, nil
	case sw.Batched:
		return sw.BatchID == 0, nil
	}
	txs, err := s.sweepTxsRetiredToo(ctx, sw.ID)
	return err == nil && len(txs) == 0, err
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
