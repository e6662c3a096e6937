-- name: AnnounceKeyHolder :exec
INSERT INTO key_holders (process_id, host, pid, role, primary_key_id, key_ids)
VALUES (@process_id, @host, @pid, @role, @primary_key_id, @key_ids)
ON CONFLICT (process_id) DO UPDATE SET seen_at = now();

-- name: DeleteKeyHolder :exec
-- Also forgets holders gone for a day.
DELETE FROM key_holders WHERE process_id = @process_id OR seen_at < now() - interval '1 day';

-- name: LiveKeyHolders :many
SELECT process_id, host, pid, role, primary_key_id, key_ids, started_at, seen_at FROM key_holders
WHERE seen_at > now() - make_interval(secs => @within_secs::float8) ORDER BY host, pid;

-- name: MasterKeys :many
-- Newest first.
SELECT key_id, wrapped, created_at FROM master_keys ORDER BY created_at DESC, key_id;

-- name: MasterKeyIDs :many
-- Newest first.
SELECT key_id FROM master_keys ORDER BY created_at DESC, key_id;

-- name: CountMasterKeys :one
SELECT count(*) FROM master_keys;

-- name: LockMasterKeyCreation :exec
SELECT pg_advisory_xact_lock(@lock_key::bigint);

-- name: InsertMasterKey :exec
-- clock_timestamp: two keys created in one transaction still order.
INSERT INTO master_keys (key_id, wrapped, created_at) VALUES (@key_id, @wrapped, clock_timestamp());

-- name: DeleteMasterKeysExcept :many
DELETE FROM master_keys WHERE key_id <> @key_id RETURNING key_id;
