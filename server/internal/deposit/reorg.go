package deposit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/pagetoken"
	"github.com/cofferhq/coffer/server/internal/store"
)

// A reorg after a credit. A reorg deeper than the confirmation depth can take away the block
// of a deposit already swept or credited: its DEPOSIT may be out and its operator's funds
// grown by it. Nothing can be undone automatically on the operator's side (the spec has no
// event that takes a DEPOSIT back), so the rollback that finds such a deposit, in its own
// transaction:
//
//   - marks it REORGED and records the incident (deposit_reorgs) with a DETECTED audit row;
//   - takes a credited deposit's net amount back out of its operator's available funds (a
//     REORG entry, which may leave them below zero: payouts are refused until covered);
//   - takes a swept-but-not-credited deposit out of a sweep that has not signed yet (a signed
//     sweep waits instead: it must not top up or credit money that is gone);
//   - treats the same way the other deposits of its sweep when the rollback also takes that
//     sweep's transaction away: their transfers stay, but their money is back at the deposit
//     address and the sweep, which moved the reorged deposit's money too, may never be mined
//     again. Their transfer is noted re-included at once.
//
// After it commits, each one is logged at ERROR and counted (coffer_deposits_reorged_total,
// coffer_deposits_reorged_unresolved). Then either the same transfer is mined again and, once
// that block has the confirmation depth, the scanner resolves it REINCLUDED (it counts again,
// with no second DEPOSIT), or an engineer resolves it: REINSTATE (count it again) or WRITE_OFF
// (the reversal stands), with a note, audited.
//
// A written-off deposit whose transfer is mined again later has its money back at the deposit
// address. It is not credited again by itself (the engineer wrote it off believing the money
// gone, and may have made the operator whole by hand since): once that block has the
// confirmation depth, the scanner opens a new incident for it (reopenWrittenOff), which only an
// engineer resolves, REINSTATE or WRITE_OFF again. While it is open its sweep, if it left the
// chain, is sent again (readyToReinstate), so the money reaches the bankroll either way; one
// whose sweep was cancelled is swept by a new sweep when written off again, crediting nothing
// (sweepWrittenOff); one written off again before that sweep's cancel was retired (or asked
// for) is swept so by its settle job once it is (settleWrittenOffAgain).

// reorged is a deposit a rollback marked, reported once the rollback commits.
type reorged struct {
	deposit domain.Deposit
	reorg   domain.Reorg
	// after is the operator's funds after the reversal (nil when nothing was credited).
	after *domain.Funds
}

// markReorged marks the deposits past their confirmation depth in the blocks after fork, and
// the other deposits of their sweeps when a sweep transaction was mined after fork, in the
// rollback's transaction, and forgets re-inclusions of earlier reorged deposits in those
// blocks (they left the chain too). offChain are the sweeps whose transaction mined after fork
// is not on the chain (sweepsOffChain): their deposits are marked the same way, though none
// of them left.
func (s *Service) markReorged(ctx context.Context, tx pgx.Tx, chainID int64, fork uint64, offChain []int64) ([]reorged, error) {
	q := store.New(tx)
	if _, err := q.ForgetReinclusions(ctx, chainID, fork+1); err != nil {
		return nil, err
	}
	settled, err := q.LockSettledDepositsFrom(ctx, chainID, fork+1)
	if err != nil {
		return nil, err
	}
	// A sweep of several deposits, one of which left with those blocks, is taken away with them
	// and may never be mined again: it moves that deposit's money too. Its other deposits'
	// transfers stay, but their money is back at the deposit address; credited, they would let
	// their operator pay out money the service no longer holds (from the shared hot wallet:
	// other operators' money). They are reorged too, and noted re-included at once (their
	// transfer is on the chain): the scanner resolves them REINCLUDED (counted again, no second
	// DEPOSIT) once the sweep is mined again and confirmed (readyToReinstate sends it again),
	// or an engineer resolves them. A batch's other sweeps (other addresses) go with it: its
	// bytes moved their money too (once a deposit of it is written off, the gas tank cancels it
	// and they are swept anew: cancelLeftBatch, resweep). A sweep none of whose deposits left is
	// sent again as it was (its inputs are all on the chain): left alone when the node has mined
	// it again, else (offChain) its deposits are marked the same way until it is (sweepleft.go).
	sweepIDs := slices.Clone(offChain)
	for _, d := range settled {
		if d.SweepID != 0 {
			sweepIDs = append(sweepIDs, d.SweepID)
		}
	}
	swept, err := lockDepositsSweptFrom(ctx, q, chainID, fork, sweepIDs)
	if err != nil {
		return nil, err
	}
	covered, err := coveredDepositsOff(ctx, q, chainID, fork, offChain)
	if err != nil {
		return nil, err
	}
	swept = append(swept, covered...)
	sweptOnly := map[int64]bool{}
	for _, d := range swept {
		sweptOnly[d.ID] = true
	}
	out, err := s.reorgDeposits(ctx, tx, chainID, append(settled, swept...), func(d domain.Deposit) (uint64, string) {
		if slices.ContainsFunc(covered, func(c domain.Deposit) bool { return c.ID == d.ID }) {
			return fork, fmt.Sprintf("it was credited from its address's carry (sweep %d), and the sweep that carried was mined "+
				"in a block after %d, which left the chain; its own block %d (%s) stays; the deposit was %s", d.SweepID, fork,
				d.BlockNumber, d.BlockHash, d.Status)
		}
		if sweptOnly[d.ID] {
			return fork, fmt.Sprintf("its sweep (%d) was mined in a block after %d, which left the chain (the chains share "+
				"blocks up to %d); its own block %d (%s) stays; the deposit was %s", d.SweepID, fork, fork, d.BlockNumber,
				d.BlockHash, d.Status)
		}
		return fork, blockLeft(d, fmt.Sprintf("the chains share blocks up to %d", fork))
	})
	if err != nil {
		return nil, err
	}
	for _, x := range out {
		if !sweptOnly[x.deposit.ID] {
			continue
		}
		if _, err := q.NoteReinclusion(ctx, x.deposit.ID, x.deposit.BlockNumber, x.deposit.BlockHash); err != nil {
			return nil, err
		}
	}
	return out, s.queueCoveredSettles(ctx, tx, offChain, out)
}

