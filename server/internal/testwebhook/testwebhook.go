// Package testwebhook sends test webhooks: a real, signed DEPOSIT (for a deposit session) or
// WITHDRAW_COMPLETE (for a withdraw session) that is identical to a production event except
// for test=true, sent synchronously to the session operator's webhook URL. No funds move and
// nothing is recorded but the attempt.
package testwebhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// Limit is how many test webhooks an operator may send per Window.
const (
	Limit  = 5
	Window = time.Minute
)

// Service sends test webhooks.
type Service struct {
	Pool     *pgxpool.Pool
	Sessions *session.Service
	Chains   *chain.Registry
	Prices   deposit.Prices
	Webhooks *webhook.Service
	// Withdrawals checks a WITHDRAW_COMPLETE's address override as a real destination.
	Withdrawals *withdrawal.Service
}

// Overrides replace parts of the payload; nil fields keep their defaults.
type Overrides struct {
	Amount   *string // token units for DEPOSIT, fiat for WITHDRAW_COMPLETE
	Currency *string
	ChainID  *int64
	Address  *string // the withdrawal destination (WITHDRAW_COMPLETE)
}

// Sent is the operator endpoint's answer.
type Sent struct {
	Event  string
	Result webhook.Result
}

// Send sends a test webhook for a session owned by the caller or one of its sub-operators
// (scope). Each operator may send Limit per Window, and each operator's endpoint receive Limit
// per Window whoever sends them; beyond that RATE_LIMITED with Retry-After.
func (s *Service) Send(ctx context.Context, caller string, scope domain.Scope, sid string, o Overrides) (Sent, error) {
	sess, err := s.Sessions.ForOperators(ctx, scope, sid)
	if err != nil {
		return Sent{}, err
	}
	// The event is made first: a body refused (an amount the token cannot hold, say) sends
	// nothing and so takes no place.
	var msg proto.Message
	if sess.Kind == session.Deposit {
		msg, err = s.depositEvent(ctx, sess, o)
	} else {
		msg, err = s.withdrawCompleteEvent(ctx, sess, o)
	}
	if err != nil {
		return Sent{}, err
	}
	// Counted per caller and per receiving operator: a parent firing at its sub-operators'
	// endpoints cannot send any one endpoint more than Limit a minute either.
	sender := store.RateLimit{Key: "test-webhook:" + caller, Max: Limit, Window: Window}
	receiver := store.RateLimit{Key: "test-webhook-to:" + sess.OperatorID, Max: Limit, Window: Window}
	if err := s.takePlaces(ctx, sender, receiver); err != nil {
		return Sent{}, err
	}
	res, err := s.Webhooks.Send(ctx, sess.OperatorID, webhook.Event{SubjectID: sess.ID, Message: msg}, webhook.DefaultTimeout)
	if err != nil {
		return Sent{}, err
	}
	return Sent{Event: sdkName(sess.Kind), Result: res}, nil
}

// takePlaces takes one place of the sender's limit and one of the receiving endpoint's, or
// neither: RATE_LIMITED with Retry-After, naming the limit that refused.
func (s *Service) takePlaces(ctx context.Context, sender, receiver store.RateLimit) error {
	refused, err := store.New(s.Pool).TakeRateLimits(ctx, sender, receiver)
	if err != nil {
		return fault.Wrap(err, "count test webhooks")
	}
	if refused == nil {
		return nil
	}
	what, most := "per sender", sender.Max
	if refused.Limit.Key == receiver.Key {
		what, most = "to one operator's endpoint", receiver.Max
	}
	e := fault.New(fault.RateLimited, "at most %d test webhooks per minute %s; try again in a moment", most, what)
	e.RetryAfter = refused.RetryAfter
	return e
}

func sdkName(kind domain.SessionKind) string {
	if kind == session.Deposit {
		return "DEPOSIT"
	}
	return "WITHDRAW_COMPLETE"
}

// asset picks the chain and currency: the overrides, else the first configured chain and its
// first token (its native currency when it has no tokens).
func (s *Service) asset(o Overrides) (chain.Network, chain.Asset, error) {
	networks := s.Chains.Networks()
	if len(networks) == 0 {
		return chain.Network{}, chain.Asset{}, fault.New(fault.FailedPrecondition, "no chain is configured")
	}
	n := networks[0]
	if o.ChainID != nil {
		var ok bool
		if n, ok = s.Chains.Network(*o.ChainID); !ok {
			return n, chain.Asset{}, fault.Invalid("chainId", "chain %d is not supported", *o.ChainID)
		}
	}
	symbol := n.NativeSymbol
	if len(n.Tokens) > 0 {
		symbol = n.Tokens[0].Symbol
	}
	if o.Currency != nil {
		symbol = *o.Currency
	}
	a, ok := n.Asset(symbol)
	if !ok {
		return n, a, fault.Invalid("currency", "%s is not accepted on chain %d", symbol, n.ChainID)
	}
	return n, a, nil
}

func (s *Service) rates(ctx context.Context, symbol, fiat string) (usd, perUSD decimal.Decimal, err error) {
	p, perUSD, err := rates.Pair(ctx, s.Prices, symbol, fiat)
	return p.Value, perUSD, err
}

