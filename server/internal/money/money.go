// Package money formats and converts amounts exactly (shopspring/decimal, never float).
package money

import "github.com/shopspring/decimal"

// Fiat writes a fiat amount with at least two decimals: "25.00", "0.125".
func Fiat(d decimal.Decimal) string {
	if d.Equal(d.Round(2)) {
		return d.StringFixed(2)
	}
	return d.String()
}