// lockDepositsSweptFrom is store's LockDepositsSweptFrom, nothing for no sweep.
func lockDepositsSweptFrom(ctx context.Context, q *store.Queries, chainID int64, fork uint64, sweepIDs []int64) ([]domain.Deposit, error) {
	if len(sweepIDs) == 0 {
		return nil, nil
	}
	return q.LockDepositsSweptFrom(ctx, chainID, fork+1, sweepIDs)
}

// blockLeft is the audit note of a deposit whose block left the chain, and why that is known.
func blockLeft(d domain.Deposit, why string) string {
	return fmt.Sprintf("block %d (%s) left the chain (%s); the deposit was %s", d.BlockNumber, d.BlockHash, why, d.Status)
}

// reorgDeposits marks settled deposits (locked by the caller) whose block left the chain
// REORGED, in the caller's transaction: each gets its deposit_reorgs row and DETECTED audit
// row, and a credited one's net amount is taken back out of its operator's funds. leftAt says,
// per deposit, the newest block the chains share (as far as the caller knows) and the audit
// note: what left the chain and how that is known.
func (s *Service) reorgDeposits(ctx context.Context, tx pgx.Tx, chainID int64, settled []domain.Deposit,
	leftAt func(domain.Deposit) (fork uint64, note string)) ([]reorged, error) {
	q := store.New(tx)
	// Funds rows in (currency, id) order, as sweeps take them, so the two cannot deadlock.
	slices.SortFunc(settled, func(a, b domain.Deposit) int {
		if c := strings.Compare(a.Currency, b.Currency); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	out := make([]reorged, 0, len(settled))
	for _, d := range settled {
		if _, err := Next(d.Status, Reorg); err != nil {
			return nil, err // the statement selected a status the table does not reorg
		}
		reversed := new(big.Int)
		if d.Status == domain.DepositCredited && d.Amount != nil {
			reversed.Set(d.Amount)
		}
		fork, note := leftAt(d)
		r, err := q.InsertReorg(ctx, domain.Reorg{DepositID: d.ID, ChainID: chainID, ForkBlock: fork, BlockNumber: d.BlockNumber,
			BlockHash: d.BlockHash, PriorStatus: d.Status, Reversed: reversed})
		if err != nil {
			return nil, err
		}
		if err := q.AddReorgAction(ctx, domain.ReorgAction{ReorgID: r.ID, DepositID: d.ID, Action: domain.ReorgDetected,
			Actor: "system", Note: note}); err != nil {
			return nil, err
		}
		x := reorged{deposit: d, reorg: r}
		if reversed.Sign() > 0 {
			f, err := funds.Reverse(ctx, tx, d, reversed, note)
			if err != nil {
				return nil, err
			}
			x.after = &f
		}
		out = append(out, x)
	}
	return out, nil
}

// reorgedAttrs name a reorged deposit and what its incident reversed in the log lines that
// report it (reportReorged, reportReopened).
func reorgedAttrs(chainID int64, d domain.Deposit, r domain.Reorg) []any {
	return []any{"deposit", d.ID, "chain", chainID, "tx", d.TxHash, "log_index", d.LogIndex, "block", d.BlockNumber,
		"block_hash", d.BlockHash, "operator", d.OperatorID, "external_user_id", d.ExternalUserID, "currency", d.Currency,
		"gross_amount", d.GrossAmount, "reversed", r.Reversed}
}

// reportReorged logs and counts what a committed rollback or scan pass marked.
func (s *Service) reportReorged(ctx context.Context, chainID int64, list []reorged) {
	if len(list) == 0 {
		return
	}
	for _, x := range list {
		d := x.deposit
		attrs := append(reorgedAttrs(chainID, d, x.reorg), "fork_block", x.reorg.ForkBlock, "was", d.Status)
		if d.Amount != nil {
			attrs = append(attrs, "amount", d.Amount)
		}
		if x.after != nil {
			attrs = append(attrs, "operator_available_now", x.after.Available)
		}
		s.log.ErrorContext(ctx, "deposit reorged after its confirmation depth: its block, or its sweep, left the chain; it no longer counts "+
			"toward the operator's funds until it is mined again or an engineer resolves it (coffer deposit reorged / resolve)", attrs...)
		metrics.DepositsReorged.WithLabelValues(strconv.FormatInt(chainID, 10), d.Currency).Inc()
	}
	if err := funds.ReportUnresolvedReorgs(ctx, s.pool, s.chains.Registry); err != nil {
		s.log.WarnContext(ctx, "count unresolved reorged deposits", "error", err)
	}
}

// noteReinclusion handles a scanned transfer that belongs to a reorged deposit: it records
// the new block (the deposit counts again once that block has the confirmation depth).
func (s *Service) noteReinclusion(ctx context.Context, q *store.Queries, d domain.Deposit) error {
	open, err := q.NoteReinclusion(ctx, d.ID, d.BlockNumber, d.BlockHash)
	if err != nil {
		return err
	}
	if open {
		s.log.WarnContext(ctx, "a reorged deposit's transfer was mined again; it counts again once this block is confirmed",
			"deposit", d.ID, "chain", d.ChainID, "tx", d.TxHash, "block", d.BlockNumber)
	} else {
		s.log.WarnContext(ctx, "a written-off reorged deposit's transfer was mined again; once this block is confirmed an "+
			"incident opens for an engineer to decide again", "deposit", d.ID, "chain", d.ChainID, "tx", d.TxHash, "block", d.BlockNumber)
	}
	return nil
}

// reopened is a new incident opened for a written-off deposit mined again, reported once the
// scan pass commits.
type reopened struct {
	deposit  domain.Deposit
	reorg    domain.Reorg
	writeOff domain.Reorg
}

// reopenWrittenOff opens, in the scan's transaction, a new incident (a DETECTED reorg) for each
// written-off deposit whose transfer was mined again in a block up to upTo (confirmed) still
// on the chain. The new reorg is about the same lost block as the write-off, with the same
// prior status and reversal (what REINSTATE restores), and notes the new block as its
// re-inclusion, so readyToReinstate sends its sweep again if it left the chain (as for any
// re-included deposit); it never resolves REINCLUDED by itself (resolveReincluded).
func (s *Service) reopenWrittenOff(ctx context.Context, tx pgx.Tx, chainID int64, upTo uint64) ([]reopened, error) {
	q := store.New(tx)
	list, err := q.WrittenOffMinedAgain(ctx, chainID, upTo)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	var out []reopened
	for _, w := range list {
		// The deposit, then its reorgs, as ResolveReorg locks them.
		d, err := q.LockDeposit(ctx, w.DepositID)
		if err != nil {
			return nil, err
		}
		if _, err := q.LockOpenReorg(ctx, d.ID); err == nil {
			continue // opened meanwhile
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		o, err := NextReorg(w.Resolution, MinedAgain)
		if err != nil || !o.Reopen || d.Status != domain.DepositReorged || d.BlockNumber > upTo {
			continue // moved meanwhile; the next pass sees it again if it still applies
		}
		r, err := s.openMinedAgain(ctx, tx, w, d)
		if err != nil {
			return nil, err
		}
		out = append(out, reopened{deposit: d, reorg: r, writeOff: w})
	}
	return out, nil
}

// openMinedAgain records the new incident of written-off reorg w's deposit d, mined again.
func (s *Service) openMinedAgain(ctx context.Context, tx pgx.Tx, w domain.Reorg, d domain.Deposit) (domain.Reorg, error) {
	q := store.New(tx)
	r, err := q.InsertReorg(ctx, domain.Reorg{DepositID: d.ID, ChainID: d.ChainID, ForkBlock: w.ForkBlock, BlockNumber: w.BlockNumber,
		BlockHash: w.BlockHash, PriorStatus: w.PriorStatus, Reversed: w.Reversed})
	if err != nil {
		return r, err
	}
	if _, err := q.NoteReinclusion(ctx, d.ID, d.BlockNumber, d.BlockHash); err != nil {
		return r, err
	}
	r.ReincludedBlock, r.ReincludedHash = d.BlockNumber, d.BlockHash
	note := fmt.Sprintf("the written-off transfer was mined again in block %d (%s), now confirmed: its money is back at the "+
		"deposit address; written off %s by %s (reorg %d). Not credited: REINSTATE to count it again (%s back to the operator, "+
		"no second DEPOSIT; once a sweep that left the chain with it is mined again) or WRITE_OFF again", d.BlockNumber,
		d.BlockHash, w.ResolvedAt.UTC().Format(time.RFC3339), w.ResolvedBy, w.ID, w.Reversed)
	err = q.AddReorgAction(ctx, domain.ReorgAction{ReorgID: r.ID, DepositID: d.ID, Action: domain.ReorgDetected, Actor: "system", Note: note})
	return r, err
}

// reportReopened logs and counts the incidents a committed scan pass opened for written-off
// deposits mined again.
func (s *Service) reportReopened(ctx context.Context, chainID int64, list []reopened) {
	if len(list) == 0 {
		return
	}
	for _, x := range list {
		d := x.deposit
		s.log.ErrorContext(ctx, "a written-off reorged deposit was mined again and confirmed: its money is back at the deposit "+
			"address, not credited; an engineer decides again (coffer deposit reorged / resolve: REINSTATE or WRITE_OFF)",
			append(reorgedAttrs(chainID, d, x.reorg), "reorg", x.reorg.ID, "written_off_reorg", x.writeOff.ID,
				"written_off_by", x.writeOff.ResolvedBy)...)
	}
	if err := funds.ReportUnresolvedReorgs(ctx, s.pool, s.chains.Registry); err != nil {
		s.log.WarnContext(ctx, "count unresolved reorged deposits", "error", err)
	}
}

// readyToReinstate picks, before the scan's transaction (it reads the chain), the reorged
// deposits whose transfer was mined again in a block up to upTo (confirmed) and whose money
// is where the books will put it again: a deposit that was credited, or whose sweep was mined
// before its credit, also needs its sweep's mined transactions mined again, successfully and
// confirmed, on this chain (the sweep is credited from them). A sweep transaction that left
// the chain is broadcast again (its stored bytes: the same nonce, so the funds move at most
// once) once every deposit it moves is on the chain again (a deposit of it still off the chain
// or written off: its bytes would take a later payment's money at the address), its gas topped up again when it is a token transfer's (fundSweptAgain: the top-up
// may have left the chain with it); one that now reverts is left to an engineer.
func (s *Service) readyToReinstate(ctx context.Context, c *chain.Client, chainID int64, upTo uint64) (map[int64]bool, error) {
	q := store.New(s.pool)
	list, err := q.ReincludedReorgs(ctx, chainID, upTo)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	ready := map[int64]bool{}
	for _, r := range list {
		if r.PriorStatus != domain.DepositCredited && r.PriorStatus != domain.DepositSweeping {
			ready[r.ID] = true // never swept (below the minimum): swept on resolution
			continue
		}
		d, err := q.GetDeposit(ctx, r.DepositID)
		if err != nil {
			return nil, err
		}
		if d.SweepID == 0 {
			ready[r.ID] = true // in no signed sweep: swept on resolution
			continue
		}
		if r.PriorStatus == domain.DepositCredited {
			if cancelled, err := s.sweepCancelled(ctx, d.SweepID); err != nil {
				return nil, err
			} else if cancelled {
				ready[r.ID] = true // its sweep can never pay: resolved, a new sweep moves its money (resweep)
				continue
			}
			if waiting, err := s.coveredWaiting(ctx, c, d, true); err != nil {
				return nil, err
			} else if waiting {
				continue // its carrying batch may still be mined: the gas tank cancels it first
			}
		}
		txs, err := s.sweepTxs(ctx, d.SweepID)
		if err != nil {
			return nil, err
		}
		all := true
		sent := map[int64]bool{}
		for _, t := range txs {
			if r.PriorStatus == domain.DepositSweeping && (t.State == domain.ChainTxPending || t.State == domain.ChainTxCancelled) {
				// Never mined: the sweep, resumed on resolution, sends (and funds) it, or, its
				// transfer cancelled (retireSweep), is retired and its deposits swept again.
				// One that was mined must be mined again first, like a credited deposit's: the
				// sweep's credit reads it as mined.
				continue
			}
			ok, err := s.sweptAgain(ctx, c, d, t, upTo)
			if err != nil {
				return nil, err
			}
			all = all && ok
			sent[t.ID] = true
		}
		ready[r.ID] = all
		if !all {
			if err := s.fundSweptAgain(ctx, c, d, sent); err != nil {
				// The scan goes on: the next pass tries again.
				s.log.ErrorContext(ctx, "a reorged deposit's sweep, sent again, cannot get its gas", "deposit", d.ID, "sweep", d.SweepID,
					"chain", chainID, "address", d.Address, "error", err)
			}
		}
	}
	return ready, nil
}

// sweptAgain reports whether a reorged deposit's sweep transaction is mined, successfully and
// confirmed, on the chain as it is now, and sends it again when it left the chain.
func (s *Service) sweptAgain(ctx context.Context, c *chain.Client, d domain.Deposit, t domain.ChainTx, upTo uint64) (bool, error) {
	if t.State == domain.ChainTxCancelled || t.State == domain.ChainTxFailed {
		// Its mined hash is its cancel's (or its revert's): it never swept anything.
		return false, nil
	}
	if t.State != domain.ChainTxPending {
		r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
		switch {
		case err == nil && r.Status == types.ReceiptStatusSuccessful && t.Purpose == PurposeSweepBatch:
			// A batch succeeds even when it skips an account: it must show this one swept.
			if r.BlockNumber.Uint64() > upTo {
				return false, nil
			}
			return s.batchSweptAgain(ctx, c, d, t)
		case err == nil && r.Status == types.ReceiptStatusSuccessful:
			return r.BlockNumber.Uint64() <= upTo, nil
		case err == nil:
			s.log.ErrorContext(ctx, "a reorged deposit was mined again but its sweep now reverts; the funds are still at the deposit "+
				"address: resolve it by hand", "deposit", d.ID, "chain", d.ChainID, "sweep_tx", t.MinedHash, "address", d.Address)
			return false, nil
		case !errors.Is(err, ethereum.NotFound):
			return false, err
		case errors.Is(err, chain.ErrIndexing):
			return false, nil // the node cannot tell yet: no proof that the sweep left the chain
		}
		if missing, err := s.leftMissingDeposit(ctx, c, d, t, upTo); err != nil || missing {
			// Its signed bytes move every deposit of the sweep (a batch: of every sweep of it):
			// with one of them still off the chain (or written off) they would be mined with a
			// later payment's money.
			return false, err
		}
		s.log.WarnContext(ctx, "a reorged deposit's sweep left the chain: broadcasting it again", "deposit", d.ID, "chain", d.ChainID,
			"sweep_tx", t.MinedHash)
		if err := s.engine.Reopen(ctx, t); err != nil {
			return false, err
		}
	}
	if t.Purpose == PurposeSweepBatch {
		if err := s.cancelGapBelowResent(ctx, c, d.ChainID, t); err != nil {
			return false, err
		}
	}
	t, err := s.engine.Advance(ctx, t.ID)
	if errors.Is(err, chaintx.ErrInsufficientFunds) {
		return false, nil // its gas top-up is not mined again yet
	}
	if err != nil {
		return false, err
	}
	if t.State != domain.ChainTxMined || t.MinedBlock > upTo {
		return false, nil
	}
	if t.Purpose == PurposeSweepBatch {
		return s.batchSweptAgain(ctx, c, d, t)
	}
	return true, nil
}

// txMissingDeposit reports whether sweep transaction t moves a reorged deposit whose money is
// not back at its address (SweepMissingDeposit): of sweep sweepID, or, a batch, of any sweep
// of it (other addresses' amounts are in its bytes too).
func (s *Service) txMissingDeposit(ctx context.Context, t domain.ChainTx, sweepID int64, upTo uint64) (bool, error) {
	q := store.New(s.pool)
	sweeps := []int64{sweepID}
	if t.Purpose == PurposeSweepBatch {
		var batchID int64
		if _, err := fmt.Sscanf(t.Ref, "batch:%d", &batchID); err != nil {
			return false, fmt.Errorf("deposit: batch transaction %d: ref %q: %w", t.ID, t.Ref, err)
		}
		batch, err := q.BatchSweeps(ctx, batchID)
		if err != nil {
			return false, err
		}
		sweeps = sweeps[:0]
		for _, sw := range batch {
			sweeps = append(sweeps, sw.ID)
		}
	}
	for _, id := range sweeps {
		if missing, err := q.SweepMissingDeposit(ctx, id, upTo); err != nil || missing {
			return missing, err
		}
	}
	return false, nil
}

// batchSweptAgain reports whether the mined batch t swept the reorged deposit's address; one
// that skipped it (the transfer came back after the batch, say) leaves the funds at the
// address, and an engineer resolves the deposit.
func (s *Service) batchSweptAgain(ctx context.Context, c *chain.Client, d domain.Deposit, t domain.ChainTx) (bool, error) {
	n, ok := s.chains.Network(d.ChainID)
	if !ok {
		return false, fmt.Errorf("deposit %d: chain %d is not configured", d.ID, d.ChainID)
	}
	q := store.New(s.pool)
	sw, err := q.LockSweep(ctx, d.SweepID) // a read
	if err != nil {
		return false, err
	}
	sweeps, err := q.BatchSweeps(ctx, sw.BatchID)
	if err != nil {
		return false, err
	}
	results, err := s.batchResults(ctx, n, c, t, sweeps)
	if err != nil {
		return false, err
	}
	if !results[common.HexToAddress(d.Address)].Swept {
		s.log.ErrorContext(ctx, "a reorged deposit was mined again but its batch, mined again, skipped its address; the funds are "+
			"still at the deposit address: resolve it by hand", "deposit", d.ID, "chain", d.ChainID, "batch_tx", t.MinedHash,
			"address", d.Address)
		return false, nil
	}
	return true, nil
}

// resolveReincluded resolves, in the scan's transaction, the reorged deposits readyToReinstate
// picked, and returns how many.
func (s *Service) resolveReincluded(ctx context.Context, tx pgx.Tx, chainID int64, upTo uint64, ready map[int64]bool) (int, error) {
	if len(ready) == 0 {
		return 0, nil
	}
	q := store.New(tx)
	list, err := q.ReincludedReorgs(ctx, chainID, upTo)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, listed := range list {
		if !ready[listed.ID] {
			continue
		}
		// The deposit, then its reorg, as an engineer's ResolveReorg locks them: a resolution
		// racing this one waits (and then finds it resolved) rather than deadlocking.
		d, err := q.LockDeposit(ctx, listed.DepositID)
		if err != nil {
			return done, err
		}
		r, err := q.LockOpenReorg(ctx, d.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // resolved meanwhile
		} else if err != nil {
			return done, err
		}
		if r.ID != listed.ID || r.ReincludedHash != listed.ReincludedHash || d.BlockHash != r.ReincludedHash ||
			d.Status != domain.DepositReorged {
			continue // moved meanwhile; the next pass sees it again
		}
		// A loss an engineer wrote off is counted again only by an engineer (reopenWrittenOff).
		if writtenOff, err := q.BlockWrittenOff(ctx, d.ID, r.ID, r.BlockHash); err != nil || writtenOff {
			if err != nil {
				return done, err
			}
			continue
		}
		note := fmt.Sprintf("mined again in block %d (%s), now confirmed", d.BlockNumber, d.BlockHash)
		if _, err := s.applyResolution(ctx, tx, r, d, domain.ReorgReincluded, "system", note); err != nil {
			return done, err
		}
		s.log.InfoContext(ctx, "reorged deposit resolved: mined again and confirmed; it counts again (no second DEPOSIT)",
			"deposit", d.ID, "chain", chainID, "tx", d.TxHash, "block", d.BlockNumber, "reinstated", r.Reversed)
		done++
	}
	return done, nil
}

// applyResolution resolves an open reorg in the caller's transaction: REINSTATE and
// REINCLUDED put the deposit back where it was (a credited one gets its credit back; a
// swept-but-not-credited one resumes its sweep), WRITE_OFF leaves it REORGED with its
// credit reversed. Each adds an audit row.
func (s *Service) applyResolution(ctx context.Context, tx pgx.Tx, r domain.Reorg, d domain.Deposit, resolution domain.ReorgResolution, actor domain.Actor, note string) (domain.Reorg, error) {
	q := store.New(tx)
	o, err := NextReorg(r.Resolution, resolutionEvent(resolution))
	if err != nil {
		return r, err
	}
	if o.Restore {
		if err := s.restore(ctx, tx, r, d, actor, note); err != nil {
			return r, err
		}
	}
	closed, err := q.CloseReorg(ctx, r.ID, o.To, actor, note)
	if err != nil {
		return r, err
	}
	if !o.Restore {
		swept, err := s.sweepWrittenOff(ctx, tx, r, d)
		if err != nil {
			return r, err
		}
		// Written off in a signed sweep: its job retires that sweep (settleReorged); or swept
		// again, not credited: its job sweeps it.
		if swept || d.SweepID != 0 {
			if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: d.ID}, nil); err != nil {
				return r, err
			}
		}
	}
	err = q.AddReorgAction(ctx, domain.ReorgAction{ReorgID: r.ID, DepositID: d.ID, Action: string(o.To), Actor: actor, Note: note})
	return closed, err
}

// restore puts a reorged deposit back to the status it was reorged from, with its credit if
// it had one; one that is not credited resumes its sweep. A credited one whose transfer is
// back while its sweep was cancelled (resweep) goes back SWEEPING instead, out of that sweep:
// its money is at the deposit address, and a new sweep moves it and credits it back
// (creditBack).
func (s *Service) restore(ctx context.Context, tx pgx.Tx, r domain.Reorg, d domain.Deposit, actor domain.Actor, note string) error {
	resweep, err := s.resweep(ctx, r, d)
	if err != nil {
		return err
	}
	event := Restore(r.PriorStatus)
	if resweep {
		event = RestoreSweeping
		if err := s.leaveCancelledSweep(ctx, tx, d); err != nil {
			return err
		}
	}
	to, err := Next(domain.DepositReorged, event)
	if err != nil {
		return err
	}
	ok, err := store.New(tx).SetDepositStatus(ctx, d.ID, domain.DepositReorged, to)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("deposit %d: resolving reorg %d: the deposit is %s, not REORGED", d.ID, r.ID, d.Status)
	}
	if r.Reversed.Sign() > 0 && !resweep {
		if _, err := funds.Reinstate(ctx, tx, d, r.Reversed, actor, note); err != nil {
			return err
		}
	}
	if to != domain.DepositCredited {
		if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: d.ID}, nil); err != nil {
			return err
		}
	}
	return nil
}

