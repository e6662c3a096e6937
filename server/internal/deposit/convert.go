package deposit

import (
	"time"

	"github.com/cofferhq/coffer/server/internal/chain"
)

// depth is the confirmations a network requires; chain.Config refuses a negative count.
func depth(n chain.Network) uint64 { return uint64(max(n.Confirmations, 0)) }

// logIndex is a log's position in its block, which the block's gas limit keeps far below 2^31.
func logIndex(i uint) int64 {
	return int64(i) //nolint:gosec // G115: bounded by the logs one block holds
}

// blockTime is a block's timestamp, in seconds since 1970: 2^63 of them is far beyond any chain.
func blockTime(sec uint64) time.Time {
	return time.Unix(int64(sec), 0) //nolint:gosec // G115: a block timestamp, see above
}
