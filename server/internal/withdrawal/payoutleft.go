package withdrawal

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Payouts that left the chain after they completed. A withdrawal completes once its payout is
// at the chain's depth, and its payout job ends there. A reorg deeper than the depth may still
// take the payout's block away, and a node may drop the payout rather than mine it again: the
// destination was never paid, and the hot wallet's nonce the payout held is unused on the
// chain, so every later payout of the chain, whoever's, waits behind the gap for good.
//
// The periodic job (Sweep) reads each chain's hot wallet nonce: a payout the books have mined
// at or above it is on no chain now (its own receipt, read next, proves it). It is put back to
// pending (chaintx.LeftChain) and its job, queued again, sends its stored bytes again: the same
// nonce, so it is paid at most once. The withdrawal stays COMPLETED with its settlement and its
// WITHDRAW_COMPLETE (the spec has no event taking one back); only the chain catches up.
//
// A reverted payout that left the chain is sent again as well (it waits for an engineer, who
// can mark it failed only once a revert is at depth): otherwise nobody could close its
// withdrawal, and its nonce would be a gap.
//
// A cancel (the service team's 0-value self-send at a payout's nonce) that left the chain the
// same way is sent again too: otherwise its nonce is a gap, and the payout's own signed bytes,
// valid at that nonce, could still be mined by a node that kept them, while its withdrawal,
// open again at the cancel's depth, was decided again and paid by a new payout. A cancel not
// retired yet is followed by its withdrawal's job (Pay); a retired one by the periodic job
// (advanceResolved).
//
// A payout marked failed (its nonce used at depth by another transaction, or by its own
// reverted attempt) whose nonce a reorg deeper than the depth freed again is cancelled at its
// nonce (cancelFailedAt): its own signed bytes could be mined, while its withdrawal was decided
// again. Its cancel is followed by the periodic job (advanceResolved), as a retired one is.

// resendPayoutsLeft reopens, on every chain, the mined payouts that are on no chain now, and
// reports how many. A chain that cannot be read is logged and tried again on the next run: it
// must not stop the expiry of the others.
func (s *Service) resendPayoutsLeft(ctx context.Context) int {
	hot := s.wallet.HotWalletAddress()
	reopened := 0
	for _, n := range s.chains.Networks() {
		k, err := s.resendPayoutsLeftOn(ctx, n.ChainID, hot)
		reopened += k
		if err != nil {
			s.log.WarnContext(ctx, "payouts that left the chain not checked: the chain could not be read", "chain", n.ChainID, "error", err)
		}
	}
	return reopened
}

// resendPayoutsLeftOn is resendPayoutsLeft on one chain.
func (s *Service) resendPayoutsLeftOn(ctx context.Context, chainID int64, hot common.Address) (int, error) {
	_, c, err := s.chains.Lookup(chainID)
	if err != nil {
		return 0, err
	}
	nonce, err := c.Nonce(ctx, hot, false)
	if err != nil {
		return 0, err
	}
	q := store.New(s.pool)
	ids, err := q.MinedTxIDsFromNonce(ctx, chainID, hot.Hex(), nonce, PurposePayout)
	if err != nil {
		return 0, err
	}
	reopened, err := s.cancelFailedAt(ctx, c, q, chainID, hot, nonce)
	if err != nil {
		return reopened, err
	}
	for _, id := range ids {
		t, err := q.ChainTx(ctx, id)
		if err != nil {
			return reopened, err
		}
		left, err := payoutLeft(ctx, c, t)
		if err != nil {
			return reopened, err
		}
		if !left {
			continue
		}
		if err := s.engine.Reopen(ctx, t); errors.Is(err, chaintx.ErrRefused) {
			continue // changed since it was read (another worker): the next run reads it again
		} else if err != nil {
			return reopened, err
		}
		reopened++
		s.log.ErrorContext(ctx, "a mined payout (or its revert or cancel) left the chain (a reorg deeper than the depth): its stored bytes are sent "+
			"again, the same nonce", "ref", t.Ref, "state", t.State, "hash", t.MinedHash, "block", t.MinedBlock, "nonce", t.Nonce,
			"chain", chainID)
	}
	return reopened, nil
}

