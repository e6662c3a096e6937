-- name: InsertWebhookEvent :execrows
-- Writes nothing when the operator already has a (non-test) event of this type for this subject.
-- The event is queued, due now. The shared lock on the operator's drain (see
-- LockWebhookDrain) orders this insert against a drain that is about to end: the drain waits
-- for it and sees the event, or it waits for the drain to end and queues a new one.
WITH e AS (
    INSERT INTO webhook_events (id, operator_id, event_type, subject_id, test, body)
    VALUES (@id, @operator_id, @event_type, @subject_id, @test, @body)
    ON CONFLICT (operator_id, event_type, subject_id) WHERE NOT test AND NOT sync DO NOTHING
    RETURNING webhook_events.id, webhook_events.operator_id
), locked AS (
    SELECT e.id, e.operator_id, pg_advisory_xact_lock_shared(hashtext('coffer webhook drain ' || e.operator_id::text))
    FROM e
)
INSERT INTO webhook_queue (event_id, operator_id) SELECT locked.id, locked.operator_id FROM locked;

-- name: DueWebhooks :many
-- An operator's due events, oldest due first, leaving out those being posted (@posting).
SELECT e.id, e.event_type, e.body, q.attempts_left
FROM webhook_queue q JOIN webhook_events e ON e.id = q.event_id
WHERE q.operator_id = @operator_id AND q.next_attempt_at <= now() AND q.event_id <> ALL(coalesce(@posting::uuid[], '{}'))
ORDER BY q.next_attempt_at, q.event_id
LIMIT @max_rows;

-- name: TryLockWebhookDrain :one
-- Taken by a drain before it ends, in the transaction that completes its job, only when no
-- Enqueue of the operator is in flight (they hold the lock shared): an event committed while
-- the drain ends is then either seen by it or finds no drain and starts one. It never waits:
-- a drain that would queue behind Enqueues would make later ones queue behind it.
SELECT pg_try_advisory_xact_lock(hashtext('coffer webhook drain ' || @operator_id::text))::bool AS locked;

-- name: NextWebhookDue :one
-- Whether the operator has events queued, whether one is due now or within @soon, and when
-- the next is due.
SELECT count(*) > 0 AS queued, coalesce(bool_or(next_attempt_at <= now()), false)::bool AS due_now,
    coalesce(bool_or(next_attempt_at <= now() + @soon::interval), false)::bool AS due_soon,
    coalesce(min(next_attempt_at), now())::timestamptz AS due
FROM webhook_queue WHERE operator_id = @operator_id;

-- name: ClaimWebhookDrain :many
-- Run by Enqueue after its event is queued (holding the drain lock shared). No row: a drain is
-- live (or was just started by a concurrent Enqueue); nothing is written or locked, so
-- Enqueues of one operator never wait on each other. inserted: there was none, the caller
-- inserts its job. Otherwise the row of the live drain, whose due_at says whether it waits
-- for a retry (WakeWebhookDrain).
WITH ins AS (
    INSERT INTO webhook_drains (operator_id) VALUES (@operator_id)
    ON CONFLICT (operator_id) DO NOTHING
    RETURNING operator_id
)
SELECT true AS inserted, 0::bigint AS job_id, NULL::timestamptz AS due_at FROM ins
UNION ALL
SELECT false, coalesce(d.job_id, 0), d.due_at FROM webhook_drains d
WHERE d.operator_id = @operator_id AND NOT EXISTS (SELECT 1 FROM ins);

-- name: WakeWebhookDrain :many
-- A drain waiting for a retry is wanted now: clears due_at (the caller makes job_id available).
-- No row: another Enqueue woke it first.
UPDATE webhook_drains SET due_at = NULL WHERE operator_id = @operator_id AND due_at IS NOT NULL
RETURNING coalesce(job_id, 0)::bigint AS job_id;

-- name: SetWebhookDrainJob :exec
-- The drain's job, and when it is due if it waits for a retry (NULL: now).
UPDATE webhook_drains SET job_id = @job_id, due_at = sqlc.narg(due_at) WHERE operator_id = @operator_id;

-- name: EndWebhookDrain :exec
DELETE FROM webhook_drains WHERE operator_id = @operator_id;

