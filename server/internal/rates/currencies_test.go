package rates

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

func TestPriced(t *testing.T) {
	t.Parallel()
	table, err := NewStatic(nil, map[string]decimal.Decimal{"eur": decimal.RequireFromString("0.92"), "USD": decimal.NewFromInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		set       FiatSet
		code      string
		want      string
		ok        bool
		supported []string
	}{
		{"configured, lower case", table, " eur ", "EUR", true, []string{"EUR", "USD"}},
		{"USD always", table, "usd", "USD", true, []string{"EUR", "USD"}},
		{"unpriced", table, "JPY", "JPY", false, []string{"EUR", "USD"}},
		{"through a chain", NewChain(nil, table), "Eur", "EUR", true, []string{"EUR", "USD"}},
		{"chain without a table", NewChain(nil, nil), "EUR", "EUR", false, []string{"USD"}},
		{"nil: USD only", nil, "usd", "USD", true, []string{"USD"}},
		{"nil refuses others", nil, "EUR", "EUR", false, []string{"USD"}},
	} {
		got, ok, supported := Priced(c.set, c.code)
		if got != c.want || ok != c.ok || !slices.Equal(supported, c.supported) {
			t.Errorf("%s: Priced(%q) = %q %v %v, want %q %v %v", c.name, c.code, got, ok, supported, c.want, c.ok, c.supported)
		}
	}
}