// A credited deposit whose sweep was cancelled. A done sweep that left the chain with its
// deposits, all written off, is cancelled at its nonce once a later sweep of the address waits
// behind it (cancelLeftChain): it can never be mined again. When a written-off transfer of it
// is then mined again, its money is back at the deposit address and only a new sweep can move
// it; REINSTATE, refused until a sweep is mined again for any other re-included deposit
// (refuseBeforeSweptAgain), would otherwise wait for good. So, its sweep cancelled at depth,
// REINSTATE puts it back SWEEPING, out of that sweep, as a reinstated swept-but-not-credited
// deposit resumes its sweep; so does the scanner's REINCLUDED for a deposit of such a sweep
// that was never written off (its own block stayed while the sweep left: readyToReinstate): the operator's funds grow only once a new sweep has moved the
// money to the bankroll, by the amount announced (creditBack: a REINSTATE entry, no second
// DEPOSIT).

// resweep reports whether reinstating r takes deposit d out of its cancelled sweep: it was
// credited, its transfer is on the chain again, and every transfer of its sweep is cancelled
// and retired (sweepCancelled).
func (s *Service) resweep(ctx context.Context, r domain.Reorg, d domain.Deposit) (bool, error) {
	if r.ReincludedHash == "" || r.PriorStatus != domain.DepositCredited || d.SweepID == 0 {
		return false, nil
	}
	return s.sweepCancelled(ctx, d.SweepID)
}

