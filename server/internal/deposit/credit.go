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

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// finishSweep credits every deposit of a sweep whose transactions are all mined, in one
// database transaction: each gets its amounts (the net the bankroll received, split across the
// sweep's deposits of that asset) and rate snapshot, its DEPOSIT webhook (none for treasury
// payments) and its operator's funds. A deposit is credited once: the sweep and the deposits
// only move from SENDING and SWEEPING.
func (s *Service) finishSweep(ctx context.Context, n chain.Network, sw domain.Sweep) error {
	q := store.New(s.pool)
	deposits, err := q.SweepDeposits(ctx, sw.ID)
	if err != nil {
		return err
	}
	minedAt, err := q.MarkSweepMined(ctx, sw.ID)
	if err != nil {
		return err
	}
	groups, err := s.groups(ctx, n, deposits)
	if err != nil {
		return err
	}
	credits := map[int64]store.Credit{}
	sessions := map[int64]*domain.Session{}
	for _, g := range groups {
		amounts, err := s.netAmounts(ctx, sw, g)
		if err != nil {
			return err
		}
		for i, d := range g.deposits {
			view, err := s.settlementView(ctx, q, d)
			if err != nil {
				return err
			}
			if view.unpriced() && time.Since(minedAt) < s.cfg.RateWait {
				s.log.Debug("deposit waits for its rate", "deposit", d.ID, "error", view.err)
				return errWaitingForRate
			}
			credits[d.ID] = view.credit(amounts[i], new(big.Int).Sub(d.GrossAmount, amounts[i]), d.Decimals)
			sessions[d.ID] = view.session
			if view.unpriced() {
				s.log.Error("deposit credited without a rate: the rate source stayed down; its DEPOSIT carries null values",
					"deposit", d.ID, "chain", d.ChainID, "currency", d.Currency, "local_currency", view.local, "waited", s.cfg.RateWait,
					"error", view.err)
				metrics.DepositsUnpriced.WithLabelValues(strconv.FormatInt(d.ChainID, 10), d.Currency).Inc()
			}
		}
	}
	// Credit in (currency, id) order: every transaction that moves several funds rows of an
	// operator takes them in the same order, so two sweeps of one operator cannot deadlock.
	slices.SortFunc(deposits, func(a, b domain.Deposit) int {
		if c := strings.Compare(a.Currency, b.Currency); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	if s.crash != nil {
		s.crash(stepSweepCrediting)
	}
	var creditedBack, sweptWrittenOff []domain.Deposit
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		return moveSweep(ctx, q, sw.ID, SweepCredited, func() error {
			creditedIDs := map[int64]bool{}
			for _, d := range deposits {
				locked, err := q.LockDeposit(ctx, d.ID)
				if err != nil {
					return err
				}
				if _, err := Next(locked.Status, Credit); err != nil {
					// Reorged since the step checked (a scan pass marked it): while its reorg is
					// open the whole sweep waits, as one held before would (credited, every
					// deposit, once it resolves); closing it now would leave the deposit, if it
					// counts again, SWEEPING in a closed sweep for good. One written off is
					// never credited.
					if held, err := q.SweepHeldByReorg(ctx, sw.ID); err != nil || held {
						return cmp.Or(err, errHeldByReorg)
					}
					continue
				}
				if again, err := writtenOffAgain(ctx, q, locked); err != nil {
					return err
				} else if again {
					// Its own money moved: nothing carried, it stays in this sweep (leaveFinishedSweep).
					creditedIDs[d.ID] = true
					sweptWrittenOff = append(sweptWrittenOff, locked)
					continue
				}
				if locked.CreditedAt != nil {
					if err := creditBack(ctx, tx, locked, sw.ID); err != nil {
						return err
					}
					creditedBack = append(creditedBack, locked)
					continue
				}
				c := credits[d.ID]
				credited, err := q.CreditDeposit(ctx, d.ID, c)
				if err != nil {
					return err
				}
				if err := funds.Credit(ctx, tx, credited, c.Amount); err != nil {
					return err
				}
				if !d.Treasury {
					ev := webhook.Event{OperatorID: d.OperatorID, SubjectID: strconv.FormatInt(d.ID, 10), Message: DepositEvent(credited, sessions[d.ID])}
					if err := s.webhooks.Enqueue(ctx, tx, ev); err != nil {
						return err
					}
				}
				creditedIDs[d.ID] = true
				s.log.Info("deposit credited", "deposit", d.ID, "chain", d.ChainID, "sweep", sw.ID, "amount", c.Amount, "fee", c.FeeAmount,
					"usd", c.AmountInDollar.Decimal, "treasury", d.Treasury)
			}
			if err := s.settleCarries(ctx, q, n, sw, groups, creditedIDs); err != nil {
				return err
			}
			return s.leaveFinishedSweep(ctx, q, sw, deposits, creditedIDs)
		})
	})
	if errors.Is(err, errHeldByReorg) {
		s.log.Warn("a deposit of a mined sweep was reorged before its credit: the sweep waits for the reorg's resolution",
			"sweep", sw.ID, "chain", n.ChainID, "address", sw.Address)
		return nil
	}
	if err == nil {
		s.reportCreditedBack(sw, creditedBack, credits)
		for _, d := range sweptWrittenOff {
			s.log.Warn("a deposit written off again, its money back at its address, was swept to the bankroll: not credited "+
				"(the write-off stands)", "deposit", d.ID, "chain", d.ChainID, "sweep", sw.ID, "gross", d.GrossAmount)
		}
	}
	return err
}

