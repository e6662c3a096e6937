package store

import (
	"context"
	"time"
)

// HitRateLimit counts one hit against key in the current fixed window and returns the count
// including this hit and the window's end. Atomic across replicas.
func (q *Queries) HitRateLimit(ctx context.Context, key string, window time.Duration) (hits int, resetAt time.Time, err error) {
	err = q.db.QueryRow(ctx, `
		INSERT INTO rate_limits (key, window_start, hits)
		VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / $2) * $2), 1)
		ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + 1
		RETURNING hits, window_start + make_interval(secs => $2)`, key, window.Seconds()).Scan(&hits, &resetAt)
	return hits, resetAt, err
}

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

// HitSlidingRateLimit counts one hit against key in the current fixed window, like
// HitRateLimit, and also returns the previous window's hits, from which the caller estimates
// the hits of the sliding window ending now. Atomic across replicas.
func (q *Queries) HitSlidingRateLimit(ctx context.Context, key string, window time.Duration) (SlidingHit, error) {
	var h SlidingHit
	var elapsed float64
	err := q.db.QueryRow(ctx, `
		WITH hit AS (
			INSERT INTO rate_limits (key, window_start, hits)
			VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / $2) * $2), 1)
			ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + 1
			RETURNING hits, window_start)
		SELECT hit.hits, COALESCE(prev.hits, 0), extract(epoch FROM now() - hit.window_start)::float8,
		       hit.window_start + make_interval(secs => $2)
		FROM hit LEFT JOIN rate_limits prev ON prev.key = $1 AND prev.window_start = hit.window_start - make_interval(secs => $2)`,
		key, window.Seconds()).Scan(&h.Current, &h.Previous, &elapsed, &h.ResetAt)
	h.Elapsed = time.Duration(elapsed * float64(time.Second))
	return h, err
}

// UnhitRateLimit takes back one hit that HitRateLimit or HitSlidingRateLimit counted in the
// window ending at resetAt, so a refund lands in the window of the hit even after it ended.
func (q *Queries) UnhitRateLimit(ctx context.Context, key string, window time.Duration, resetAt time.Time) error {
	_, err := q.db.Exec(ctx, `UPDATE rate_limits SET hits = hits - 1
		WHERE key = $1 AND window_start = $3::timestamptz - make_interval(secs => $2) AND hits > 0`,
		key, window.Seconds(), resetAt)
	return err
}

// DeleteOldRateLimits removes windows that ended before the cutoff.
func (q *Queries) DeleteOldRateLimits(ctx context.Context, before time.Time) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM rate_limits WHERE window_start < $1`, before)
	return tag.RowsAffected(), err
}