// sweepCancelled reports whether a sweep's transfers are all cancelled and retired (their
// cancels have the confirmation depth): none of them can ever move money. A batched sweep's
// batch cancelled by the gas tank is never retired (cancelLeftBatch): its cancel's depth, or
// the batch mined again at depth skipping the address, is read on the chain (batchNeverPays).
func (s *Service) sweepCancelled(ctx context.Context, sweepID int64) (bool, error) {
	sw, err := store.New(s.pool).LockSweep(ctx, sweepID) // a read, outside a transaction
	if err != nil {
		return false, err
	}
	if sw.Batched {
		return s.batchNeverPays(ctx, sw)
	}
	txs, err := s.sweepTxsRetiredToo(ctx, sweepID)
	if err != nil {
		return false, err
	}
	if len(txs) == 0 && sw.Status == domain.SweepDone {
		// Credited from a carry, with no transfer of its own (coveredSweep): it never pays once
		// no transfer that carried to its address can (coveredSources). Read as never cancelled,
		// its deposit was counted again at once while that transfer was off the chain.
		_, c, err := s.chains.Lookup(sw.ChainID)
		if err != nil {
			return false, err
		}
		return s.coveredNeverPays(ctx, c, sw)
	}
	return allCancelled(txs), nil
}

// allCancelled reports whether txs are all cancelled and retired, and there is one at least.
func allCancelled(txs []domain.ChainTx) bool {
	for _, t := range txs {
		if t.State != domain.ChainTxCancelled || !strings.Contains(t.Ref, ":resolved:") {
			return false
		}
	}
	return len(txs) > 0
}

