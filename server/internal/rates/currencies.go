package rates

import (
	"context"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// FiatSet is a Fiat source that can list the currencies it prices. A platform currency is
// accepted (on a session, an operator) only when it is in the list: a currency without a rate
// would leave its deposits unpriceable at settlement.
type FiatSet interface {
	Fiat
	FiatCurrencies() []string
}

// FiatCurrencies lists the fiat currencies of the table, USD included, sorted.
func (s *Static) FiatCurrencies() []string {
	s.mu.RLock()
	out := make([]string, 0, len(s.perUSD)+1)
	for c := range s.perUSD {
		out = append(out, c)
	}
	s.mu.RUnlock()
	if !slices.Contains(out, "USD") {
		out = append(out, "USD")
	}
	slices.Sort(out)
	return out
}

// FiatCurrencies lists the fiat currencies the chain prices (those of its table; USD alone
// without one).
func (c *Chain) FiatCurrencies() []string {
	if c.static == nil {
		return []string{"USD"}
	}
	return c.static.FiatCurrencies()
}

// USDOnly is the FiatSet of a service configured with no fiat rates.
func USDOnly() FiatSet { return usdOnly{} }

type usdOnly struct{}

func (usdOnly) PerUSD(ctx context.Context, currency string) (decimal.Decimal, error) {
	return NewChain(nil, nil).PerUSD(ctx, currency)
}

func (usdOnly) FiatCurrencies() []string { return []string{"USD"} }

// Priced normalises a fiat currency code (upper case) and reports whether set prices it;
// supported is set's list, for the caller's error message.
func Priced(set FiatSet, code string) (normalized string, ok bool, supported []string) {
	if set == nil {
		set = USDOnly()
	}
	normalized = strings.ToUpper(strings.TrimSpace(code))
	supported = set.FiatCurrencies()
	return normalized, slices.Contains(supported, normalized), supported
}

var (
	_ FiatSet = (*Static)(nil)
	_ FiatSet = (*Chain)(nil)
)
