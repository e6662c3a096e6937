package withdrawal

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// PurposePayout is the chain_txs purpose of payouts (hot wallet → destination); the ref is
// "withdrawal:<id>", so a withdrawal has at most one payout transaction, ever.
const PurposePayout = "payout"

func payoutRef(id string) string { return "withdrawal:" + id }

// PayoutArgs pays one withdrawal whose payout was queued.
type PayoutArgs struct {
	WithdrawalID string `json:"withdrawalId"`
}

// Kind implements river.JobArgs.
func (PayoutArgs) Kind() string { return "withdrawal.payout" }

// InsertOpts keeps one payout job per withdrawal alive.
func (PayoutArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: jobs.OnePerArgs()}
}

// PayoutWorker works PayoutArgs: it snoozes (not an attempt) while the chain catches up.
type PayoutWorker struct {
	river.WorkerDefaults[PayoutArgs]

	Service *Service
}

// Work implements river.Worker.
func (w *PayoutWorker) Work(ctx context.Context, job *river.Job[PayoutArgs]) error {
	done, err := w.Service.Pay(ctx, job.Args.WithdrawalID)
	if err != nil {
		return err
	}
	if !done {
		return river.JobSnooze(w.Service.cfg.PayoutPoll)
	}
	return nil
}

// ErrPayoutReverted: the payout transaction was mined but reverted; nothing was paid and the
// withdrawal waits for an engineer (it is never re-sent automatically).
var ErrPayoutReverted = errors.New("payout reverted")

// Pay moves a paying withdrawal on: it creates its payout transaction once (stored signed
// before any broadcast, see chaintx), advances it (re-broadcast, gas bumps), and once the
// mined attempt has the chain's confirmations completes the withdrawal and queues
// WITHDRAW_COMPLETE in the same database transaction. done is true when nothing is left.
func (s *Service) Pay(ctx context.Context, id string) (done bool, err error) {
	q := store.New(s.pool)
	w, err := q.GetWithdrawal(ctx, nil, id)
	if err != nil {
		return false, fmt.Errorf("withdrawal %s: %w", id, err)
	}
	if w.Status == domain.WithdrawalCompleted {
		return s.followCompleted(ctx, w)
	}
	if w.PayoutQueuedAt == nil {
		s.log.WarnContext(ctx, "payout job for a withdrawal that is not paying", "withdrawal", id, "status", w.Status)
		return true, nil
	}
	t, err := q.ChainTxByRef(ctx, PurposePayout, payoutRef(id))
	if held, perr := s.heldByPause(ctx, q, w, t, err); perr != nil || held {
		return false, perr
	}
	if errors.Is(err, store.ErrNotFound) {
		var stored bool
		t, stored, err = s.storePayout(ctx, w)
		if err == nil && !stored {
			return true, nil // stopped before signing: nothing is left
		}
		// A pause may have come while it was being signed: it is not sent until the resume.
		if err == nil {
			if held, perr := s.heldByPause(ctx, q, w, t, nil); perr != nil || held {
				return false, perr
			}
		}
	}
	if err != nil {
		return false, err
	}
	if t, err = s.engine.Advance(ctx, t.ID); err != nil {
		return false, err
	}
	switch t.State {
	case domain.ChainTxPending:
		return false, nil
	case domain.ChainTxMined:
		// Mined: paid once it has its confirmations (below).
	case domain.ChainTxReverted:
		s.log.ErrorContext(ctx, "payout reverted: nothing was paid; the withdrawal needs an engineer (coffer ops tx fail)", "withdrawal", id,
			"hash", t.MinedHash, "chain", w.ChainID, "tx", t.ID)
		return false, river.JobCancel(fmt.Errorf("withdrawal %s: %w (%s)", id, ErrPayoutReverted, t.MinedHash))
	case domain.ChainTxCancelled:
		// The service team's cancel was mined: once at its depth, nothing can pay and the
		// withdrawal is open again.
		confirmed, err := s.confirmed(ctx, t)
		if err != nil || !confirmed {
			return false, err
		}
		return true, s.abandon(ctx, w, t, domain.System, "payout cancelled: its cancel "+t.MinedHash+" was mined")
	case domain.ChainTxFailed:
		return true, nil // resolved with its withdrawal (FailPayout); not this ref's payout any more
	}
	confirmed, err := s.confirmed(ctx, t)
	if err != nil || !confirmed {
		return false, err
	}
	return true, s.complete(ctx, w, t)
}