// sweepWrittenOff, in the caller's transaction, puts back SWEEPING a deposit written off again
// whose transfer is on the chain again, its money at the deposit address, where it stayed for
// good: a new sweep moves it to the bankroll, never crediting it (the write-off stands:
// writtenOffAgain puts it back REORGED), as the sweep sent again for one whose sweep left the
// chain does. Its money is at the address when its sweep's transfers are all cancelled (it
// leaves that sweep), or, in no sweep, when no sweep moved money in its name: one that left a
// retired sweep (closeRetired), was never swept, or left a finished sweep that moved money in
// its name (its transfer mined with a later payment's money) whose carry stands for that
// (carry.go), a batch's too. One a batch settled before batches carried moved money for
// (SweptUncredited) is left alone, as before: no carry stands for it, so its new sweep would
// have the gas tank make up the value the batch took (or, a token, wait for tokens the address
// lacks).
func (s *Service) sweepWrittenOff(ctx context.Context, tx pgx.Tx, r domain.Reorg, d domain.Deposit) (bool, error) {
	if r.ReincludedHash == "" {
		return false, nil
	}
	if d.SweepID == 0 {
		if ok, err := sweepableOutOfSweep(ctx, store.New(tx), r, d); err != nil || !ok {
			return false, err
		}
	} else {
		if cancelled, err := s.sweepCancelled(ctx, d.SweepID); err != nil || !cancelled {
			return false, err
		}
		if err := s.leaveCancelledSweep(ctx, tx, d); err != nil {
			return false, err
		}
	}
	return true, sweepAnew(ctx, tx, d)
}

