-- name: RiverJobCounts :many
-- River jobs not finished by kind and state, and for available ones how long the oldest has
-- waited past its scheduled time (else 0).
SELECT kind, state::text AS state, count(*) AS n,
    COALESCE(extract(epoch FROM now() - min(scheduled_at) FILTER (WHERE state = 'available'))::float8, 0)::float8
        AS oldest_available_age_seconds
FROM river_job WHERE state IN ('available', 'scheduled', 'retryable', 'running') GROUP BY 1, 2;