// fakeHash is a stable, made-up 32-byte hex value for a test event's transaction hash.
func fakeHash(sid string) string {
	h := sha256.Sum256([]byte("coffer test transaction\x00" + sid))
	return "0x" + hex.EncodeToString(h[:])
}

func (s *Service) depositEvent(ctx context.Context, sess domain.Session, o Overrides) (*cofferv1.DepositEvent, error) {
	n, a, err := s.asset(o)
	if err != nil {
		return nil, err
	}
	usd, perUSD, err := s.rates(ctx, a.Symbol, sess.FiatCurrency)
	if err != nil {
		return nil, err
	}
	raw := rates.FiatToTokenUnits(sess.Amount, perUSD, usd, a.Decimals)
	if o.Amount != nil {
		units, err := decimal.NewFromString(*o.Amount)
		if err != nil {
			return nil, fault.Invalid("amount", "must be a decimal string")
		}
		if raw, err = rates.ToUnitsExact(units, a.Decimals); err != nil {
			return nil, fault.Invalid("amount", "%s has at most %d decimals", a.Symbol, a.Decimals)
		}
	}
	// Valued as a real DEPOSIT is: each value from the exact USD value, rounded once.
	amountUSD := rates.UnitsToUSD(raw, a.Decimals, usd)
	d := domain.Deposit{
		ID: webhook.TestDepositID(sess.ID), IdempotencyKey: "test:" + sess.ID, ExternalUserID: sess.ExternalUserID,
		ChainID: n.ChainID, TxHash: fakeHash(sess.ID), GrossAmount: raw, Amount: raw, FeeAmount: new(big.Int),
		FiatCurrency: sess.FiatCurrency, FiatPerUSD: decimal.NewNullDecimal(perUSD),
		AmountInDollar: decimal.NewNullDecimal(amountUSD.RoundBank(rates.USDDecimals)),
		AmountInLocal:  decimal.NewNullDecimal(amountUSD.Mul(perUSD).RoundBank(rates.USDDecimals)),
		FeeInDollar:    decimal.NewNullDecimal(decimal.Zero),
	}
	if !a.Native {
		d.ContractAddress = a.Contract.Hex()
	}
	now := time.Now()
	d.ConfirmedAt = &now
	ev := deposit.DepositEvent(d, &sess)
	ev.Test = true
	return ev, nil
}

func (s *Service) withdrawCompleteEvent(ctx context.Context, sess domain.Session, o Overrides) (*cofferv1.WithdrawCompleteEvent, error) {
	w, err := s.testWithdrawal(ctx, sess, o)
	if err != nil {
		return nil, err
	}
	ev := withdrawal.CompleteEvent(w, sess.SessionRef)
	ev.Test = true
	return ev, nil
}

// testWithdrawal is the made-up withdrawal a test WITHDRAW_REQUEST or WITHDRAW_COMPLETE
// describes, priced as a real one is.
func (s *Service) testWithdrawal(ctx context.Context, sess domain.Session, o Overrides) (domain.Withdrawal, error) {
	_, a, err := s.asset(o)
	if err != nil {
		return domain.Withdrawal{}, err
	}
	fiat := sess.Amount
	if o.Amount != nil {
		if fiat, err = decimal.NewFromString(*o.Amount); err != nil {
			return domain.Withdrawal{}, fault.Invalid("amount", "must be a decimal string")
		}
	}
	usd, perUSD, err := s.rates(ctx, a.Symbol, sess.FiatCurrency)
	if err != nil {
		return domain.Withdrawal{}, err
	}
	// Priced as the withdrawal is (its quote, WITHDRAW_REQUEST and payout): rounded down.
	sent, amountUSD, err := withdrawal.Price(fiat, sess.FiatCurrency, perUSD, usd, a)
	if err != nil && o.Amount != nil {
		return domain.Withdrawal{}, fault.Invalid("amount", "%s %s is less than the smallest unit of %s", fiat, sess.FiatCurrency, a.Symbol)
	} else if err != nil {
		return domain.Withdrawal{}, err
	}
	dest := common.BytesToAddress(sha256Bytes("coffer test destination\x00" + sess.ID)[:20]).Hex()
	if o.Address != nil {
		addr, err := s.Withdrawals.Destination(ctx, *o.Address)
		if err != nil {
			return domain.Withdrawal{}, err
		}
		dest = addr.Hex()
	}
	now := time.Now()
	w := domain.Withdrawal{
		ID:             uuid.NewSHA1(uuid.NameSpaceOID, []byte("coffer test withdrawal\x00"+sess.ID)).String(),
		ExternalUserID: sess.ExternalUserID, Type: "DIRECT_TRANSFER", Address: dest,
		Currency: a.Symbol, Decimals: a.Decimals, FiatCurrency: sess.FiatCurrency, FiatAmount: fiat,
		CryptoAmount: decimal.NewFromBigInt(sent, 0), AmountInUSD: decimal.NewNullDecimal(amountUSD),
		CompletedAt: &now, OperatorReference: sess.OperatorReference,
	}
	return w, nil
}

func sha256Bytes(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