// sweepOutOfBatch, in the caller's transaction, takes deposit d, written off again with its
// money back at its address, out of its done batched sweep, whose batch can never move that
// money (the gas tank cancelled it at depth after it left the chain, or it was mined again,
// at depth, skipping the address: oldSweepGone), and puts it back SWEEPING: a new batch moves
// its money to the bankroll, never crediting it (writtenOffAgain).
func (s *Service) sweepOutOfBatch(ctx context.Context, tx pgx.Tx, d domain.Deposit) error {
	if err := s.leaveCancelledSweep(ctx, tx, d); err != nil {
		return err
	}
	return sweepAnew(ctx, tx, d)
}

// sweepAnew puts written-off deposit d, in no sweep now, back SWEEPING in the caller's
// transaction, for a new sweep to move its money (sweepWrittenOff).
func sweepAnew(ctx context.Context, tx pgx.Tx, d domain.Deposit) error {
	to, err := Next(domain.DepositReorged, RestoreSweeping)
	if err != nil {
		return err
	}
	if ok, err := store.New(tx).SetDepositStatus(ctx, d.ID, domain.DepositReorged, to); err != nil || !ok {
		return cmp.Or(err, fmt.Errorf("deposit %d: writing it off again: it is %s, not REORGED", d.ID, d.Status))
	}
	return nil
}

