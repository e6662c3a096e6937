package rates

import (
	"math/big"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func bigInt(t *testing.T, s string) *big.Int {
	t.Helper()
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatalf("bad integer %q", s)
	}
	return n
}

const (
	oneE30   = "1000000000000000000000000000000"
	maxUint  = "115792089237316195423570985008687907853269984665640564039457584007913129639935" // 2^256-1
	oneEther = "1000000000000000000"
)

func TestToUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amount   string
		decimals int32
		want     string
		exact    bool // ToUnitsExact accepts it
	}{
		{"25", 6, "25000000", true},
		{"25.5", 6, "25500000", true},
		{"0", 6, "0", true},
		{"0", 18, "0", true},
		{"1.5", 18, "1500000000000000000", true},
		{"0.000000000000000001", 18, "1", true},   // one wei
		{"1000000000000", 18, oneE30, true},       // 1e12 ETH = 1e30 wei
		{"1.2340000", 6, "1234000", true},         // trailing zeros are not extra precision
		{"1.2345678", 6, "1234567", false},        // the 7th decimal is dropped
		{"1.9999999", 6, "1999999", false},        // toward zero, not to nearest
		{"0.0000009", 6, "0", false},              // less than one unit
		{"-1.2345678", 6, "-1234567", false},      // toward zero for negatives too
		{"0.0000000000000000019", 18, "1", false}, // 1.9 wei
		{"7", 0, "7", true},                       // 0-decimal token
		{"7.5", 0, "7", false},                    //
		{"123456789012345678901234567890.123456789012345678", 18, "123456789012345678901234567890123456789012345678", true},
		{"115792089237316195423570985008687907853269984665640564039457.584007913129639935", 18, maxUint, true},
	} {
		got := ToUnits(dec(tc.amount), tc.decimals)
		if got.String() != tc.want {
			t.Errorf("ToUnits(%s, %d) = %s, want %s", tc.amount, tc.decimals, got, tc.want)
		}
		exact, err := ToUnitsExact(dec(tc.amount), tc.decimals)
		switch {
		case tc.exact && (err != nil || exact.String() != tc.want):
			t.Errorf("ToUnitsExact(%s, %d) = %v, %v; want %s", tc.amount, tc.decimals, exact, err, tc.want)
		case !tc.exact && err == nil:
			t.Errorf("ToUnitsExact(%s, %d) = %s; want an error", tc.amount, tc.decimals, exact)
		case !tc.exact && !strings.Contains(err.Error(), "decimals"):
			t.Errorf("ToUnitsExact(%s, %d): unclear error %v", tc.amount, tc.decimals, err)
		}
	}
}

func TestFromUnitsAndFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw      string // "" = nil
		decimals int32
		want     string // FromUnits, canonical decimal string
		format   string // FormatUnits
	}{
		{"25000000", 6, "25", "25.000000"},
		{"25500000", 6, "25.5", "25.500000"},
		{"1", 6, "0.000001", "0.000001"},
		{"0", 6, "0", "0.000000"},
		{"", 6, "0", "0.000000"},
		{"0", 18, "0", "0.000000000000000000"},
		{"1", 18, "0.000000000000000001", "0.000000000000000001"},
		{oneEther, 18, "1", "1.000000000000000000"},
		{"1500000000000000000", 18, "1.5", "1.500000000000000000"},
		{oneE30, 18, "1000000000000", "1000000000000.000000000000000000"},
		{maxUint, 18, "115792089237316195423570985008687907853269984665640564039457.584007913129639935",
			"115792089237316195423570985008687907853269984665640564039457.584007913129639935"},
		{"123", 0, "123", "123"},
		{"-1500", 3, "-1.5", "-1.500"},
		{"-5", 2, "-0.05", "-0.05"},
	} {
		var raw *big.Int
		if tc.raw != "" {
			raw = bigInt(t, tc.raw)
		}
		if got := FromUnits(raw, tc.decimals); !got.Equal(dec(tc.want)) {
			t.Errorf("FromUnits(%s, %d) = %s, want %s", tc.raw, tc.decimals, got, tc.want)
		}
		if got := FormatUnits(raw, tc.decimals); got != tc.format {
			t.Errorf("FormatUnits(%s, %d) = %q, want %q", tc.raw, tc.decimals, got, tc.format)
		}
		// Round trip.
		if raw != nil {
			if back := ToUnits(FromUnits(raw, tc.decimals), tc.decimals); back.Cmp(raw) != 0 {
				t.Errorf("ToUnits(FromUnits(%s)) = %s", raw, back)
			}
		}
	}
}

