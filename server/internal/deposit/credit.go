package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// credit records a swept deposit as credited, with its amounts and the rate snapshot, and
// queues its DEPOSIT webhook in the same transaction: the webhook exists exactly when the
// credit does, and a deposit is credited once.
func (s *Service) credit(ctx context.Context, id int64) error {
	q := store.New(s.pool)
	d, err := q.GetDeposit(ctx, id)
	if err != nil || d.Status != "SWEEPING" {
		return err
	}
	sweep, err := q.ChainTxByRef(ctx, PurposeSweep, ref(id))
	if err != nil {
		return fmt.Errorf("deposit %d: sweep: %w", id, err)
	}
	amount := sweep.Value
	if d.ContractAddress != "" {
		amount = chain.ERC20TransferAmount(sweep.Data)
	}
	fee := new(big.Int).Sub(d.GrossAmount, amount)
	view, err := s.settlementView(ctx, q, d)
	if err != nil {
		return err
	}
	usd := rates.UnitsToUSD(amount, d.Decimals, view.usdPrice)
	c := store.Credit{FeeAmount: fee, Amount: amount, USDPrice: view.usdPrice, FiatPerUSD: view.fiatPerUSD, FiatCurrency: view.local,
		AmountInDollar: roundUSD(usd), AmountInLocal: roundUSD(usd.Mul(view.fiatPerUSD)),
		FeeInDollar: roundUSD(rates.UnitsToUSD(fee, d.Decimals, view.usdPrice))}
	return store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		locked, err := q.LockDeposit(ctx, id)
		if err != nil || locked.Status != "SWEEPING" {
			return err
		}
		credited, err := q.CreditDeposit(ctx, id, c)
		if err != nil {
			return err
		}
		ev := webhook.Event{OperatorID: d.OperatorID, SubjectID: strconv.FormatInt(id, 10), Message: DepositEvent(credited, view.session)}
		if err := s.webhooks.Enqueue(ctx, tx, ev); err != nil {
			return err
		}
		s.log.Info("deposit credited", "deposit", id, "chain", d.ChainID, "amount", amount, "fee", fee, "usd", c.AmountInDollar)
		return nil
	})
}

// settlement is what a credit is priced with.
type settlement struct {
	session    *store.Session
	local      string
	usdPrice   decimal.Decimal
	fiatPerUSD decimal.Decimal
}

func (s *Service) settlementView(ctx context.Context, q *store.Queries, d store.Deposit) (settlement, error) {
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
	price, err := s.prices.USD(ctx, d.Currency)
	if err != nil {
		return v, fmt.Errorf("deposit %d: price of %s: %w", d.ID, d.Currency, err)
	}
	v.usdPrice = price.Value
	if v.fiatPerUSD, err = s.prices.PerUSD(ctx, v.local); err != nil {
		return v, fmt.Errorf("deposit %d: rate of %s: %w", d.ID, v.local, err)
	}
	return v, nil
}

// roundUSD keeps the six decimals USD values are sent with.
func roundUSD(d decimal.Decimal) decimal.Decimal { return d.RoundBank(6) }

func ptr(s string) *string { return &s }

// DepositEvent is the DEPOSIT webhook of a credited deposit; sess is its session, if any.
func DepositEvent(d store.Deposit, sess *store.Session) *cofferv1.DepositEvent {
	ev := &cofferv1.DepositEvent{
		Event:             "DEPOSIT",
		DepositId:         d.ID,
		IdempotencyKey:    d.IdempotencyKey,
		ExternalUserId:    d.ExternalUserID,
		Amount:            d.Amount.String(),
		LocalCurrencyCode: d.FiatCurrency,
		CurrentRate:       d.FiatPerUSD.Decimal.String(),
		Pair:              "USD/" + d.FiatCurrency,
		GrossAmount:       d.GrossAmount.String(),
		FeeAmount:         d.FeeAmount.String(),
		Type:              "NATIVE",
		TransactionHash:   ptr(d.TxHash),
		ChainId:           d.ChainID,
	}
	if d.AmountInDollar.Valid {
		ev.AmountInDollar = ptr(d.AmountInDollar.Decimal.StringFixed(6))
		ev.AmountInLocalCurrency = ptr(d.AmountInLocal.Decimal.StringFixed(6))
		ev.FeeInDollar = ptr(d.FeeInDollar.Decimal.StringFixed(6))
	}
	if d.ContractAddress != "" {
		ev.Type, ev.ContractAddress = "ERC20", ptr(d.ContractAddress)
	}
	if sess != nil {
		ev.SessionRef, ev.SessionAmount = ptr(sess.SessionRef), ptr(money.Fiat(sess.Amount))
		if sess.OperatorReference != "" {
			ev.OperatorReference = ptr(sess.OperatorReference)
		}
	}
	confirmed := time.Now()
	if d.ConfirmedAt != nil {
		confirmed = *d.ConfirmedAt
	}
	ev.ConfirmedAt = timestamppb.New(confirmed)
	return ev
}
