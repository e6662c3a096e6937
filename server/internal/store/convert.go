package store

import "math"

// PostgreSQL has no unsigned integers: chain quantities (block numbers, nonces, gas) are
// uint64 on the chain and bigint in the tables, and page sizes are int in Go and int4 in LIMIT.
// These conversions are the only places the store crosses those types.

// bigint stores a chain quantity. Block numbers, nonces and gas stay far below 2^63 (a block
// a second would take 292 billion years to get there), so no value the chain gives wraps.
func bigint(v uint64) int64 {
	return int64(v) //nolint:gosec // G115: bounded by the chain, see above
}

// chainUint reads back a chain quantity that bigint stored, so it is never negative.
func chainUint(v int64) uint64 {
	return uint64(v) //nolint:gosec // G115: written by bigint from a uint64
}

// addressIndex reads back a derivation index, which the wallet hands out as a uint32.
func addressIndex(v int64) uint32 {
	return uint32(v) //nolint:gosec // G115: written from a uint32 (the wallet's DepositAddress index)
}

// int4 narrows a page size or a small count for an int4 parameter, saturating at the int4
// range: a LIMIT beyond 2^31-1 already returns every row, and a negative one is refused by
// PostgreSQL either way.
func int4(n int64) int32 {
	switch {
	case n > math.MaxInt32:
		return math.MaxInt32
	case n < math.MinInt32:
		return math.MinInt32
	}
	return int32(n)
}

// rowLimit is a page size for a LIMIT parameter.
func rowLimit(n int) int32 { return int4(int64(n)) }
