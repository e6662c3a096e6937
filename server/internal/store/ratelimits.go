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

// UnhitRateLimit takes back one hit that HitRateLimit counted in the window ending at resetAt
// (its second result), so a refund lands in the window of the hit even after it ended.
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
