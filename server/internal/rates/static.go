package rates

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// Static answers prices and fiat rates from a table. It is safe for concurrent use; Set*
// changes a value at run time (tests, an admin-maintained table).
type Static struct {
	mu     sync.RWMutex
	usd    map[string]Price
	perUSD map[string]decimal.Decimal
	now    func() time.Time
}

// NewStatic builds a table: USD prices by asset symbol and fiat units per USD by currency.
// Every value must be > 0; "USD" may appear in perUSD only as 1 (it is always 1).
func NewStatic(usd, perUSD map[string]decimal.Decimal) (*Static, error) {
	s := &Static{usd: map[string]Price{}, perUSD: map[string]decimal.Decimal{}, now: time.Now}
	for sym, v := range usd {
		if err := s.SetUSD(sym, v); err != nil {
			return nil, err
		}
	}
	for cur, v := range perUSD {
		if err := s.SetPerUSD(cur, v); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// DevUSD and DevPerUSD are the tables of `coffer dev`: the dev chain's feed values (ETH 3000,
// USDT and USDC 1) and illustrative fiat rates. Never use them in production.
func DevUSD() map[string]decimal.Decimal {
	return map[string]decimal.Decimal{"ETH": decimal.NewFromInt(3000), "USDT": decimal.NewFromInt(1), "USDC": decimal.NewFromInt(1)}
}

// DevPerUSD: see DevUSD.
func DevPerUSD() map[string]decimal.Decimal {
	return map[string]decimal.Decimal{"EUR": decimal.RequireFromString("0.92"), "GBP": decimal.RequireFromString("0.79")}
}

// DevStatic is a Static of DevUSD and DevPerUSD.
func DevStatic() *Static {
	s, err := NewStatic(DevUSD(), DevPerUSD())
	if err != nil {
		panic(err)
	}
	return s
}

// SetUSD sets the USD price of one unit of symbol.
func (s *Static) SetUSD(symbol string, v decimal.Decimal) error {
	symbol, err := tableKey(symbol, "symbol", "price", v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.usd[symbol] = Price{Value: v, At: s.now(), Source: "static"}
	s.mu.Unlock()
	return nil
}

// SetPerUSD sets the units of currency one USD buys.
func (s *Static) SetPerUSD(currency string, v decimal.Decimal) error {
	currency, err := tableKey(currency, "currency", "per USD", v)
	if err != nil {
		return err
	}
	if currency == "USD" && !v.Equal(decimal.NewFromInt(1)) {
		return fmt.Errorf("rates: USD per USD is 1, not %s", v)
	}
	s.mu.Lock()
	s.perUSD[currency] = v
	s.mu.Unlock()
	return nil
}

// tableKey is the normalized key of a table entry (a kind: symbol or currency) whose value v
// (what) must be > 0.
func tableKey(key, kind, what string, v decimal.Decimal) (string, error) {
	key = normalize(key)
	if key == "" {
		return "", fmt.Errorf("rates: empty %s", kind)
	}
	if !v.IsPositive() {
		return "", fmt.Errorf("%w: %s %s %s must be > 0", ErrInvalidAnswer, key, what, v)
	}
	return key, nil
}

// USD implements Source.
func (s *Static) USD(_ context.Context, symbol string) (Price, error) {
	symbol = normalize(symbol)
	s.mu.RLock()
	p, ok := s.usd[symbol]
	s.mu.RUnlock()
	if !ok {
		return Price{}, UnknownError{Kind: "symbol", Name: symbol}
	}
	return p, nil
}

// PerUSD implements Fiat; USD is always exactly 1.
func (s *Static) PerUSD(_ context.Context, currency string) (decimal.Decimal, error) {
	currency = normalize(currency)
	if currency == "USD" {
		return decimal.NewFromInt(1), nil
	}
	s.mu.RLock()
	v, ok := s.perUSD[currency]
	s.mu.RUnlock()
	if !ok {
		return decimal.Decimal{}, UnknownError{Kind: "currency", Name: currency}
	}
	return v, nil
}