// writtenOffAgain reports whether d, in a mined sweep, is a deposit written off again whose
// money the sweep moved (sweepWrittenOff), and if so puts it back REORGED, in the caller's
// transaction: the bankroll keeps its money, and its operator's credit stays reversed. It is
// the engineer's latest decision that counts: a reorg of it meanwhile that the scanner resolved
// REINCLUDED (its block back) credits nothing the engineer wrote off.
func writtenOffAgain(ctx context.Context, q *store.Queries, d domain.Deposit) (bool, error) {
	r, err := q.LatestDecision(ctx, d.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Resolution != domain.ReorgWriteOff) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	ok, err := q.SetDepositStatus(ctx, d.ID, domain.DepositSweeping, domain.DepositReorged)
	if err == nil && !ok {
		err = fmt.Errorf("deposit %d: written off again: it is %s, not SWEEPING", d.ID, d.Status)
	}
	return err == nil, err
}

// reportCreditedBack logs the deposits a sweep credited back (creditBack). Each is credited the
// amount announced; its new sweep moved its net whole, its gas paid by the gas tank
// (planNative), so the bankroll received at least that. Less would leave the books short by the
// difference: an ERROR.
func (s *Service) reportCreditedBack(sw domain.Sweep, list []domain.Deposit, credits map[int64]store.Credit) {
	for _, d := range list {
		attrs := []any{"deposit", d.ID, "chain", d.ChainID, "sweep", sw.ID, "amount", d.Amount, "swept", credits[d.ID].Amount}
		if swept := credits[d.ID].Amount; swept != nil && swept.Cmp(d.Amount) < 0 {
			s.log.Error("deposit credited back at its announced amount, but its new sweep moved less (its gas cost more than "+
				"the first sweep's): the books are short by the difference", append(attrs, "short", new(big.Int).Sub(d.Amount, swept))...)
			continue
		}
		s.log.Info("deposit credited back: swept again after its sweep was cancelled (no second DEPOSIT)", attrs...)
	}
}

// creditBack credits again, in the sweep's transaction, a deposit credited and announced before
// a reorg, reinstated with its sweep cancelled and now swept again (restore): by the amount
// announced, as any reinstated deposit (a REINSTATE entry), its amounts and DEPOSIT as they were.
func creditBack(ctx context.Context, tx pgx.Tx, d domain.Deposit, sweepID int64) error {
	ok, err := store.New(tx).SetDepositStatus(ctx, d.ID, domain.DepositSweeping, domain.DepositCredited)
	if err != nil {
		return err
	}
	if !ok || d.Amount == nil {
		return fmt.Errorf("deposit %d: crediting it back: it is %s, amount %v", d.ID, d.Status, d.Amount)
	}
	_, err = funds.Reinstate(ctx, tx, d, d.Amount, domain.System,
		fmt.Sprintf("reinstated after its sweep was cancelled; swept again by sweep %d", sweepID))
	return err
}

// errHeldByReorg: a deposit of the sweep being credited has an open reorg (nothing is credited).
var errHeldByReorg = errors.New("deposit: the sweep is held by a reorg")

// stepSweepCrediting (tests): between a mined sweep's checks and its credit's transaction.
const stepSweepCrediting = "sweep-crediting"

// errWaitingForRate: a swept deposit waits for its rate (within Config.RateWait).
var errWaitingForRate = errors.New("deposit: waiting for a rate")

// netAmounts is what each deposit of a group reached the bankroll with, read from the mined
// transfer. Token deposits net their fee exactly; native deposits net their own fee and share
// their transfer's gas in proportion to their gross amounts (the last one takes the rounding),
// so the amounts add up to what the bankroll received.
func (s *Service) netAmounts(ctx context.Context, sw domain.Sweep, g *group) ([]*big.Int, error) {
	out := make([]*big.Int, len(g.deposits))
	if sw.Batched {
		// The batch moved each deposit's gross amount (its receipt was checked against them),
		// the fee to the chain's feeAddress (kept in the bankroll without one) and the rest to
		// the bankroll; the gas was the gas tank's.
		for i, d := range g.deposits {
			fee, err := s.bpsFee(ctx, d)
			if err != nil {
				return nil, err
			}
			out[i] = new(big.Int).Sub(d.GrossAmount, fee)
		}
		return out, nil
	}
	if !g.asset.Native {
		return s.tokenNetAmounts(ctx, sw, g)
	}
	moved, taken, err := s.nativeReached(ctx, store.New(s.pool), sw, g)
	if err != nil {
		return nil, err
	}
	return nativeShares(g, new(big.Int).Add(moved, taken)), nil
}