// sweepableOutOfSweep reports whether written-off deposit d, in no sweep, its transfer back,
// is swept anew (sweepWrittenOff): it was to be swept (a parked one waits for its address's
// minimum, as before), and no finished batch moved money in its name.
func sweepableOutOfSweep(ctx context.Context, q *store.Queries, r domain.Reorg, d domain.Deposit) (bool, error) {
	if r.PriorStatus != domain.DepositSweeping && r.PriorStatus != domain.DepositCredited {
		return false, nil
	}
	swept, err := q.SweptUncredited(ctx, d.ID)
	return err == nil && !swept, err
}

// leaveCancelledSweep takes reorged deposit d out of its cancelled sweep, in the caller's
// transaction, so that a new sweep takes it.
func (s *Service) leaveCancelledSweep(ctx context.Context, tx pgx.Tx, d domain.Deposit) error {
	left, err := store.New(tx).LeaveCancelledSweep(ctx, d.ID, d.SweepID)
	if err == nil && !left {
		err = fmt.Errorf("deposit %d: it left sweep %d meanwhile", d.ID, d.SweepID)
	}
	return err
}

// Reorged is a reorged deposit with its audit trail, as the ops API and the panel show it.
type Reorged struct {
	domain.Reorg

	Deposit domain.Deposit
	History []domain.ReorgAction
}

// Resolution is an engineer's decision on a reorged deposit.
type Resolution struct {
	DepositID int64
	// Resolution is REINSTATE (it counts again: the payment was re-sent or re-included) or
	// WRITE_OFF (the operator's credit stays reversed).
	Resolution string
	// Note says why (required; kept in the audit trail).
	Note  string
	Actor domain.Actor
}

// ResolveReorg applies an engineer's resolution to a deposit's open reorg. Bad input, an
// unknown deposit, one that was never reorged and one already resolved are refused with
// INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION and CONFLICT, changing nothing; so is
// REINSTATE of a deposit whose transfer is on the chain again while its sweep is not mined
// again at depth (FAILED_PRECONDITION, SWEEP_NOT_MINED: refuseBeforeSweptAgain).
func (s *Service) ResolveReorg(ctx context.Context, in Resolution) (Reorged, error) {
	resolution := domain.ReorgResolution(strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(in.Resolution)), "-", "_"))
	note := strings.TrimSpace(in.Note)
	switch {
	case in.DepositID <= 0:
		return Reorged{}, fault.Invalid("depositId", "must be a deposit id (a positive integer)")
	case resolution != domain.ReorgReinstate && resolution != domain.ReorgWriteOff:
		return Reorged{}, fault.Invalid("resolution", "must be REINSTATE (count the deposit again) or WRITE_OFF (its credit stays reversed)")
	case note == "":
		return Reorged{}, fault.Invalid("note", "is required: say why (it is kept in the audit trail)")
	case len(note) > 1000:
		return Reorged{}, fault.Invalid("note", "must be at most 1000 characters")
	case strings.TrimSpace(string(in.Actor)) == "":
		return Reorged{}, fault.Wrap(errors.New("no actor"), "resolve reorg of deposit %d", in.DepositID)
	}
	var out domain.Reorg
	var d domain.Deposit
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		var err error
		if d, err = q.LockDeposit(ctx, in.DepositID); errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "deposit %d not found", in.DepositID)
		} else if err != nil {
			return err
		}
		r, err := q.LockOpenReorg(ctx, d.ID)
		if errors.Is(err, store.ErrNotFound) {
			last, err := q.LatestReorg(ctx, d.ID)
			if errors.Is(err, store.ErrNotFound) {
				return refuse(fault.FailedPrecondition, "NOT_REORGED", "deposit %d was never reorged (it is %s): there is nothing to resolve", d.ID, d.Status)
			} else if err != nil {
				return err
			}
			return refuse(fault.Conflict, "ALREADY_RESOLVED", "deposit %d's reorg was already resolved: %s by %s at %s", d.ID,
				last.Resolution, last.ResolvedBy, last.ResolvedAt.UTC().Format(time.RFC3339))
		} else if err != nil {
			return err
		}
		if resolution == domain.ReorgReinstate {
			if err := s.refuseBeforeSweptAgain(ctx, r, d); err != nil {
				return err
			}
		}
		out, err = s.applyResolution(ctx, tx, r, d, resolution, in.Actor, note)
		return err
	})
	if err != nil {
		if fe := (*fault.Error)(nil); errors.As(err, &fe) {
			return Reorged{}, fe
		}
		return Reorged{}, fault.Wrap(err, "resolve reorg of deposit %d", in.DepositID)
	}
	s.log.WarnContext(ctx, "reorged deposit resolved by an engineer", "deposit", d.ID, "chain", d.ChainID, "tx", d.TxHash,
		"operator", d.OperatorID, "resolution", resolution, "actor", in.Actor, "note", note, "reversed", out.Reversed)
	if err := funds.ReportUnresolvedReorgs(ctx, s.pool, s.chains.Registry); err != nil {
		s.log.WarnContext(ctx, "count unresolved reorged deposits", "error", err)
	}
	list, err := s.withDetails(ctx, []domain.Reorg{out})
	if err != nil {
		return Reorged{}, err
	}
	return list[0], nil
}

