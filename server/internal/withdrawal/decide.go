package withdrawal

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/store"
)

// HeldReason is why an APPROVE could not settle (the spec's heldReason values).
type HeldReason string

// The spec's held reasons.
const (
	CapExceeded            HeldReason = "CAP_EXCEEDED"
	ApprovalNotEnabled     HeldReason = "APPROVAL_NOT_ENABLED"
	OperatorInactive       HeldReason = "OPERATOR_INACTIVE"
	HeldExpired            HeldReason = "EXPIRED"
	TemporarilyUnavailable HeldReason = "TEMPORARILY_UNAVAILABLE"
)

// HeldReasons lists the held reasons. It is a new slice each call: a caller may not change the set.
func HeldReasons() []HeldReason {
	return []HeldReason{CapExceeded, ApprovalNotEnabled, OperatorInactive, HeldExpired, TemporarilyUnavailable}
}

// decisions are the actions Decide takes, true for those that approve.
func decisions() map[Action]bool {
	return map[Action]bool{OperatorApprove: true, OperatorReject: false, AdminApprove: true, AdminDeny: false}
}

// Decided is a decision's answer: the withdrawal as it stands after it, and the held reason
// when an APPROVE could not settle.
type Decided struct {
	Withdrawal domain.Withdrawal
	Held       HeldReason
}

// Decide applies a decision on a mode-B withdrawal: the operator's (OperatorApprove or
// OperatorReject; POST /withdraw/:id/decision) or an admin's panel override (AdminApprove or
// AdminDeny). Any other action is INVALID_ARGUMENT. scope limits the withdrawals the caller
// may decide.
//
// APPROVE checks, under the operator's row lock (so concurrent approvals are counted one after
// the other), that the operator is active and enabled, the request has not expired, the
// per-transaction and rolling 24-hour caps hold, no payout pause covers it (pause.go), the hot
// wallet can cover it and the operator's
// own funds do (reserving them); then it queues the payout and waits up to Config.SettleWait
// for it to confirm. An APPROVE on an EXPIRED request answers held EXPIRED; on a cancelled
// one, its status. When a check fails the
// withdrawal stays AWAITING_APPROVAL and the answer is held with the reason. A repeated
// decision answers the current status and never pays again.
func (s *Service) Decide(ctx context.Context, scope domain.Scope, id string, action Action, actor domain.Actor, note string) (Decided, error) {
	approve, ok := decisions()[action]
	if !ok {
		return Decided{}, fault.Invalid("decision", "%q is not a decision: use %s, %s, %s or %s", action,
			OperatorApprove, OperatorReject, AdminApprove, AdminDeny)
	}
	var out Decided
	var queued bool
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		w, err := lock(ctx, q, scope, id)
		if err != nil {
			return err
		}
		o, err := Next(StateOf(w), action)
		if err != nil {
			return err
		}
		out.Withdrawal = w
		if o.Unchanged {
			out.Held = o.Held
			return nil
		}
		if o.Payout {
			held, err := s.approvalReserve(ctx, tx, w, actor)
			if err != nil {
				return err
			}
			if held != "" {
				out.Held = held
				return q.HoldWithdrawal(ctx, w.ID, domain.WithdrawalTransition{From: w.Status, To: w.Status,
					Action: string(action), Actor: actor, Note: "held: " + string(held)}, string(held))
			}
		}
		a, err := Apply(ctx, tx, scope, Change{ID: id, Action: action, Actor: actor, Note: note})
		if err != nil {
			return err
		}
		out.Withdrawal = a.Withdrawal
		if a.Outcome.Payout {
			queued = true
			return s.queuePayout(ctx, tx, id)
		}
		return nil
	})
	if err != nil {
		return Decided{}, err
	}
	if out.Held != "" {
		s.log.InfoContext(ctx, "approval held", "withdrawal", id, "reason", out.Held, "actor", actor, "status", out.Withdrawal.Status)
		out.Withdrawal.HeldReason = string(out.Held)
		return out, nil
	}
	if queued {
		s.log.InfoContext(ctx, "withdrawal approved: payout queued", "withdrawal", id, "actor", actor)
	}
	if approve && out.Withdrawal.PayoutQueuedAt != nil || queued {
		out.Withdrawal = s.awaitSettled(ctx, scope, id, out.Withdrawal)
	}
	return out, nil
}