// conversion is a fiat amount at a fiat rate (per USD) and a token price (USD), and the token
// units wanted for it: up (FiatToTokenUnits, what a deposit asks) and, where the case checks
// it, down (FiatToTokenUnitsDown, what a payout sends).
type conversion struct {
	name                string
	fiat, perUSD, price string
	decimals            int32
	up, down            string
}

// conversions are the cases of both directions.
var conversions = []conversion{
	{"USD to USDT, exact", "25", "1", "1", 6, "25000000", "25000000"},
	{"USD to USDT, cents", "25.01", "1", "1", 6, "25010000", ""},
	// 25 / 3000 = 0.008333… ETH = 8333333333333333.33… wei: rounded up, or down
	{"USD to ETH, rounded", "25", "1", "3000", 18, "8333333333333334", "8333333333333333"},
	// 30 / 3000 = 0.01 ETH exactly: no rounding
	{"USD to ETH, exact", "30", "1", "3000", 18, "10000000000000000", "10000000000000000"},
	// 25 EUR / 0.92 = 27.173913043478260869… USD = 27173913.04… units
	{"EUR to USDT", "25", "0.92", "1", 6, "27173914", "27173913"},
	// 100 EUR / 0.92 / 3000 = 1e20 / 2760 wei = 36231884057971014.49…
	{"EUR to ETH", "100", "0.92", "3000", 18, "36231884057971015", ""},
	// 1000 JPY / 150 = 6.666666… USD = 6666666.66… units
	{"JPY to USDC", "1000", "150", "1", 6, "6666667", "6666666"},
	// a stablecoin slightly above the dollar: 25 / 1.0001 = 24.997500249975… USDT
	{"USD to USDT above peg", "25", "1", "1.0001", 6, "24997501", ""},
	{"zero", "0", "0.92", "3000", 18, "0", ""},
	// a tenth of the smallest unit still costs one unit (and a payout sends nothing)
	{"below one unit", "0.0000001", "1", "1", 6, "1", "0"},
	// 0.000001 / 3000 ETH = 333333333.33… wei
	{"one micro-dollar of ETH", "0.000001", "1", "3000", 18, "333333334", ""},
	{"1e12 USD of ETH at 1", "1000000000000", "1", "1", 18, oneE30, ""},
	// 1e12 / 3000 ETH = 333333333.33… ETH = 333333333333333333333333333.33… wei
	{"1e12 USD of ETH at 3000", "1000000000000", "1", "3000", 18, "333333333333333333333333334", ""},
	{"0-decimal token", "10", "1", "3", 0, "4", ""},
}

// convert runs a conversion function (named name) on the case and checks it gives want; ok is
// false (the test has failed) when it does not.
func (c conversion) convert(t *testing.T, name string, f func(fiat, perUSD, price decimal.Decimal, decimals int32) *big.Int, want string) (got *big.Int, fiat *big.Rat, ok bool) {
	t.Helper()
	got = f(dec(c.fiat), dec(c.perUSD), dec(c.price), c.decimals)
	if got.String() != want {
		t.Errorf("%s: %s(%s, %s, %s, %d) = %s, want %s", c.name, name, c.fiat, c.perUSD, c.price, c.decimals, got, want)
		return nil, nil, false
	}
	return got, dec(c.fiat).Rat(), true
}

// worth is what units of the case's token are worth in its fiat, exactly.
func (c conversion) worth(units *big.Int) *big.Rat {
	r := new(big.Rat).SetFrac(units, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.decimals)), nil))
	r.Mul(r, dec(c.price).Rat())
	return r.Mul(r, dec(c.perUSD).Rat())
}

func TestFiatToTokenUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range conversions {
		got, fiat, ok := tc.convert(t, "FiatToTokenUnits", FiatToTokenUnits, tc.up)
		if !ok {
			continue
		}
		// The amount covers the fiat amount, and one unit less does not (exact rationals).
		if tc.worth(got).Cmp(fiat) < 0 {
			t.Errorf("%s: %s units are worth less than %s", tc.name, got, tc.fiat)
		}
		if less := new(big.Int).Sub(got, big.NewInt(1)); got.Sign() > 0 && tc.worth(less).Cmp(fiat) >= 0 {
			t.Errorf("%s: %s units already cover %s", tc.name, less, tc.fiat)
		}
	}
}

func TestFiatToTokenUnitsRefusesZeroRate(t *testing.T) {
	t.Parallel()
	for _, rates := range [][2]string{{"0", "1"}, {"1", "0"}, {"-1", "1"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("rates %v: no panic", rates)
				}
			}()
			FiatToTokenUnits(dec("1"), dec(rates[0]), dec(rates[1]), 6)
		}()
	}
}

