package withdrawal

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Resolving a stuck or reverted payout (OpsService.{Resend,Cancel,Fail}ChainTransaction,
// `coffer ops tx`). Each action is audited on the transaction (chain_tx_actions: actor,
// reason) and, when it reopens the withdrawal, in the withdrawal's trail:
//
//   - resend: any pending transaction. The worker advancing it replaces its newest attempt at
//     once with fees raised by at least 12.5% (same nonce and payload), stored before it is
//     broadcast. Every attempt's hash is followed: whichever is mined settles it.
//   - cancel: a pending payout. The worker replaces it with a 0-value self-send at the same
//     nonce and higher fees. If the payout is mined anyway, the withdrawal completes as usual;
//     if the cancel is, then once it is at the chain's depth the withdrawal is open again
//     (PROCESSING or AWAITING_APPROVAL, PayoutAbandoned) with its reservation released, to be
//     decided again (a new payout transaction) or rejected.
//   - fail: a payout that provably can never be mined: reverted, its receipt at the chain's
//     depth; or pending with its nonce used at the chain's depth by a transaction that is none
//     of its attempts. Its withdrawal is opened again the same way. Anything that could still
//     be mined (broadcast or not: a crash between a broadcast and its record leaves no trace)
//     is refused FAILED_PRECONDITION: cancel it instead, or the withdrawal decided again
//     would pay twice.

// TxWithActions is a transaction with its ops audit trail and, for a payout, its withdrawal.
type TxWithActions struct {
	domain.ChainTx

	WithdrawalID string
	Actions      []domain.TxActionRecord
}

// payoutWithdrawal is the withdrawal a live payout ref names ("" for other transactions and
// resolved payouts).
func payoutWithdrawal(t domain.ChainTx) string {
	id, ok := strings.CutPrefix(t.Ref, "withdrawal:")
	if t.Purpose != PurposePayout || !ok || strings.Contains(id, ":") {
		return ""
	}
	return id
}

func (s *Service) loadTx(ctx context.Context, q *store.Queries, id int64) (TxWithActions, error) {
	t, err := q.ChainTx(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return TxWithActions{}, fault.New(fault.NotFound, "transaction %d not found", id)
	} else if err != nil {
		return TxWithActions{}, fault.Wrap(err, "load transaction")
	}
	actions, err := q.TxActions(ctx, id)
	if err != nil {
		return TxWithActions{}, fault.Wrap(err, "load transaction actions")
	}
	wid, _ := strings.CutPrefix(strings.SplitN(t.Ref, ":resolved:", 2)[0], "withdrawal:")
	if t.Purpose != PurposePayout {
		wid = ""
	}
	return TxWithActions{ChainTx: t, WithdrawalID: wid, Actions: actions}, nil
}

// ChainTx returns a transaction with its audit trail.
func (s *Service) ChainTx(ctx context.Context, id int64) (TxWithActions, error) {
	return s.loadTx(ctx, store.New(s.pool), id)
}

// ChainTxs lists transactions newest first (at most limit, 1..500); with stuck, those that
// need an engineer: pending for longer than stuckAfter, and reverted or cancelled payouts not
// resolved yet.
func (s *Service) ChainTxs(ctx context.Context, stuck bool, stuckAfter time.Duration, limit int) ([]TxWithActions, error) {
	if limit <= 0 || limit > 500 {
		limit = 500
	}
	q := store.New(s.pool)
	list, err := q.ChainTxs(ctx, stuck, s.now().Add(-stuckAfter), int32(limit))
	if err != nil {
		return nil, fault.Wrap(err, "list transactions")
	}
	out := make([]TxWithActions, 0, len(list))
	for _, t := range list {
		x, err := s.loadTx(ctx, q, t.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func needReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return fault.Invalid("reason", "a reason is required (it is kept in the audit trail)")
	}
	return nil
}

// RequestTx asks for a re-send (any pending transaction) or a cancel (a pending payout); the
// worker carries it out on the transaction's next advance.
func (s *Service) RequestTx(ctx context.Context, id int64, a domain.TxAction, actor domain.Actor, reason string) (TxWithActions, error) {
	if err := needReason(reason); err != nil {
		return TxWithActions{}, err
	}
	if a != domain.TxResend && a != domain.TxCancel {
		return TxWithActions{}, fault.Invalid("action", "must be resend or cancel")
	}
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		t, err := s.loadTx(ctx, store.New(tx), id)
		if err != nil {
			return err
		}
		wid := payoutWithdrawal(t.ChainTx)
		if a == domain.TxCancel && wid == "" {
			return fault.New(fault.FailedPrecondition, "transaction %d is a %s, not a payout: only payouts are cancelled", id, t.Purpose)
		}
		if a == domain.TxCancel {
			if err := refuseCancelOfCompleted(ctx, store.New(tx), id, wid); err != nil {
				return err
			}
		}
		if a == domain.TxResend && cancelPending(t.ChainTx) {
			return fault.New(fault.FailedPrecondition, "transaction %d is a resolved payout whose nonce is free again, to be cancelled: "+
				"a re-send before its cancel is sent would send its own bytes again (its withdrawal was decided again)", id)
		}
		if err := chaintx.RequestAction(ctx, tx, t.ChainTx, a, actor, strings.TrimSpace(reason)); errors.Is(err, chaintx.ErrRefused) {
			return fault.New(fault.FailedPrecondition, "transaction %d is %s: only a pending transaction is re-sent or cancelled", id, t.State)
		} else if err != nil {
			return fault.Wrap(err, "request %s", a)
		}
		if wid != "" {
			// The payout's job carries it out (a new one if it ended).
			return s.queuePayout(ctx, tx, wid)
		}
		return nil
	})
	if err != nil {
		return TxWithActions{}, err
	}
	s.log.WarnContext(ctx, "transaction "+string(a)+" requested", "tx", id, "actor", actor, "reason", reason)
	return s.ChainTx(ctx, id)
}

