package store

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// SlidingHit is what HitSlidingRateLimit counted.
type SlidingHit struct {
	// Current is the hits of the current fixed window, this one included; Previous those of
	// the window before it.
	Current, Previous int
	// Elapsed is how far into the current window the hit landed (by PostgreSQL's clock).
	Elapsed time.Duration
	// ResetAt is the end of the current window (for UnhitRateLimit).
	ResetAt time.Time
}

// HitSlidingRateLimit counts one hit against key in the current fixed window and also
// returns the previous window's hits, from which the caller estimates
// the hits of the sliding window ending now. Atomic across replicas.
func (q *Queries) HitSlidingRateLimit(ctx context.Context, key string, window time.Duration) (SlidingHit, error) {
	r, err := sqlc.HitSlidingRateLimit(ctx, q.db, dbsqlc.HitSlidingRateLimitParams{Key: key,
		WindowSecs: decimal.NewFromFloat(window.Seconds())})
	return SlidingHit{Current: int(r.Hits), Previous: int(r.Previous), ResetAt: r.ResetAt,
		Elapsed: time.Duration(r.Elapsed * float64(time.Second))}, err
}

// Hits estimates the hits of the sliding window ending now from two fixed windows: the
// current one's and the previous one's weighted by the share of it the sliding window still
// covers, rounded up. Unlike a fixed window it allows no burst of twice the limit around a
// window's end, and a count does not drop to zero at an instant.
func (h SlidingHit) Hits(window time.Duration) int {
	weight := min(max(1-float64(h.Elapsed)/float64(window), 0), 1)
	return h.Current + int(math.Ceil(float64(h.Previous)*weight-1e-9))
}

// RetryAfter is how long until a hit refused by a limit of limit would pass, if nothing
// else were counted meanwhile (the refused hit itself given back or not counted).
func (h SlidingHit) RetryAfter(window time.Duration, limit int) time.Duration {
	current := h.Current - 1
	remaining := window - h.Elapsed
	// Within the current window, the previous one's weight falls until the attempt fits.
	if room := limit - 1 - current; room >= 0 && h.Previous > 0 {
		at := time.Duration(float64(window)*(1-float64(room)/float64(h.Previous))) - h.Elapsed
		if at < remaining {
			return max(at, 0)
		}
	}
	// Else into the next window, where the current one's hits weigh less and less.
	if current <= limit-1 {
		return remaining
	}
	return remaining + time.Duration(float64(window)*(1-float64(limit-1)/float64(current)))
}

// RetryAfterSeconds is RetryAfter in whole seconds for a Retry-After header: rounded up, at
// least one.
func (h SlidingHit) RetryAfterSeconds(window time.Duration, limit int) int {
	return max(int(math.Ceil(h.RetryAfter(window, limit).Seconds())), 1)
}

// RateLimit is at most Max hits of Key per sliding Window.
type RateLimit struct {
	Key    string
	Max    int
	Window time.Duration
}

// Refusal is the limit a hit exceeded and the whole seconds until it would pass.
type Refusal struct {
	Limit      RateLimit
	RetryAfter int
}

// TakeRateLimits counts one hit against each limit in turn. At the first one the hit exceeds,
// it takes back the hits it counted (a refused request does not count, so Retry-After holds)
// and returns that limit's Refusal; nil when the hit is within every limit.
func (q *Queries) TakeRateLimits(ctx context.Context, limits ...RateLimit) (*Refusal, error) {
	var taken []SlidingHit
	giveBack := func() error {
		for i, h := range taken {
			// Even when ctx ended: a count left behind would refuse later requests.
			if err := q.UnhitRateLimit(context.WithoutCancel(ctx), limits[i].Key, limits[i].Window, h.ResetAt); err != nil {
				return err
			}
		}
		return nil
	}
	for _, l := range limits {
		h, err := q.HitSlidingRateLimit(ctx, l.Key, l.Window)
		if err != nil {
			return nil, errors.Join(err, giveBack())
		}
		taken = append(taken, h)
		if h.Hits(l.Window) > l.Max {
			// Hits beyond Max are refused ones, given back as this one is: they are only in
			// flight, and would otherwise stretch the wait they announce.
			h.Current = min(h.Current, l.Max+1)
			return &Refusal{Limit: l, RetryAfter: h.RetryAfterSeconds(l.Window, l.Max)}, giveBack()
		}
	}
	return nil, nil //nolint:nilnil // a nil Refusal is the documented answer "within every limit"
}

// UnhitRateLimit takes back one hit that HitSlidingRateLimit counted in the
// window ending at resetAt, so a refund lands in the window of the hit even after it ended.
func (q *Queries) UnhitRateLimit(ctx context.Context, key string, window time.Duration, resetAt time.Time) error {
	return sqlc.UnhitRateLimit(ctx, q.db, dbsqlc.UnhitRateLimitParams{Key: key, ResetAt: resetAt, WindowSecs: window.Seconds()})
}

// DeleteOldRateLimits removes windows that ended before the cutoff.
func (q *Queries) DeleteOldRateLimits(ctx context.Context, before time.Time) (int64, error) {
	return sqlc.DeleteOldRateLimits(ctx, q.db, before)
}
