-- name: RegisterWorker :exec
INSERT INTO worker_liveness (client_id, lock_key, host, pid) VALUES (@client_id, @lock_key, @host, @pid)
ON CONFLICT (client_id) DO UPDATE SET beat_at = now();

-- name: BeatWorker :execrows
UPDATE worker_liveness SET beat_at = now() WHERE client_id = @client_id;

-- name: UnregisterWorker :exec
DELETE FROM worker_liveness WHERE client_id = @client_id;

-- name: TryWorkerLock :one
-- Session-level: held by the worker's own connection for as long as it lives, so a free lock
-- tells RescueDeadWorkers the worker's connection is gone.
SELECT pg_try_advisory_lock(@lock_key)::bool AS locked;

-- name: RescueDeadWorkers :many
-- Workers whose advisory lock is free and whose last beat is older than @grace_seconds, in one
-- transaction: removed, their running River jobs made available again (discarded on their
-- last attempt, with the reason in the job's errors), and a dead leader's row deleted with the
-- resignation River's electors listen for. Concurrent rescuers skip the workers another is
-- handling. One row per worker, rescued job and deposed leader, told apart by what.
WITH dead AS (
    SELECT w.client_id FROM worker_liveness w
    WHERE w.beat_at < now() - make_interval(secs => @grace_seconds::float8)
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
          AND ((l.classid::bigint << 32) | l.objid::bigint) = w.lock_key)
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM worker_liveness w USING dead WHERE w.client_id = dead.client_id RETURNING w.client_id
), rescued AS (
    UPDATE river_job j SET
        state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::river_job_state,
        scheduled_at = now(),
        finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
        errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt, 'trace', '',
            'error', 'its worker ' || gone.client_id || ' died (connection gone, no heartbeat); rescued'))
    FROM gone
    WHERE j.state = 'running' AND j.attempted_by[array_length(j.attempted_by, 1)] = gone.client_id
    RETURNING j.id, j.kind, gone.client_id, j.state = 'discarded' AS discarded
), deposed AS (
    DELETE FROM river_leader l USING gone WHERE l.leader_id = gone.client_id RETURNING l.leader_id
), announced AS (
    SELECT pg_notify(current_schema() || '.river_leadership',
        json_build_object('leader_id', leader_id, 'action', 'resigned')::text) FROM deposed
)
SELECT 'worker'::text AS what, client_id, 0::bigint AS id, ''::text AS kind, false AS discarded FROM gone
UNION ALL SELECT 'job', client_id, id, kind, discarded FROM rescued
UNION ALL SELECT 'leader', leader_id, (SELECT count(*) FROM announced), '', false FROM deposed;