// nativeShares splits what reached the bankroll for a native group's deposits (its transfer's
// value and the carry it took) across them. Each deposit nets its own fee (their fees may
// differ: one fixed at an earlier sweep, the operator's fee changed since); only the gas the
// transfer took from their value is shared, in proportion to what each put into it, its gross
// less its fee (the last one takes the rounding). By net, not gross: a deposit whose fee is
// higher than another's would otherwise bear gas on money it did not send, and could be
// credited less than nothing.
func nativeShares(g *group, reached *big.Int) []*big.Int {
	out := make([]*big.Int, len(g.deposits))
	nets := make([]*big.Int, len(g.deposits))
	total := new(big.Int)
	for i, d := range g.deposits {
		nets[i] = new(big.Int).Sub(d.GrossAmount, g.fees[d.ID])
		total.Add(total, nets[i])
	}
	gas := new(big.Int).Sub(total, reached)
	rest := new(big.Int).Set(reached)
	for i := range g.deposits {
		if i == len(g.deposits)-1 || total.Sign() == 0 {
			out[i] = new(big.Int).Set(rest)
			rest.SetInt64(0)
			continue
		}
		share := new(big.Int).Div(new(big.Int).Mul(gas, nets[i]), total)
		out[i] = new(big.Int).Sub(nets[i], share)
		rest.Sub(rest, out[i])
	}
	return out
}

// tokenNetAmounts is netAmounts of a token group: each deposit's gross less its fee. Its
// transfer sent their sum, or less by what an earlier sweep carried to the bankroll for them
// (none at all when the carry covered them; settleCarries checks the carry holds it).
func (s *Service) tokenNetAmounts(ctx context.Context, sw domain.Sweep, g *group) ([]*big.Int, error) {
	out := make([]*big.Int, len(g.deposits))
	sent := new(big.Int)
	for i, d := range g.deposits {
		fee, err := s.bpsFee(ctx, d)
		if err != nil {
			return nil, err
		}
		out[i] = new(big.Int).Sub(d.GrossAmount, fee)
		sent.Add(sent, out[i])
	}
	t, err := store.New(s.pool).ChainTxByRef(ctx, PurposeSweep, sweepRef(sw.ID, g.asset.Symbol))
	if errors.Is(err, store.ErrNotFound) {
		return out, nil // the carry covered them
	} else if err != nil {
		return nil, fmt.Errorf("sweep %d: %s transfer: %w", sw.ID, g.asset.Symbol, err)
	}
	if got := chain.ERC20TransferAmount(t.Data); got.Cmp(sent) > 0 {
		return nil, fmt.Errorf("sweep %d: the %s transfer sent %s, its deposits net %s", sw.ID, g.asset.Symbol, got, sent)
	}
	return out, nil
}

// settlement is what a credit is priced with.
type settlement struct {
	session    *domain.Session
	local      string
	usdPrice   decimal.NullDecimal
	fiatPerUSD decimal.NullDecimal
	err        error // why a rate is missing
}

func (v settlement) unpriced() bool { return !v.usdPrice.Valid || !v.fiatPerUSD.Valid }

// credit prices a deposit's amounts; the values that need a missing rate stay null.
func (v settlement) credit(amount, fee *big.Int, decimals int32) store.Credit {
	c := store.Credit{Amount: amount, FeeAmount: fee, USDPrice: v.usdPrice, FiatPerUSD: v.fiatPerUSD, FiatCurrency: v.local,
		Unpriced: v.unpriced()}
	if v.usdPrice.Valid {
		usd := rates.UnitsToUSD(amount, decimals, v.usdPrice.Decimal)
		c.AmountInDollar = decimal.NewNullDecimal(roundUSD(usd))
		c.FeeInDollar = decimal.NewNullDecimal(roundUSD(rates.UnitsToUSD(fee, decimals, v.usdPrice.Decimal)))
		if v.fiatPerUSD.Valid {
			c.AmountInLocal = decimal.NewNullDecimal(roundUSD(usd.Mul(v.fiatPerUSD.Decimal)))
		}
	}
	return c
}