// AdminStatus is the admin two-step (PATCH /admin/withdrawals/:id/status): PROCESSING, then
// COMPLETED (payout, then WITHDRAW_COMPLETE) or REJECTED. COMPLETED is refused, changing
// nothing, when the operator is inactive or its available funds do not cover the payout (409
// CONFLICT naming the shortfall), while a payout pause covers it (503 naming the pause and its
// reason; pause.go), or while the hot wallet cannot cover it (503); otherwise it
// reserves the funds, queues the payout and waits up to Config.SettleWait for it to confirm.
func (s *Service) AdminStatus(ctx context.Context, scope domain.Scope, id string, status domain.WithdrawalStatus, actor domain.Actor, note string) (domain.Withdrawal, error) {
	action, ok := map[domain.WithdrawalStatus]Action{domain.WithdrawalProcessing: AdminProcess, domain.WithdrawalCompleted: AdminComplete, domain.WithdrawalRejected: AdminReject}[status]
	if !ok {
		return domain.Withdrawal{}, fault.Invalid("status", "must be PROCESSING, COMPLETED or REJECTED")
	}
	var out domain.Withdrawal
	var paying bool
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		w, err := lock(ctx, store.New(tx), scope, id)
		if err != nil {
			return err
		}
		if Lapsed(w, s.now()) {
			// Expired by the spec's TTL, whether or not the periodic job recorded it yet: an admin
			// taking it now would pay a request the operator may have written off.
			return fault.New(fault.FailedPrecondition, "the withdrawal expired: it was left unactioned past its TTL (%s)",
				w.ExpiresAt.UTC().Format(time.RFC3339))
		}
		o, err := Next(StateOf(w), action)
		if err != nil {
			return err
		}
		if o.Unchanged {
			out, paying = w, w.PayoutQueuedAt != nil
			return nil
		}
		if o.Payout {
			if err := s.adminReserve(ctx, tx, w, actor); err != nil {
				return err
			}
		}
		a, err := Apply(ctx, tx, scope, Change{ID: id, Action: action, Actor: actor, Note: note})
		if err != nil {
			return err
		}
		out = a.Withdrawal
		if a.Outcome.Payout {
			paying = true
			return s.queuePayout(ctx, tx, id)
		}
		return nil
	})
	if err != nil || !paying {
		return out, err
	}
	return s.awaitSettled(ctx, scope, id, out), nil
}

// approvalReserve runs an APPROVE's checks and, when they pass, reserves the operator's own
// funds in the transaction that queues the payout; "" means it may settle.
func (s *Service) approvalReserve(ctx context.Context, tx pgx.Tx, w domain.Withdrawal, actor domain.Actor) (HeldReason, error) {
	held, err := s.approvalHeld(ctx, tx, w)
	if err != nil || held != "" {
		return held, err
	}
	var short *funds.Shortfall
	if err := funds.Reserve(ctx, tx, payoutOf(w, actor)); errors.As(err, &short) {
		s.log.InfoContext(ctx, "approval held: the operator's funds do not cover it", "withdrawal", w.ID, "why", short.Error())
		return TemporarilyUnavailable, nil
	} else if err != nil {
		return "", fault.Wrap(err, "reserve funds")
	}
	return "", nil
}

// adminReserve refuses an admin's COMPLETED, changing nothing, unless the operator is active,
// its funds cover the payout (reserved here) and the hot wallet can cover it.
func (s *Service) adminReserve(ctx context.Context, tx pgx.Tx, w domain.Withdrawal, actor domain.Actor) error {
	op, err := store.New(tx).LockOperatorCaps(ctx, w.OperatorID)
	if err != nil {
		return fault.Wrap(err, "lock operator")
	}
	if !op.Active {
		return fault.New(fault.Conflict, "the operator is inactive: its withdrawals are not paid until the service team reactivates it")
	}
	if err := refuseIfPaused(ctx, tx, w); err != nil {
		return err
	}
	// The operator's funds first (a refusal that is the operator's to fix), then the hot
	// wallet's liquidity (the service team's); either refusal rolls the reservation back.
	var shortfall *funds.Shortfall
	if err := funds.Reserve(ctx, tx, payoutOf(w, actor)); errors.As(err, &shortfall) {
		return fault.New(fault.Conflict, "%s; nothing was paid", shortfall.Error())
	} else if err != nil {
		return fault.Wrap(err, "reserve funds")
	}
	short, err := s.liquidityShort(ctx, tx, w)
	if err != nil {
		return err
	}
	if short != "" {
		return fault.New(fault.Unavailable, "%s; try again when the hot wallet is funded", short)
	}
	return nil
}

// StateOf is what the transition table sees of a withdrawal: paying from the moment its
// payout is queued until it completes.
func StateOf(w domain.Withdrawal) State {
	s := w.Status
	return State{Status: s, Paying: w.PayoutQueuedAt != nil && !s.Final()}
}