func TestUnitsToUSD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw      string
		decimals int32
		price    string
		want     string // exact
		wire     string // USDString
	}{
		{"25000000", 6, "1", "25", "25.000000"},
		{"25000000", 6, "0.9998", "24.995", "24.995000"},
		{"1", 6, "1", "0.000001", "0.000001"},
		{"0", 18, "3000", "0", "0.000000"},
		{oneEther, 18, "3000", "3000", "3000.000000"},
		{"1", 18, "3000", "0.000000000000003", "0.000000"},
		// 8333333333333334 wei at 3000 = 25.000000000000002 (what FiatToTokenUnits asks for 25 USD)
		{"8333333333333334", 18, "3000", "25.000000000000002", "25.000000"},
		{oneE30, 18, "3000.12345678", "3000123456780000", "3000123456780000.000000"},
		// 0.5 µUSD rounds to even (down), 1.5 µUSD to even (up)
		{"500000000000", 18, "1", "0.0000005", "0.000000"},
		{"1500000000000", 18, "1", "0.0000015", "0.000002"},
		{"1234567500000000000", 18, "1", "1.2345675", "1.234568"},
	} {
		got := UnitsToUSD(bigInt(t, tc.raw), tc.decimals, dec(tc.price))
		if !got.Equal(dec(tc.want)) {
			t.Errorf("UnitsToUSD(%s, %d, %s) = %s, want %s", tc.raw, tc.decimals, tc.price, got, tc.want)
		}
		if s := USDString(got); s != tc.wire {
			t.Errorf("USDString(%s) = %q, want %q", got, s, tc.wire)
		}
	}
}

func TestUSDString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"0", "0.000000"},
		{"25", "25.000000"},
		{"25.5", "25.500000"},
		{"0.000001", "0.000001"},
		{"0.0000004999", "0.000000"},
		{"0.0000005", "0.000000"}, // half to even: 0
		{"0.0000015", "0.000002"}, // half to even: 2
		{"0.0000025", "0.000002"}, // half to even: 2
		{"0.0000035", "0.000004"},
		{"0.00000250000000001", "0.000003"}, // above half
		{"1.2345665", "1.234566"},
		{"1.2345675", "1.234568"},
		{"0.9999995", "1.000000"},  // carries into the integer part
		{"-0.0000005", "0.000000"}, // no negative zero
		{"-1.0000015", "-1.000002"},
		{"-1.0000025", "-1.000002"},
		{oneE30, oneE30 + ".000000"},
		{"1000000000000000000000000.1234565", "1000000000000000000000000.123456"},
	} {
		if got := USDString(dec(tc.in)); got != tc.want {
			t.Errorf("USDString(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNegativeDecimalsPanic(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "negative decimals") {
			t.Fatalf("recover() = %v", r)
		}
	}()
	ToUnits(dec("1"), -1)
}

// TestFiatToTokenUnitsDown: a payout never sends more than the fiat amount is worth, and one
// unit more would.
func TestFiatToTokenUnitsDown(t *testing.T) {
	t.Parallel()
	for _, tc := range conversions {
		if tc.down == "" {
			continue
		}
		got, fiat, ok := tc.convert(t, "FiatToTokenUnitsDown", FiatToTokenUnitsDown, tc.down)
		if !ok {
			continue
		}
		if tc.worth(got).Cmp(fiat) > 0 {
			t.Errorf("%s: %s units are worth more than %s", tc.name, got, tc.fiat)
		}
		if more := new(big.Int).Add(got, big.NewInt(1)); tc.worth(more).Cmp(fiat) <= 0 {
			t.Errorf("%s: %s units still within %s", tc.name, more, tc.fiat)
		}
	}
}

func TestConvertFiatUp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ amount, from, to, want string }{
		{"92", "0.92", "1", "100"},
		// 100.00000000000000000108… USD: rounded up at the 18th decimal, never down to 100.
		{"92.000000000000000001", "0.92", "1", "100.000000000000000002"},
		{"100", "1", "0.79", "79"},
		// 1 EUR in GBP is 0.858695652173913043478…
		{"1", "0.92", "0.79", "0.858695652173913044"},
		{"0.000000000000000001", "3", "1", "0.000000000000000001"},
		{"99999999999999999999.999999999999999999", "0.79", "0.92", "116455696202531645569.620253164556962025"},
	} {
		got := ConvertFiatUp(dec(c.amount), dec(c.from), dec(c.to))
		if !got.Equal(dec(c.want)) {
			t.Errorf("ConvertFiatUp(%s, %s → %s) = %s, want %s", c.amount, c.from, c.to, got, c.want)
		}
	}
	for _, r := range [][2]string{{"0", "1"}, {"1", "0"}, {"-1", "1"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("rates %v: no panic", r)
				}
			}()
			ConvertFiatUp(dec("1"), dec(r[0]), dec(r[1]))
		}()
	}
}