-- name: RecordWebhookAttempts :many
-- Records attempts of pending events (the arrays are parallel, one element per event) and moves
-- each event to its state; a first attempt that was acked leaves no attempts row. An event
-- still pending is due again after its retry delay with one attempt less; a delivered or dead
-- one leaves the queue. Returns the events that were pending with their attempt numbers.
WITH input AS (
    -- unnest in the select list: one row per element, the arrays in lockstep.
    SELECT unnest(@event_ids::uuid[]) AS event_id, unnest(@states::text[]) AS state, unnest(@urls::text[]) AS url,
        unnest(@statuses::int[]) AS status, unnest(@acked::bool[]) AS acked, unnest(@error_codes::int[]) AS error_code,
        unnest(@has_error_codes::bool[]) AS has_error_code, unnest(@errors::text[]) AS error,
        unnest(@durations_ms::int[]) AS duration_ms, unnest(@retry_ms::bigint[]) AS retry_ms
), e AS (
    UPDATE webhook_events w SET
        attempts = w.attempts + 1, state = i.state, last_status = NULLIF(i.status, 0), last_error = i.error,
        last_url = i.url, last_attempt_at = now(),
        delivered_at = CASE WHEN i.state = 'delivered' THEN now() END,
        dead_at = CASE WHEN i.state = 'dead' THEN now() END
    FROM input i
    WHERE w.id = i.event_id AND w.state = 'pending'
    RETURNING w.id, w.attempts, w.state
), a AS (
    INSERT INTO webhook_attempts (event_id, attempt, url, status, acked, error_code, error, duration_ms)
    SELECT e.id, e.attempts, i.url, NULLIF(i.status, 0), i.acked, CASE WHEN i.has_error_code THEN i.error_code END,
        i.error, i.duration_ms
    FROM e JOIN input i ON i.event_id = e.id
    WHERE NOT i.acked OR e.attempts > 1
), retried AS (
    UPDATE webhook_queue q SET next_attempt_at = now() + i.retry_ms * interval '1 millisecond',
        attempts_left = q.attempts_left - 1
    FROM e JOIN input i ON i.event_id = e.id
    WHERE q.event_id = e.id AND e.state = 'pending'
), settled AS (
    DELETE FROM webhook_queue q USING e WHERE q.event_id = e.id AND e.state <> 'pending'
)
SELECT e.id::text AS id, e.attempts::int AS attempts FROM e;

-- name: InsertSyncWebhook :exec
-- A synchronous send, already finished (delivered or failed), with its one attempt.
WITH e AS (
    INSERT INTO webhook_events (id, operator_id, event_type, subject_id, test, sync, body, state, attempts,
        last_status, last_error, last_url, last_attempt_at, delivered_at)
    VALUES (@id, @operator_id, @event_type, @subject_id, @test, true, @body,
        CASE WHEN @acked::bool THEN 'delivered' ELSE 'failed' END, 1,
        NULLIF(@status::int, 0), @error::text, @url::text, now(), CASE WHEN @acked::bool THEN now() END)
    RETURNING webhook_events.id
)
INSERT INTO webhook_attempts (event_id, attempt, url, status, acked, error_code, error, duration_ms)
SELECT e.id, 1, @url::text, NULLIF(@status::int, 0), @acked::bool, sqlc.narg(error_code)::int, @error::text,
    @duration_ms::int
FROM e;

-- name: GetWebhookEvent :one
SELECT id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid
FROM webhook_events
WHERE id = @id AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[]));

-- name: LockWebhookEvent :one
SELECT id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid
FROM webhook_events
WHERE id = @id AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
FOR UPDATE;

-- name: RequeueDeadWebhook :one
-- attempts count on (QueueWebhook queues it).
UPDATE webhook_events SET state = 'pending', dead_at = NULL
WHERE id = @id AND state = 'dead'
RETURNING id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid;

-- name: QueueWebhook :exec
-- A requeued event, due now, with five attempts.
INSERT INTO webhook_queue (event_id, operator_id) VALUES (@event_id, @operator_id);

-- name: ListDeadWebhooks :many
-- Newest first, strictly after the cursor (after_dead_at, after_id) when it is not NULL.
SELECT id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid
FROM webhook_events
WHERE dead_at IS NOT NULL
  AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
  AND (sqlc.narg(after_dead_at)::timestamptz IS NULL
       OR (dead_at, id) < (sqlc.narg(after_dead_at)::timestamptz, sqlc.narg(after_id)::uuid))
ORDER BY dead_at DESC, id DESC
LIMIT @max_rows;

-- name: WebhookAttempts :many
SELECT event_id, attempt, url, status, acked, error_code, error, duration_ms, attempted_at
FROM webhook_attempts WHERE event_id = @event_id ORDER BY attempt;

-- name: RequeueWebhook :one
-- A new delivery of an event in one of the states from (the operator's redelivery; attempts
-- count on; QueueWebhook queues it). The event keeps its place in the feed (txid).
UPDATE webhook_events SET state = 'pending', dead_at = NULL
WHERE id = @id AND state = ANY(@from_states::text[])
RETURNING id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid;

-- name: ListEventFeed :many
-- The event feed of one operator in (txid, id) order, strictly after the position
-- (after_txid, after_id), and only the events whose transaction is below the snapshot's xmin:
-- every such transaction has finished, so nothing can commit behind the last row returned.
-- @max_rows bounds the page. One ordered range of webhook_events_feed_idx, however long the feed.
SELECT id, operator_id, event_type, subject_id, test, sync, body, state, attempts, last_status, last_error,
    last_url, created_at, last_attempt_at, delivered_at, dead_at, txid
FROM webhook_events
WHERE operator_id = @operator_id
  AND (txid, id) > (@after_txid::xid8, @after_id::uuid)
  AND txid < pg_snapshot_xmin(pg_current_snapshot())
ORDER BY txid, id
LIMIT @max_rows;

-- name: LostWebhookDrains :many
-- Operators with queued events whose drain is missing or whose job will not run again.
SELECT o.id::text FROM operators o
WHERE EXISTS (SELECT 1 FROM webhook_queue q WHERE q.operator_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM webhook_drains d JOIN river_job j ON j.id = d.job_id
    WHERE d.operator_id = o.id AND j.state IN ('available', 'pending', 'running', 'retryable', 'scheduled'));