// settlementView reads the rates a deposit is credited at. A rate that cannot be read is left
// invalid (err says why); the caller waits for it up to Config.RateWait.
func (s *Service) settlementView(ctx context.Context, q *store.Queries, d domain.Deposit) (settlement, error) {
	var v settlement
	op, err := q.GetOperator(ctx, d.OperatorID)
	if err != nil {
		return v, err
	}
	v.local = op.FiatCurrency
	if d.SessionID != "" {
		sess, err := q.SessionByID(ctx, d.SessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return v, err
		}
		if err == nil {
			v.session, v.local = &sess, sess.FiatCurrency
		}
	}
	if v.local == "" {
		v.local = "USD"
	}
	if price, err := s.prices.USD(ctx, d.Currency); err != nil {
		v.err = fmt.Errorf("price of %s: %w", d.Currency, err)
	} else {
		v.usdPrice = decimal.NewNullDecimal(price.Value)
	}
	if rate, err := s.prices.PerUSD(ctx, v.local); err != nil {
		v.err = errors.Join(v.err, fmt.Errorf("rate of %s: %w", v.local, err))
	} else {
		v.fiatPerUSD = decimal.NewNullDecimal(rate)
	}
	return v, nil
}

// roundUSD keeps the six decimals USD values are sent with.
func roundUSD(d decimal.Decimal) decimal.Decimal { return d.RoundBank(6) }

// DepositEvent is the DEPOSIT webhook of a credited deposit; sess is its session, if any.
func DepositEvent(d domain.Deposit, sess *domain.Session) *cofferv1.DepositEvent {
	ev := &cofferv1.DepositEvent{
		Event:             "DEPOSIT",
		DepositId:         d.ID,
		IdempotencyKey:    d.IdempotencyKey,
		ExternalUserId:    d.ExternalUserID,
		Amount:            d.Amount.String(),
		LocalCurrencyCode: d.FiatCurrency,
		CurrentRate:       "null", // the literal null of the wire: no rate could be read
		Pair:              "USD/" + d.FiatCurrency,
		GrossAmount:       d.GrossAmount.String(),
		FeeAmount:         d.FeeAmount.String(),
		Type:              "NATIVE",
		TransactionHash:   new(d.TxHash),
		ChainId:           d.ChainID,
	}
	if d.FiatPerUSD.Valid {
		ev.CurrentRate = d.FiatPerUSD.Decimal.String()
	}
	if d.AmountInDollar.Valid {
		ev.AmountInDollar = new(d.AmountInDollar.Decimal.StringFixed(6))
		ev.FeeInDollar = new(d.FeeInDollar.Decimal.StringFixed(6))
	}
	if d.AmountInLocal.Valid {
		ev.AmountInLocalCurrency = new(d.AmountInLocal.Decimal.StringFixed(6))
	}
	if d.ContractAddress != "" {
		ev.Type, ev.ContractAddress = "ERC20", new(d.ContractAddress)
	}
	if sess != nil {
		ev.SessionRef, ev.SessionAmount = new(sess.SessionRef), new(money.Fiat(sess.Amount))
		if sess.OperatorReference != "" {
			ev.OperatorReference = new(sess.OperatorReference)
		}
	}
	confirmed := time.Now()
	if d.ConfirmedAt != nil {
		confirmed = *d.ConfirmedAt
	}
	ev.ConfirmedAt = timestamppb.New(confirmed)
	return ev
}

// moveSweep locks a sweep in q's transaction, applies event to it by the transition table,
// runs work, and stores the sweep's new status. A sweep another job moved meanwhile (the table
// refuses the event now) is left alone and work does not run.
func moveSweep(ctx context.Context, q *store.Queries, sweepID int64, event SweepEvent, work func() error) error {
	return move(func() (domain.SweepStatus, error) {
		sw, err := q.LockSweep(ctx, sweepID)
		return sw.Status, err
	}, NextSweep, event, work, func(to domain.SweepStatus) error { return q.SetSweepStatus(ctx, sweepID, to) })
}

// moveBatch is moveSweep for a batch.
func moveBatch(ctx context.Context, q *store.Queries, batchID int64, event BatchEvent, work func() error) error {
	return move(func() (domain.SweepBatchStatus, error) {
		b, err := q.LockSweepBatch(ctx, batchID)
		return b.Status, err
	}, NextBatch, event, work, func(to domain.SweepBatchStatus) error { return q.SetSweepBatchStatus(ctx, batchID, to) })
}

// move is one transition of a row only the service moves: lock reads its status (holding the
// row), next applies the table, work runs, set stores the new status. An event the table
// refuses now (another job moved the row meanwhile) leaves the row alone and runs nothing.
func move[S ~string, E any](lock func() (S, error), next func(S, E) (S, error), event E, work func() error, set func(S) error) error {
	from, err := lock()
	if err != nil {
		return err
	}
	to, err := next(from, event)
	if errors.Is(err, errRefused) {
		return nil
	} else if err != nil {
		return err
	}
	if err := work(); err != nil {
		return err
	}
	return set(to)
}
