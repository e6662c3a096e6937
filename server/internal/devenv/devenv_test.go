//go:build !nodev

package devenv

import (
	"math/big"
	"testing"
)

func TestFormatUnits(t *testing.T) {
	for _, c := range []struct {
		x        int64
		decimals int
		want     string
	}{
		{1_000_000_000_000_000, 6, "1000000000.000000"},
		{5, 6, "0.000005"},
		{0, 6, "0.000000"},
		{-1_500_000, 6, "-1.500000"},
		{42, 0, "42"},
	} {
		if got := formatUnits(big.NewInt(c.x), c.decimals); got != c.want {
			t.Errorf("formatUnits(%d, %d) = %q, want %q", c.x, c.decimals, got, c.want)
		}
	}
}