// Lapsed reports whether a PENDING withdrawal (nobody acted on it: mode A's admins take it to
// PROCESSING first) is past its TTL at now: EXPIRED by the spec, though the periodic job
// (expire.go) may not have recorded it yet. (An AWAITING_APPROVAL one may have been approved
// and reopened; approvalHeld and the job look at its audit trail.)
func Lapsed(w domain.Withdrawal, now time.Time) bool {
	return w.Status == domain.WithdrawalPending && !now.Before(w.ExpiresAt)
}

// AllowedAt is Allowed for a withdrawal as it stands at now: none for one that lapsed.
func AllowedAt(w domain.Withdrawal, now time.Time) []Action {
	if Lapsed(w, now) {
		return Allowed(State{Status: domain.WithdrawalExpired})
	}
	return Allowed(StateOf(w))
}

// approvalHeld runs an APPROVE's checks in its transaction; "" means it may settle.
func (s *Service) approvalHeld(ctx context.Context, tx pgx.Tx, w domain.Withdrawal) (HeldReason, error) {
	q := store.New(tx)
	op, err := q.LockOperatorCaps(ctx, w.OperatorID)
	if err != nil {
		return "", fault.Wrap(err, "lock operator")
	}
	now := s.now()
	switch {
	case !op.Active:
		return OperatorInactive, nil
	case !op.ApprovalEnabled:
		return ApprovalNotEnabled, nil
	case !now.Before(w.ExpiresAt):
		// Past the TTL, unless it was approved once (its payout stopped or abandoned since):
		// only an unactioned request expires.
		if approved, err := q.WithdrawalWasApproved(ctx, w.ID); err != nil {
			return "", fault.Wrap(err, "load audit trail")
		} else if !approved {
			return HeldExpired, nil
		}
	}
	if p, err := pausedFor(ctx, q, w); err != nil || p != nil {
		if p != nil {
			s.log.InfoContext(ctx, "approval held: payouts are paused", "withdrawal", w.ID, "pause", p.Describe())
			return TemporarilyUnavailable, nil
		}
		return "", err
	}
	if held, err := s.capsHeld(ctx, q, op, w, now); err != nil || held != "" {
		return held, err
	}
	short, err := s.liquidityShort(ctx, tx, w)
	if err != nil {
		return "", err
	}
	if short != "" {
		s.log.WarnContext(ctx, "hot wallet cannot cover an approved withdrawal", "withdrawal", w.ID, "chain", w.ChainID, "why", short)
		return TemporarilyUnavailable, nil
	}
	return "", nil
}

// capsHeld checks the per-transaction and rolling 24-hour caps, in the operator's platform
// currency as it is now: amounts recorded in another one (the service team changed it since)
// are converted at the current rate from their USD value, never read as the new currency.
// Without that rate the approval is held TEMPORARILY_UNAVAILABLE.
func (s *Service) capsHeld(ctx context.Context, q *store.Queries, op domain.Operator, w domain.Withdrawal, now time.Time) (HeldReason, error) {
	if !op.PerTxCap.Valid && !op.DailyCap.Valid {
		return "", nil
	}
	amount, err := s.inPlatformCurrency(ctx, op, w.CapCurrency, w.CapAmount.Decimal, w.AmountInUSD.Decimal)
	if err != nil {
		s.log.WarnContext(ctx, "approval held: no rate for the operator's currency", "withdrawal", w.ID, "currency", op.FiatCurrency, "err", err)
		return TemporarilyUnavailable, nil
	}
	if op.PerTxCap.Valid && amount.GreaterThan(op.PerTxCap.Decimal) {
		return CapExceeded, nil
	}
	if !op.DailyCap.Valid {
		return "", nil
	}
	paid, err := q.PaidSince(ctx, op.ID, now.Add(-24*time.Hour))
	if err != nil {
		return "", fault.Wrap(err, "sum paid withdrawals")
	}
	total := amount
	for _, p := range paid {
		v, err := s.inPlatformCurrency(ctx, op, p.Currency, p.Amount, p.USD)
		if err != nil {
			s.log.WarnContext(ctx, "approval held: no rate for the operator's currency", "withdrawal", w.ID, "currency", op.FiatCurrency, "err", err)
			return TemporarilyUnavailable, nil
		}
		total = total.Add(v)
	}
	if total.GreaterThan(op.DailyCap.Decimal) {
		return CapExceeded, nil
	}
	return "", nil
}

// inPlatformCurrency is a cap amount recorded in currency (its USD value usd) in the
// operator's platform currency now: the amount itself when that is its currency (or it
// predates the record), else usd at the current rate.
func (s *Service) inPlatformCurrency(ctx context.Context, op domain.Operator, currency string, amount, usd decimal.Decimal) (decimal.Decimal, error) {
	if currency == "" || strings.EqualFold(currency, op.FiatCurrency) {
		return amount, nil
	}
	perUSD, err := s.prices.PerUSD(ctx, op.FiatCurrency)
	if err != nil {
		return decimal.Decimal{}, err
	}
	return usd.Mul(perUSD), nil
}

