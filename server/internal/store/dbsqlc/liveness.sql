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