// refuseBeforeSweptAgain refuses (FAILED_PRECONDITION, reason SWEEP_NOT_MINED) to reinstate a
// reorged deposit whose transfer is on the chain again (its money back at the deposit address)
// while the sweep that had moved that money is not mined again, successfully, at the
// confirmation depth. Credited then, the operator could pay out money the bankroll does not
// hold (the books short until the sweep is mined, for good if it never is). The scanner sends
// the sweep again meanwhile (readyToReinstate). A deposit whose transfer is not on the chain
// is the engineer's call, as before: its money is not at the address either way. It reads the
// chain inside the caller's transaction, so nothing moves the incident meanwhile.
func (s *Service) refuseBeforeSweptAgain(ctx context.Context, r domain.Reorg, d domain.Deposit) error {
	if r.ReincludedHash == "" || d.SweepID == 0 ||
		(r.PriorStatus != domain.DepositCredited && r.PriorStatus != domain.DepositSweeping) {
		return nil
	}
	unavailable := func(err error) error {
		e := fault.New(fault.Unavailable, "chain %d: cannot check deposit %d's sweep: try again shortly", d.ChainID, d.ID)
		e.Cause = err
		return e
	}
	n, c, err := s.chains.Lookup(d.ChainID)
	if err != nil {
		return unavailable(err)
	}
	upTo, _, err := s.confirmedTipNow(ctx, n, c)
	if err != nil {
		return unavailable(err)
	}
	if r.PriorStatus == domain.DepositCredited {
		if cancelled, err := s.sweepCancelled(ctx, d.SweepID); err != nil {
			return err
		} else if cancelled {
			return nil // it can never be mined: the deposit is swept again (resweep)
		}
		if waiting, err := s.coveredWaiting(ctx, c, d, false); err != nil {
			return unavailable(err)
		} else if waiting {
			return refuse(fault.FailedPrecondition, "SWEEP_NOT_MINED", "deposit %d's transfer is on the chain again, its money back "+
				"at %s, but it was credited from a carry (sweep %d) whose batch or transfer left the chain and may still be "+
				"mined again: REINSTATE once it is mined again or its cancel has the confirmation depth, or WRITE_OFF",
				d.ID, d.Address, d.SweepID)
		}
	}
	txs, err := s.sweepTxs(ctx, d.SweepID)
	if err != nil {
		return err
	}
	for _, t := range txs {
		if r.PriorStatus == domain.DepositSweeping && t.State == domain.ChainTxPending {
			continue // never mined: the sweep, resumed on REINSTATE, sends it (as readyToReinstate)
		}
		back, err := s.minedAtDepth(ctx, c, d, t, upTo)
		if err != nil {
			return unavailable(err)
		}
		if !back && r.PriorStatus == domain.DepositCredited && (t.State == domain.ChainTxCancelled || cancelling(t)) {
			return refuse(fault.FailedPrecondition, "SWEEP_NOT_MINED", "deposit %d's transfer is on the chain again, its money back "+
				"at %s, but its sweep %d (%s transaction %d) is being cancelled: it left the chain and can never pay. REINSTATE "+
				"once the cancel has the confirmation depth (a new sweep then moves the money and credits it back), or WRITE_OFF",
				d.ID, d.Address, d.SweepID, t.Purpose, t.ID)
		}
		if !back {
			return refuse(fault.FailedPrecondition, "SWEEP_NOT_MINED", "deposit %d's transfer is on the chain again, its money back "+
				"at %s, but its sweep %d (%s transaction %d, %s) is not mined again at the confirmation depth: REINSTATE once it is "+
				"(the service sends it again), or WRITE_OFF", d.ID, d.Address, d.SweepID, t.Purpose, t.ID, t.State)
		}
	}
	return nil
}

// minedAtDepth reports, reading the chain and changing nothing, whether a reorged deposit's
// sweep transaction is mined, successfully, in a block up to upTo on the chain as it is now
// (and, a batch, swept the deposit's address).
func (s *Service) minedAtDepth(ctx context.Context, c *chain.Client, d domain.Deposit, t domain.ChainTx, upTo uint64) (bool, error) {
	if t.State != domain.ChainTxMined {
		return false, nil
	}
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if errors.Is(err, ethereum.NotFound) {
		return false, nil // left the chain (or not indexed yet): no proof it is there
	} else if err != nil {
		return false, err
	}
	if r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() > upTo {
		return false, nil
	}
	if t.Purpose == PurposeSweepBatch {
		return s.batchSweptAgain(ctx, c, d, t)
	}
	return true, nil
}

// ListReorgs pages through reorged deposits within a scope, newest first, optionally of one
// operator of it (NOT_FOUND outside it): the unresolved ones, or every one with
// includeResolved. The page token names the last reorg of the previous page.
func (s *Service) ListReorgs(ctx context.Context, scope domain.Scope, operatorID string, includeResolved bool, limit int,
	pageToken string) ([]Reorged, string, error) {
	ids, err := auth.NarrowedIDs(scope, operatorID)
	if err != nil {
		return nil, "", err
	}
	f := domain.ReorgFilter{OperatorIDs: ids, IncludeResolved: includeResolved}
	return pagetoken.List(reorgPages, pageToken, limit, func(after *pagetoken.Seq, limit int) ([]Reorged, error) {
		if after != nil {
			f.BeforeID = int64(*after)
		}
		f.Limit = limit
		list, err := store.New(s.pool).ListReorgs(ctx, f)
		if err != nil {
			return nil, fault.Wrap(err, "list reorged deposits")
		}
		return s.withDetails(ctx, list)
	}, func(r Reorged) pagetoken.Seq { return pagetoken.Seq(r.ID) })
}

// reorgPages names ListReorgs's page tokens.
const reorgPages = "reorgs"

// withDetails adds each reorg's deposit and audit trail.
func (s *Service) withDetails(ctx context.Context, list []domain.Reorg) ([]Reorged, error) {
	q := store.New(s.pool)
	ids := make([]int64, len(list))
	for i, r := range list {
		ids[i] = r.ID
	}
	actions, err := q.ReorgActions(ctx, ids)
	if err != nil {
		return nil, fault.Wrap(err, "reorg audit trail")
	}
	byReorg := map[int64][]domain.ReorgAction{}
	for _, a := range actions {
		byReorg[a.ReorgID] = append(byReorg[a.ReorgID], a)
	}
	out := make([]Reorged, len(list))
	for i, r := range list {
		d, err := q.GetDeposit(ctx, r.DepositID)
		if err != nil {
			return nil, fault.Wrap(err, "deposit %d", r.DepositID)
		}
		out[i] = Reorged{Reorg: r, Deposit: d, History: byReorg[r.ID]}
	}
	return out, nil
}