// cancelFailedAt cancels, on one chain, the failed payouts at or above the hot wallet's nonce
// there (nonce), and reports how many. A payout is marked failed once its nonce is used at the
// depth by a transaction that is none of its attempts, or by its own reverted attempt; a reorg
// deeper than the depth may take that block away, and the nonce is free again: the payout's
// own signed bytes could be mined, while its withdrawal, open again since, was decided again
// and may be paid already by a new payout (paid twice), and nothing else would use the nonce
// (every later payout of the chain waiting behind the gap). Such a payout is pending again with
// a cancel requested (chaintx.NonceFreed); advanceResolved sends the cancel, a 0-value
// self-send at its nonce with higher fees, which replaces its bytes.
//
// The chain proves the nonce free: the nonce read is not past it, and none of its attempts
// (nor its reverted one) has a receipt. An attempt with a receipt means the node read the nonce
// before it was mined, or the payout was mined after it failed (an engineer must look): it is
// left alone.
func (s *Service) cancelFailedAt(ctx context.Context, c *chain.Client, q *store.Queries, chainID int64, hot common.Address,
	nonce uint64) (int, error) {
	ids, err := q.FailedTxIDsFromNonce(ctx, chainID, hot.Hex(), nonce, PurposePayout)
	if err != nil {
		return 0, err
	}
	cancelled := 0
	for _, id := range ids {
		t, err := q.ChainTx(ctx, id)
		if err != nil {
			return cancelled, err
		}
		mined, err := anyAttemptMined(ctx, c, t)
		if err != nil {
			return cancelled, err
		}
		if mined != "" {
			s.log.ErrorContext(ctx, "a failed payout at or above the hot wallet's nonce has a mined attempt: the node is behind, or it "+
				"was mined after it was marked failed (its withdrawal may be paid twice); an engineer must look", "tx", t.ID, "ref", t.Ref,
				"hash", mined, "nonce", t.Nonce, "chain", chainID)
			continue
		}
		reason := fmt.Sprintf("nonce %d of %s is free again (a reorg deeper than the depth took away the transaction that used it): "+
			"the failed payout's own bytes could be mined; cancelled at its nonce", t.Nonce, t.From)
		if err := s.engine.CancelFreedNonce(ctx, t, domain.System, reason); err != nil {
			if errors.Is(err, chaintx.ErrRefused) {
				continue // changed meanwhile (another worker): the next run reads it again
			}
			return cancelled, err
		}
		cancelled++
		s.log.ErrorContext(ctx, "a failed payout's nonce is free again (a reorg deeper than the depth): it is cancelled at its nonce, "+
			"or its own bytes could pay its withdrawal twice", "tx", t.ID, "ref", t.Ref, "nonce", t.Nonce, "chain", chainID)
	}
	return cancelled, nil
}

// anyAttemptMined is the hash of an attempt of t (or its reverted attempt) the chain has a
// receipt for, "" for none. A node still indexing proves nothing: an error.
func anyAttemptMined(ctx context.Context, c *chain.Client, t domain.ChainTx) (string, error) {
	hashes := make([]string, 0, len(t.Attempts)+1)
	if t.MinedHash != "" {
		hashes = append(hashes, t.MinedHash)
	}
	for _, a := range t.Attempts {
		hashes = append(hashes, a.Hash)
	}
	for _, h := range hashes {
		_, err := c.Receipt(ctx, common.HexToHash(h))
		switch {
		case errors.Is(err, ethereum.NotFound) && !errors.Is(err, chain.ErrIndexing):
		case err != nil:
			return "", fmt.Errorf("payout %d receipt: %w", t.ID, err)
		default:
			return h, nil
		}
	}
	return "", nil
}

// advanceResolved advances the payout transactions pending again after they were resolved (a
// retired cancel whose block left the chain, reopened by resendPayoutsLeft; a failed payout
// whose nonce is free again, cancelled by cancelFailedAt), which no withdrawal's job follows any
// more: their newest attempt, the cancel, is sent again (or made, then sent). One that
// fails is logged and tried again on the next run.
func (s *Service) advanceResolved(ctx context.Context) {
	ids, err := store.New(s.pool).ResolvedPendingTxIDs(ctx, PurposePayout)
	if err != nil {
		s.log.WarnContext(ctx, "resolved payouts pending again not listed", "error", err)
		return
	}
	for _, id := range ids {
		t, err := s.engine.Advance(ctx, id)
		switch {
		case err != nil:
			s.log.WarnContext(ctx, "resolved payout pending again not advanced", "tx", id, "error", err)
		case t.State == domain.ChainTxMined:
			// The payout's own bytes were mined instead of its cancel: its withdrawal, decided again
			// since, may be paid twice.
			s.log.ErrorContext(ctx, "a cancelled payout was mined after its cancel left the chain: its withdrawal may be paid "+
				"twice; an engineer must look", "tx", id, "ref", t.Ref, "hash", t.MinedHash, "block", t.MinedBlock)
		}
	}
}

