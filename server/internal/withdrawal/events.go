package withdrawal

import (
	"math/big"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/rates"
)

// SentAmount is what the withdrawal pays in token units with the token's decimals ("25.000000"):
// the cryptoAmountSent of both events.
func SentAmount(w domain.Withdrawal) string {
	return rates.FormatUnits(w.CryptoAmount.BigInt(), w.Decimals)
}

// Units is what the withdrawal pays in the smallest unit.
func Units(w domain.Withdrawal) *big.Int { return w.CryptoAmount.BigInt() }

func amountInUSD(w domain.Withdrawal) *string {
	if !w.AmountInUSD.Valid {
		return nil
	}
	return new(rates.USDString(w.AmountInUSD.Decimal))
}

// reference is a session's operatorReference as an optional field: absent ("null" on the
// wire) when the session has none.
func reference(r string) *string {
	if r == "" {
		return nil
	}
	return &r
}

// RequestEvent is the WITHDRAW_REQUEST of a withdrawal (the same payload in both modes).
func RequestEvent(w domain.Withdrawal, sessionRef string) *cofferv1.WithdrawRequestEvent {
	return &cofferv1.WithdrawRequestEvent{
		Event:              "WITHDRAW_REQUEST",
		WithdrawRequestId:  w.ID,
		SessionRef:         sessionRef,
		ExternalUserId:     w.ExternalUserID,
		Type:               w.Type,
		Address:            w.Address,
		CryptoCurrencyCode: strings.ToUpper(w.Currency),
		FiatCurrencyCode:   w.FiatCurrency,
		FiatAmount:         money.Fiat(w.FiatAmount),
		CryptoAmountSent:   new(SentAmount(w)),
		AmountInUsd:        amountInUSD(w),
		RequestedAt:        timestamppb.New(requestedAt(w)),
		OperatorReference:  reference(w.OperatorReference),
	}
}

// CompleteEvent is the WITHDRAW_COMPLETE of a completed withdrawal.
func CompleteEvent(w domain.Withdrawal, sessionRef string) *cofferv1.WithdrawCompleteEvent {
	completed := time.Now()
	if w.CompletedAt != nil {
		completed = *w.CompletedAt
	}
	return &cofferv1.WithdrawCompleteEvent{
		Event:              "WITHDRAW_COMPLETE",
		WithdrawRequestId:  w.ID,
		SessionRef:         sessionRef,
		ExternalUserId:     w.ExternalUserID,
		Type:               w.Type,
		Status:             string(domain.WithdrawalCompleted),
		Address:            w.Address,
		CryptoCurrencyCode: strings.ToUpper(w.Currency),
		FiatCurrencyCode:   w.FiatCurrency,
		FiatAmount:         money.Fiat(w.FiatAmount),
		CryptoAmountSent:   new(SentAmount(w)),
		AmountInUsd:        amountInUSD(w),
		CompletedAt:        timestamppb.New(completed),
		OperatorReference:  reference(w.OperatorReference),
	}
}

// requestedAt is the submission time (mode A sends the request before the row exists).
func requestedAt(w domain.Withdrawal) time.Time {
	if w.CreatedAt.IsZero() {
		return time.Now()
	}
	return w.CreatedAt
}