// cancelPending reports whether t is a resolved payout pending again whose cancel was not made
// yet (a failed payout whose nonce a deep reorg freed: chaintx.NonceFreed). A re-send now would
// replace the cancel requested with its own bytes, and its withdrawal was decided again.
func cancelPending(t domain.ChainTx) bool {
	return t.Purpose == PurposePayout && strings.Contains(t.Ref, ":resolved:") && t.State == domain.ChainTxPending &&
		(len(t.Attempts) == 0 || !t.Latest().Cancel)
}

// refuseCancelOfCompleted refuses the cancel of a completed withdrawal's payout: one pending
// again after its block left the chain (a deep reorg) is being sent again, and the withdrawal
// was settled and told COMPLETED, so its money must reach the destination (re-send it instead).
func refuseCancelOfCompleted(ctx context.Context, q *store.Queries, txID int64, wid string) error {
	w, err := q.GetWithdrawal(ctx, nil, wid)
	if err != nil {
		return fault.Wrap(err, "load withdrawal %s", wid)
	}
	if w.Status == domain.WithdrawalCompleted {
		return fault.New(fault.FailedPrecondition, "transaction %d pays withdrawal %s, which is COMPLETED (its payout is being sent "+
			"again after its block left the chain): it is never cancelled; re-send it instead", txID, wid)
	}
	return nil
}

