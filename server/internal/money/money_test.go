package money

import (
	"testing"

	"github.com/shopspring/decimal"
)

func TestFiat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"25": "25.00", "25.5": "25.50", "25.000000000000000000": "25.00", "0.125": "0.125", "1234567.1": "1234567.10",
	} {
		if got := Fiat(decimal.RequireFromString(in)); got != want {
			t.Errorf("Fiat(%s) = %s, want %s", in, got, want)
		}
	}
}