// heldByPause reports whether a pause holds w's payout now: its transaction (t, or txErr
// store.ErrNotFound when none is stored) is not signed yet, or signed and never sent (a cancel
// goes out: it pays nothing). Paused, the job waits (snoozes) and loses nothing.
//
// A signed transaction holds the hot wallet's next nonce on its chain: every later payout
// from the hot wallet, whoever's, waits behind it. A pause of the whole chain (global or
// chain) holds it, since it holds those later payouts anyway. An operator pause that came
// while the payout was being signed must neither send it (the pause stops that operator's
// money) nor hold it (every other operator's payouts on the chain would wait until the
// resume): it is cancelled at its nonce, a 0-value self-send that pays nothing, and at the
// cancel's depth the withdrawal is open again with its reservation released (Pay, as for the
// service team's cancel), to be decided again once the pause is lifted.
func (s *Service) heldByPause(ctx context.Context, q *store.Queries, w domain.Withdrawal, t domain.ChainTx, txErr error) (bool, error) {
	unsigned := errors.Is(txErr, store.ErrNotFound)
	notSent := unsigned ||
		txErr == nil && t.State == domain.ChainTxPending && !everBroadcast(t) && t.RequestedAction != domain.TxCancel
	if !notSent {
		return false, nil
	}
	pause, err := pausedFor(ctx, q, w)
	if err != nil || pause == nil {
		return false, err
	}
	if !unsigned && pause.Scope == domain.PauseOperator {
		return s.cancelSignedUnderPause(ctx, w, t, *pause)
	}
	s.log.DebugContext(ctx, "payout held: payouts are paused", "withdrawal", w.ID, "pause", pause.Describe())
	return true, nil
}

// cancelSignedUnderPause asks for the cancel of w's signed, never-sent payout t under its
// operator's pause (heldByPause); the job's Advance carries it out. Refused (t changed
// meanwhile), the payout is held this pass and the next one reads it again.
func (s *Service) cancelSignedUnderPause(ctx context.Context, w domain.Withdrawal, t domain.ChainTx, pause domain.PayoutPause) (held bool, err error) {
	reason := "signed as its operator was paused, never sent: cancelled so that it neither pays nor holds the hot wallet's " +
		"nonce (" + pause.Describe() + ")"
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		return chaintx.RequestAction(ctx, tx, t, domain.TxCancel, domain.System, reason)
	})
	if errors.Is(err, chaintx.ErrRefused) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	s.log.WarnContext(ctx, "payout signed as its operator was paused: cancelled at its nonce; the withdrawal opens again "+
		"at the cancel's depth, to be decided again after the resume", "withdrawal", w.ID, "tx", t.ID, "nonce", t.Nonce,
		"pause", pause.Describe())
	return false, nil
}

// everBroadcast reports whether any attempt of t was recorded as handed to a node.
func everBroadcast(t domain.ChainTx) bool {
	for _, a := range t.Attempts {
		if a.BroadcastAt != nil {
			return true
		}
	}
	return false
}

// stopPayout takes back a payout that was not signed: the withdrawal is open again, held
// OPERATOR_INACTIVE, and its reservation goes back to the operator's available funds.
func (s *Service) stopPayout(ctx context.Context, tx pgx.Tx, w domain.Withdrawal) error {
	if _, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: w.ID, Action: PayoutStopped, Actor: domain.System, Held: OperatorInactive,
		Note: "operator inactive: payout stopped before it was signed"}); err != nil {
		return err
	}
	return funds.Release(ctx, tx, payoutOf(w, "system"), "payout stopped: operator inactive")
}

// payoutOf is the funds a withdrawal's payout moves.
func payoutOf(w domain.Withdrawal, actor domain.Actor) funds.Payout {
	return funds.Payout{WithdrawalID: w.ID, OperatorID: w.OperatorID, ChainID: w.ChainID, Currency: w.Currency, Decimals: w.Decimals,
		Amount: Units(w), Actor: actor}
}

// payoutRequest is the transaction paying w from the hot wallet.
func (s *Service) payoutRequest(ctx context.Context, w domain.Withdrawal) (chaintx.Request, error) {
	_, c, err := s.chains.Lookup(w.ChainID)
	if err != nil {
		return chaintx.Request{}, err
	}
	hot := s.wallet.HotWalletAddress()
	dest, amount := common.HexToAddress(w.Address), Units(w)
	req := chaintx.Request{ChainID: w.ChainID, From: hot, Purpose: PurposePayout, Ref: payoutRef(w.ID)}
	if w.ContractAddress == "" {
		// A smart-contract wallet (a Safe, an account delegated with EIP-7702) needs more
		// than a plain transfer's 21,000 gas to receive.
		gas, err := c.NativeTransferGas(ctx, hot, dest, amount)
		if err != nil {
			return req, fmt.Errorf("withdrawal %s: gas of the payout to %s: %w", w.ID, dest, err)
		}
		req.To, req.Value, req.GasLimit = dest, amount, gas
		return req, nil
	}
	token := common.HexToAddress(w.ContractAddress)
	req.To, req.Data = token, chain.ERC20Transfer(dest, amount)
	est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: hot, To: &token, Data: req.Data})
	if err != nil {
		return req, fmt.Errorf("withdrawal %s: estimate payout gas (does the hot wallet %s hold %s %s?): %w", w.ID, hot, amount, w.Currency, err)
	}
	req.GasLimit = est + est*3/10
	return req, nil
}

