package rates

import (
	"fmt"
	"math/big"

	"github.com/shopspring/decimal"
)

// Conversions between token units (decimal.Decimal, e.g. 25.5 USDT), a token's smallest unit
// (*big.Int, e.g. 25500000 with 6 decimals; wei for 18-decimal natives), USD and fiat. All
// are exact; where a result must be rounded, the function says in which direction.
//
// decimals is the token's number of decimals (0 to 255 on ERC20; 18 for native coins). A
// negative decimals is a programming error and panics.

// USDDecimals is the number of decimals of USD values on the wire ("12.345678").
const USDDecimals = 6

func checkDecimals(fn string, decimals int32) {
	if decimals < 0 {
		panic(fmt.Sprintf("rates.%s: negative decimals %d", fn, decimals))
	}
}

// ToUnits converts an amount in token units to the smallest unit. Digits beyond the token's
// decimals are dropped (rounded toward zero), so a conversion never creates value: 1.2345678
// USDT (6 decimals) is 1234567. Use ToUnitsExact to refuse such amounts instead.
func ToUnits(amount decimal.Decimal, decimals int32) *big.Int {
	checkDecimals("ToUnits", decimals)
	return amount.Shift(decimals).BigInt() // BigInt truncates toward zero
}

// ToUnitsExact converts an amount in token units to the smallest unit, refusing an amount
// with more fractional digits than the token has.
func ToUnitsExact(amount decimal.Decimal, decimals int32) (*big.Int, error) {
	checkDecimals("ToUnitsExact", decimals)
	shifted := amount.Shift(decimals)
	if !shifted.IsInteger() {
		return nil, fmt.Errorf("rates: amount %s has more than %d decimals", amount, decimals)
	}
	return shifted.BigInt(), nil
}

// FromUnits converts an amount in the smallest unit to token units, exactly. nil is zero.
func FromUnits(raw *big.Int, decimals int32) decimal.Decimal {
	checkDecimals("FromUnits", decimals)
	if raw == nil {
		return decimal.Zero
	}
	return decimal.NewFromBigInt(raw, -decimals)
}

// FormatUnits writes an amount in the smallest unit in token units with exactly the token's
// decimals: 25000000 with 6 decimals is "25.000000" (DESIGN's cryptoAmountSent format).
func FormatUnits(raw *big.Int, decimals int32) string {
	return FromUnits(raw, decimals).StringFixed(decimals)
}

// FiatToTokenUnits is the smallest-unit amount of a token worth fiatAmount: fiatAmount /
// fiatPerUSD / usdPerToken token units, rounded UP to the smallest unit, so that a user who
// pays it covers the fiat amount. The computation is exact (rational), with one rounding.
// Both rates must be > 0 (every Source and Fiat guarantees it); otherwise it panics, as a
// division by zero would.
func FiatToTokenUnits(fiatAmount, fiatPerUSD, usdPerToken decimal.Decimal, decimals int32) *big.Int {
	checkDecimals("FiatToTokenUnits", decimals)
	if !fiatPerUSD.IsPositive() || !usdPerToken.IsPositive() {
		panic(fmt.Sprintf("rates.FiatToTokenUnits: rates must be > 0 (fiat per USD %s, USD per token %s)", fiatPerUSD, usdPerToken))
	}
	// units = fiatAmount × 10^decimals / (fiatPerUSD × usdPerToken)
	q := new(big.Rat).Quo(fiatAmount.Shift(decimals).Rat(), fiatPerUSD.Mul(usdPerToken).Rat())
	return ceilRat(q)
}

// FiatToTokenUnitsDown is FiatToTokenUnits rounded DOWN: what a payout of fiatAmount sends,
// never more than the fiat amount is worth.
func FiatToTokenUnitsDown(fiatAmount, fiatPerUSD, usdPerToken decimal.Decimal, decimals int32) *big.Int {
	checkDecimals("FiatToTokenUnitsDown", decimals)
	if !fiatPerUSD.IsPositive() || !usdPerToken.IsPositive() {
		panic(fmt.Sprintf("rates.FiatToTokenUnitsDown: rates must be > 0 (fiat per USD %s, USD per token %s)", fiatPerUSD, usdPerToken))
	}
	q := new(big.Rat).Quo(fiatAmount.Shift(decimals).Rat(), fiatPerUSD.Mul(usdPerToken).Rat())
	return new(big.Int).Quo(q.Num(), q.Denom())
}

// FiatDecimals is the most decimals a fiat amount has (sessions' amounts and operators' caps).
const FiatDecimals = 18

// ConvertFiatUp converts a fiat amount from one currency to another (fromPerUSD and toPerUSD
// units of each buy one USD), exactly, rounded UP to FiatDecimals: what a cap is checked
// against, so that an amount above a cap is never brought down to it by rounding (a cap has at
// most FiatDecimals decimals). Both rates must be > 0; otherwise it panics.
func ConvertFiatUp(amount, fromPerUSD, toPerUSD decimal.Decimal) decimal.Decimal {
	if !fromPerUSD.IsPositive() || !toPerUSD.IsPositive() {
		panic(fmt.Sprintf("rates.ConvertFiatUp: rates must be > 0 (from %s, to %s per USD)", fromPerUSD, toPerUSD))
	}
	// amount × toPerUSD / fromPerUSD, in units of 10^-FiatDecimals
	q := new(big.Rat).Quo(amount.Mul(toPerUSD).Shift(FiatDecimals).Rat(), fromPerUSD.Rat())
	return decimal.NewFromBigInt(ceilRat(q), -FiatDecimals)
}

// ceilRat rounds toward +∞.
func ceilRat(q *big.Rat) *big.Int {
	quo, rem := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int)) // truncated toward zero
	if rem.Sign() > 0 {
		quo.Add(quo, big.NewInt(1))
	}
	return quo
}

// UnitsToUSD is the USD value of an amount in the smallest unit, exactly (not rounded;
// USDString rounds it for the wire).
func UnitsToUSD(raw *big.Int, decimals int32, usdPerToken decimal.Decimal) decimal.Decimal {
	return FromUnits(raw, decimals).Mul(usdPerToken)
}

// USDString writes a USD value with 6 decimals, rounded half to even: "0.000000",
// "75.123456". It is the wire format of USD values.
func USDString(d decimal.Decimal) string {
	return d.RoundBank(USDDecimals).StringFixed(USDDecimals)
}
