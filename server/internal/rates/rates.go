// Package rates prices crypto assets in USD and converts between fiat currencies, token
// units and USD, exactly (shopspring/decimal and math/big, never float).
//
// Two interfaces answer the questions conversions need: Source gives the USD price of one
// unit of an asset (a token or a chain's native coin), Fiat gives how many units of a fiat
// currency one USD buys. Static answers both from a table (dev, tests, and fiat rates the
// service team configures); Aggregator reads Chainlink AggregatorV3 feeds on an EVM chain;
// Chain picks one of them per symbol. Deposits snapshot the Price they were converted with.
package rates

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Price is the USD value of one unit of an asset.
type Price struct {
	Value decimal.Decimal // USD per unit, > 0
	At    time.Time       // when the value was established (a feed's updatedAt, a table's set time)
	// Source names where the value came from: "static", or "aggregator:<feed address>".
	Source string
}

// Source gives the USD price of one unit of a crypto asset, by symbol ("ETH", "USDT").
// Symbols are case-insensitive. Implementations never return a price ≤ 0 without an error.
type Source interface {
	USD(ctx context.Context, symbol string) (Price, error)
}

// Fiat gives the units of a fiat currency that one USD buys (ISO 4217 code, case-insensitive).
// PerUSD("USD") is exactly 1. Implementations never return a rate ≤ 0 without an error.
type Fiat interface {
	PerUSD(ctx context.Context, currency string) (decimal.Decimal, error)
}

// UnknownError reports a symbol or currency that a source has no price for.
// Match it with errors.As: var u rates.UnknownError; errors.As(err, &u).
type UnknownError struct {
	Kind string // "symbol" or "currency"
	Name string // as normalised (upper case)
}

func (e UnknownError) Error() string { return fmt.Sprintf("rates: unknown %s %q", e.Kind, e.Name) }

var (
	// ErrStale is wrapped by errors for a feed whose last update is older than the maximum
	// age, or that has no completed round.
	ErrStale = errors.New("rates: stale price")
	// ErrInvalidAnswer is wrapped by errors for a feed answering a price ≤ 0.
	ErrInvalidAnswer = errors.New("rates: invalid price")
)

// normalize is the canonical form of a symbol or currency code.
func normalize(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }
