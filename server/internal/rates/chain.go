package rates

import (
	"context"

	"github.com/shopspring/decimal"
)

// Chain is the service's rate source: each symbol is priced by the on-chain feed of the first
// Aggregator (one per network) that has one, and from the Static table otherwise. A configured feed that fails
// (stale, invalid, RPC down) is an error, never a silent fall-back to the table. Fiat rates
// come from the table.
type Chain struct {
	feeds  []*Aggregator
	static *Static
}

// NewChain combines feeds and a table; either may be empty (nothing from it).
func NewChain(feeds []*Aggregator, static *Static) *Chain {
	return &Chain{feeds: feeds, static: static}
}

// USD implements Source.
func (c *Chain) USD(ctx context.Context, symbol string) (Price, error) {
	for _, f := range c.feeds {
		if f != nil && f.Has(symbol) {
			return f.USD(ctx, symbol)
		}
	}
	if c.static == nil {
		return Price{}, UnknownError{Kind: "symbol", Name: normalize(symbol)}
	}
	return c.static.USD(ctx, symbol)
}

// PerUSD implements Fiat.
func (c *Chain) PerUSD(ctx context.Context, currency string) (decimal.Decimal, error) {
	if c.static == nil {
		if normalize(currency) == "USD" {
			return decimal.NewFromInt(1), nil
		}
		return decimal.Decimal{}, UnknownError{Kind: "currency", Name: normalize(currency)}
	}
	return c.static.PerUSD(ctx, currency)
}

var (
	_ Source = (*Static)(nil)
	_ Fiat   = (*Static)(nil)
	_ Source = (*Aggregator)(nil)
	_ Source = (*Chain)(nil)
	_ Fiat   = (*Chain)(nil)
)