// storePayout creates a withdrawal's payout transaction. The operator is checked in the
// transaction that stores it, holding its row: a deactivation either comes first (the payout is
// stopped: stored is false) or waits until the payout is signed (and may already be on the
// network: it is finished).
func (s *Service) storePayout(ctx context.Context, w domain.Withdrawal) (t domain.ChainTx, stored bool, err error) {
	req, err := s.payoutRequest(ctx, w)
	if err != nil {
		return domain.ChainTx{}, false, err
	}
	t, stored, err = s.engine.SubmitIf(ctx, req, func(tx pgx.Tx) (bool, error) {
		op, err := store.New(tx).LockOperatorShare(ctx, w.OperatorID)
		if err != nil || op.Active {
			return err == nil, err
		}
		return false, s.stopPayout(ctx, tx, w)
	})
	if err != nil {
		return domain.ChainTx{}, false, fmt.Errorf("withdrawal %s: store payout: %w", w.ID, err)
	}
	if !stored {
		s.log.WarnContext(ctx, "payout stopped before signing: the operator is inactive; the withdrawal waits, its funds released",
			"withdrawal", w.ID, "operator_id", w.OperatorID)
	}
	return t, stored, nil
}

// confirmed reports whether a mined payout has the chain's confirmations and is still on the
// chain. A payout whose block left the chain is put back to pending: its stored bytes are
// broadcast again (same nonce, so it is paid at most once).
func (s *Service) confirmed(ctx context.Context, t domain.ChainTx) (bool, error) {
	tip, ok, err := s.depthTip(ctx, t.ChainID)
	if err != nil || !ok || t.MinedBlock > tip {
		return false, err
	}
	_, c, err := s.chains.Lookup(t.ChainID)
	if err != nil {
		return false, err
	}
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if errors.Is(err, chain.ErrIndexing) {
		return false, nil // the node cannot tell yet: no proof that it left the chain
	}
	if errors.Is(err, ethereum.NotFound) || (err == nil && r.BlockNumber.Uint64() != t.MinedBlock) {
		s.log.WarnContext(ctx, "payout left the chain (reorg): sending it again", "ref", t.Ref, "hash", t.MinedHash, "block", t.MinedBlock)
		if err := s.engine.Reopen(ctx, t); err != nil && !errors.Is(err, chaintx.ErrRefused) {
			return false, err
		}
		return false, nil // reopened, or changed since it was read (another worker): the next pass reads it again
	}
	return err == nil, err
}

// depthTip is the newest block of a chain at its confirmation policy's depth (the finalized
// block, or head less the confirmations); ok is false while the chain is shorter than that.
func (s *Service) depthTip(ctx context.Context, chainID int64) (tip uint64, ok bool, err error) {
	n, c, err := s.chains.Lookup(chainID)
	if err != nil {
		return 0, false, err
	}
	if n.Finalized {
		h, err := c.Finalized(ctx)
		if err != nil {
			return 0, false, err
		}
		return h.Number.Uint64(), true, nil
	}
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return 0, false, err
	}
	depth := uint64(n.Confirmations) //nolint:gosec // G115: chain config validation (chain/config.go) rejects negative confirmations
	if head+1 < depth {
		return 0, false, nil
	}
	return head + 1 - depth, true, nil
}

// complete records the confirmed payout: COMPLETED with its settlementTxHash, and
// WITHDRAW_COMPLETE queued, in one transaction.
func (s *Service) complete(ctx context.Context, w domain.Withdrawal, t domain.ChainTx) error {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		a, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: w.ID, Action: PayoutConfirmed, Actor: domain.System,
			Note: "payout " + t.MinedHash, SettlementTxHash: t.MinedHash})
		if err != nil {
			return err
		}
		if err := funds.Settle(ctx, tx, payoutOf(w, "system")); err != nil {
			return err
		}
		return s.webhooks.Enqueue(ctx, tx, webhook.Event{OperatorID: w.OperatorID, SubjectID: w.ID,
			Message: CompleteEvent(a.Withdrawal, a.Withdrawal.SessionRef)})
	})
	if err != nil {
		return err
	}
	s.log.InfoContext(ctx, "withdrawal completed", "withdrawal", w.ID, "hash", t.MinedHash, "chain", w.ChainID)
	if w.OfframpRef != "" && s.offramp != nil {
		if err := s.offramp.Paid(ctx, w.OfframpRef, common.HexToHash(t.MinedHash)); err != nil {
			// The crypto is delivered and the withdrawal complete; the provider's order is settled by hand.
			s.log.WarnContext(ctx, "off-ramp provider not told of the payout", "withdrawal", w.ID, "error", err)
		}
	}
	return nil
}