// payoutLeft reports whether the chain proves t's mined attempt is on it no more: no receipt.
// A receipt means it was mined after the nonce was read (or moved: the payout job follows
// that). A node still indexing proves nothing: an error, and the chain waits for the next run.
func payoutLeft(ctx context.Context, c *chain.Client, t domain.ChainTx) (bool, error) {
	_, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	switch {
	case errors.Is(err, ethereum.NotFound) && !errors.Is(err, chain.ErrIndexing):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("payout %d receipt: %w", t.ID, err)
	}
	return false, nil
}

// followCompleted moves on the payout of a completed withdrawal. One left the chain after the
// withdrawal completed (resendPayoutsLeft reopened it) is advanced (its stored bytes sent
// again) until it is mined again; done is true once nothing is pending. Nothing else changes:
// the withdrawal was settled and told once.
func (s *Service) followCompleted(ctx context.Context, w domain.Withdrawal) (done bool, err error) {
	t, err := store.New(s.pool).ChainTxByRef(ctx, PurposePayout, payoutRef(w.ID))
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil || t.State != domain.ChainTxPending {
		return err == nil, err
	}
	if t, err = s.engine.Advance(ctx, t.ID); err != nil || t.State == domain.ChainTxPending {
		return false, err
	}
	if t.State != domain.ChainTxMined {
		s.log.ErrorContext(ctx, "the payout of a completed withdrawal, sent again after its block left the chain, did not pay: "+
			"an engineer must look", "withdrawal", w.ID, "tx", t.ID, "state", t.State, "hash", t.MinedHash)
		return true, nil
	}
	if t.MinedHash != w.SettlementTxHash {
		return true, s.moveSettlement(ctx, w, t)
	}
	s.log.InfoContext(ctx, "payout of a completed withdrawal mined again after its block left the chain", "withdrawal", w.ID,
		"hash", t.MinedHash, "block", t.MinedBlock)
	return true, nil
}

// settlementMoved is the audit action of a completed withdrawal's settlement moved to the
// attempt the chain mined when its payout was sent again (moveSettlement). It changes no
// status, so it is no action of the transition table (as a held APPROVE's audit row is not).
const settlementMoved = "payout:mined-again"

// moveSettlement names, as the settlementTxHash of completed withdrawal w, the attempt of its
// payout t that the chain mined when it was sent again: a replacement with higher fees at the
// same nonce (its first attempt, old, is replaced at once) has another hash. The
// WITHDRAW_COMPLETE already sent named the first one; the reconciliation API names the one on
// the chain.
func (s *Service) moveSettlement(ctx context.Context, w domain.Withdrawal, t domain.ChainTx) error {
	note := fmt.Sprintf("payout sent again after its block left the chain: mined as %s in block %d (was %s)", t.MinedHash,
		t.MinedBlock, w.SettlementTxHash)
	moved, err := store.New(s.pool).MoveSettlement(ctx, w.ID, t.MinedHash, domain.WithdrawalTransition{From: w.Status, To: w.Status,
		Action: settlementMoved, Actor: domain.System, Note: note})
	if err != nil {
		return fmt.Errorf("withdrawal %s: move its settlement to %s: %w", w.ID, t.MinedHash, err)
	}
	if moved {
		s.log.WarnContext(ctx, "completed withdrawal's payout mined again as another attempt: its settlementTxHash names it now",
			"withdrawal", w.ID, "was", w.SettlementTxHash, "hash", t.MinedHash, "block", t.MinedBlock)
	}
	return nil
}

// payoutsToFollow lists the withdrawals whose payout job must run: those paying, and the
// completed ones whose payout is pending again (a crash after the reopen and before the job
// was queued included).
func (s *Service) payoutsToFollow(ctx context.Context) ([]string, error) {
	q := store.New(s.pool)
	paying, err := q.PayingWithdrawals(ctx)
	if err != nil {
		return nil, err
	}
	again, err := q.CompletedWithdrawalsPayingAgain(ctx, PurposePayout)
	return append(paying, again...), err
}