// tokenTransferGas is the gas the liquidity check reserves for a token payout.
const tokenTransferGas = 100000

// chainUnreadable is liquidityShort's answer when the chain cannot be read: a refusal to try
// again, not a fault, so the caller holds (or refuses) the payout; the cause is logged.
func (s *Service) chainUnreadable(ctx context.Context, w domain.Withdrawal, err error) string {
	s.log.WarnContext(ctx, "liquidity check: cannot read the chain", "withdrawal", w.ID, "chain", w.ChainID, "err", err)
	return "temporarily unable to read the chain"
}

// liquidityShort checks, under the chain's payout lock, that the hot wallet holds the
// withdrawal's amount on top of every queued payout not mined yet, and the gas to send it. It
// returns why not, or "". The balance is read after the lock is taken and the reservations
// summed, so a payout mined in between is at worst counted twice (too careful), never missed.
func (s *Service) liquidityShort(ctx context.Context, tx pgx.Tx, w domain.Withdrawal) (string, error) {
	n, c, err := s.chains.Lookup(w.ChainID)
	if err != nil {
		return "", fault.Wrap(err, "withdrawal %s", w.ID)
	}
	q := store.New(tx)
	if err := q.LockPayoutLiquidity(ctx, w.ChainID); err != nil {
		return "", fault.Wrap(err, "lock payouts")
	}
	reserved, err := q.UnminedPayouts(ctx, w.ChainID, w.Currency, PurposePayout)
	if err != nil {
		return "", fault.Wrap(err, "sum payouts in flight")
	}
	need := new(big.Int).Add(reserved.BigInt(), Units(w))
	hot := s.wallet.HotWalletAddress()
	_, feeCap, err := c.Fees(ctx)
	if err != nil {
		return s.chainUnreadable(ctx, w, err), nil
	}
	native, err := c.Balance(ctx, hot)
	if err != nil {
		return s.chainUnreadable(ctx, w, err), nil
	}
	gas := uint64(tokenTransferGas)
	if w.ContractAddress == "" {
		// What the payout will be sent with: more than 21,000 to a contract wallet.
		if gas, err = c.NativeTransferGas(ctx, hot, common.HexToAddress(w.Address), Units(w)); err != nil {
			return s.chainUnreadable(ctx, w, err), nil
		}
	}
	gasCost := new(big.Int).Mul(new(big.Int).SetUint64(gas), feeCap)
	if w.ContractAddress == "" {
		if native.Cmp(new(big.Int).Add(need, gasCost)) < 0 {
			return fmt.Sprintf("the hot wallet holds %s wei of %s; %s are needed with the payouts in flight", native, n.NativeSymbol, need), nil
		}
		return "", nil
	}
	if native.Cmp(gasCost) < 0 {
		return fmt.Sprintf("the hot wallet has no %s for gas", n.NativeSymbol), nil
	}
	bal, err := c.TokenBalance(ctx, common.HexToAddress(w.ContractAddress), hot)
	if err != nil {
		return s.chainUnreadable(ctx, w, err), nil
	}
	if bal.Cmp(need) < 0 {
		return fmt.Sprintf("the hot wallet holds %s units of %s; %s are needed with the payouts in flight", bal, w.Currency, need), nil
	}
	return "", nil
}

// queuePayout inserts the withdrawal's payout job in the caller's transaction.
func (s *Service) queuePayout(ctx context.Context, tx pgx.Tx, id string) error {
	_, err := s.river.InsertTx(ctx, tx, PayoutArgs{WithdrawalID: id}, nil)
	return err
}

// awaitSettled waits up to Config.SettleWait for a paying withdrawal to complete, and returns
// it as it then stands. The decision has committed by then (committed is the withdrawal as it
// left it), so the call answers its result whatever happens while it waits: a read that fails
// (PostgreSQL restarting, say) is logged and the last state known is answered, never an error
// that would tell the caller nothing happened.
func (s *Service) awaitSettled(ctx context.Context, scope domain.Scope, id string, committed domain.Withdrawal) domain.Withdrawal {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.SettleWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := committed
	for {
		w, err := store.New(s.pool).GetWithdrawal(ctx, auth.OperatorIDs(scope), id)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil:
			s.log.WarnContext(ctx, "withdrawal decided; reading its payout failed, answering the last state known",
				"withdrawal", id, "status", last.Status, "error", err)
		case w.Status == domain.WithdrawalCompleted:
			return w
		default:
			last = w
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}
