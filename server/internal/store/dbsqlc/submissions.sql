-- name: SessionWithdrawals :many
SELECT id, status, (payout_queued_at IS NOT NULL)::boolean AS paying FROM withdrawals WHERE session_id = @session_id ORDER BY created_at, id;

-- name: LockSessionWithdrawals :many
-- SessionWithdrawals, holding the rows until the transaction ends.
SELECT id, status, (payout_queued_at IS NOT NULL)::boolean AS paying FROM withdrawals WHERE session_id = @session_id ORDER BY created_at, id
FOR UPDATE;

-- name: TakeSubmitLease :one
-- The second branch reports the lease someone else holds; its NULL: a concurrent call took
-- the lease after this statement's snapshot.
WITH took AS (
	UPDATE sessions SET submitting_until = clock_timestamp() + make_interval(secs => sqlc.arg(seconds)::float8)
	WHERE sessions.id = sqlc.arg(id) AND (sessions.submitting_until IS NULL OR sessions.submitting_until <= clock_timestamp())
	RETURNING sessions.submitting_until
)
SELECT took.submitting_until::timestamptz AS until, true AS ok FROM took
UNION ALL
SELECT COALESCE(sessions.submitting_until, clock_timestamp() + interval '1 second'), false FROM sessions
WHERE sessions.id = sqlc.arg(id) AND NOT EXISTS (SELECT 1 FROM took);

-- name: ReleaseSubmitLease :exec
-- A no-op once another lease replaced this one.
UPDATE sessions SET submitting_until = NULL WHERE id = @id AND submitting_until = @until::timestamptz;