// FailPayout marks a payout that can never be mined failed, releases its withdrawal's
// reservation and opens the withdrawal again, in one transaction (see the top of this file for
// the proof it asks).
func (s *Service) FailPayout(ctx context.Context, id int64, actor domain.Actor, reason string) (TxWithActions, error) {
	if err := needReason(reason); err != nil {
		return TxWithActions{}, err
	}
	t, err := s.ChainTx(ctx, id)
	if err != nil {
		return t, err
	}
	wid := payoutWithdrawal(t.ChainTx)
	switch {
	case t.Purpose != PurposePayout:
		return t, fault.New(fault.FailedPrecondition, "transaction %d is a %s, not a payout: only payouts are marked failed", id, t.Purpose)
	case t.State == domain.ChainTxMined:
		return t, fault.New(fault.FailedPrecondition, "transaction %d is mined: the payout was made; nothing to resolve", id)
	case wid == "" || t.State == domain.ChainTxFailed || t.State == domain.ChainTxCancelled:
		return t, fault.New(fault.FailedPrecondition, "transaction %d is already resolved (%s)", id, t.State)
	}
	if _, _, err := s.chains.Lookup(t.ChainID); err != nil {
		// Whether it can still be mined is unknown without the chain: never marked failed blind.
		return t, fault.New(fault.FailedPrecondition, "transaction %d is on chain %d, which is not configured: whether it can "+
			"still be mined cannot be checked; configure the chain again to resolve it", id, t.ChainID)
	}
	if why, err := s.couldStillPay(ctx, t.ChainTx); errors.Is(err, chain.ErrIndexing) {
		// Its receipt may exist: "not mined" is not proven, and deciding it again could pay twice.
		return t, fault.New(fault.Unavailable, "transaction %d: the chain %d node is still indexing transactions, so whether "+
			"the payout was mined cannot be told yet; try again once it has finished", id, t.ChainID)
	} else if err != nil {
		return t, fault.Wrap(err, "check transaction %d on chain %d", id, t.ChainID)
	} else if why != "" {
		return t, fault.New(fault.FailedPrecondition, "transaction %d could still be mined (%s): cancel it or re-send it instead", id, why)
	}
	w, err := store.New(s.pool).GetWithdrawal(ctx, nil, wid)
	if err != nil {
		return t, fault.Wrap(err, "load withdrawal %s", wid)
	}
	if err := s.abandon(ctx, w, t.ChainTx, actor, "payout transaction "+strconv.FormatInt(id, 10)+" marked failed: "+strings.TrimSpace(reason)); err != nil {
		return t, err
	}
	return s.ChainTx(ctx, id)
}

// couldStillPay says why t might still be mined ("" when it never can): a reverted receipt
// not at depth, or a pending transaction whose nonce is not used at depth, or is used by one
// of its own attempts.
func (s *Service) couldStillPay(ctx context.Context, t domain.ChainTx) (string, error) {
	_, c, err := s.chains.Lookup(t.ChainID)
	if err != nil {
		return "", err
	}
	tip, ok, err := s.depthTip(ctx, t.ChainID)
	if err != nil {
		return "", err
	}
	if !ok {
		return "the chain is shorter than its confirmation depth", nil
	}
	if t.State == domain.ChainTxReverted {
		if t.MinedBlock > tip {
			return fmt.Sprintf("it reverted in block %d, not yet at the confirmation depth (%d)", t.MinedBlock, tip), nil
		}
		r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
		if errors.Is(err, ethereum.NotFound) || err == nil && r.BlockNumber.Uint64() != t.MinedBlock {
			return "its reverted block left the chain", nil
		}
		return "", err
	}
	// Pending: the nonce at depth first, then every attempt's receipt (an attempt mined in
	// between shows up in the second read).
	n, err := c.NonceAt(ctx, common.HexToAddress(t.From), tip)
	if err != nil {
		return "", err
	}
	if n <= t.Nonce {
		return fmt.Sprintf("nonce %d of %s is not used at the confirmation depth", t.Nonce, t.From), nil
	}
	for _, a := range t.Attempts {
		if _, err := c.Receipt(ctx, common.HexToHash(a.Hash)); err == nil {
			return "attempt " + a.Hash + " is mined", nil
		} else if !errors.Is(err, ethereum.NotFound) || errors.Is(err, chain.ErrIndexing) {
			return "", err
		}
	}
	return "", nil
}

// abandon opens a paying withdrawal again after its payout transaction t can never pay
// (failed, or its cancel mined at depth), releasing its reservation, in one transaction.
func (s *Service) abandon(ctx context.Context, w domain.Withdrawal, t domain.ChainTx, actor domain.Actor, note string) error {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: w.ID, Action: PayoutAbandoned, Actor: actor, Note: note}); err != nil {
			return err
		}
		if err := funds.Release(ctx, tx, payoutOf(w, actor), note); err != nil {
			return fault.Wrap(err, "release funds")
		}
		var err error
		if t.State == domain.ChainTxCancelled {
			err = chaintx.Retire(ctx, tx, t)
		} else {
			err = chaintx.MarkFailed(ctx, tx, t, actor, note)
		}
		if errors.Is(err, chaintx.ErrRefused) {
			return fault.New(fault.Conflict, "transaction %d changed meanwhile; look again", t.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	s.log.WarnContext(ctx, "payout abandoned: the withdrawal is open again, its funds released", "withdrawal", w.ID, "tx", t.ID,
		"state", t.State, "actor", actor, "note", note)
	return nil
}
