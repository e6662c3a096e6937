-- name: HitSlidingRateLimit :one
-- Counts one hit in the current fixed window and returns it with the hits of the previous window,
-- the seconds elapsed in the current one and its end.
WITH hit AS (
    INSERT INTO rate_limits (key, window_start, hits)
    VALUES (@key, to_timestamp(floor(extract(epoch FROM now()) / sqlc.arg(window_secs)::numeric) * sqlc.arg(window_secs)::numeric), 1)
    ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + 1
    RETURNING hits, window_start)
SELECT hit.hits, COALESCE(prev.hits, 0)::int AS previous, extract(epoch FROM now() - hit.window_start)::float8 AS elapsed,
       (hit.window_start + make_interval(secs => sqlc.arg(window_secs)::numeric))::timestamptz AS reset_at
FROM hit LEFT JOIN rate_limits prev
    ON prev.key = @key AND prev.window_start = hit.window_start - make_interval(secs => sqlc.arg(window_secs)::numeric);

-- name: UnhitRateLimit :exec
-- Takes back a hit of the window ending at reset_at.
UPDATE rate_limits SET hits = hits - 1
WHERE key = @key AND window_start = sqlc.arg(reset_at)::timestamptz - make_interval(secs => sqlc.arg(window_secs)::float8) AND hits > 0;

-- name: DeleteOldRateLimits :execrows
DELETE FROM rate_limits WHERE window_start < @before::timestamptz;
