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

-- The sealed columns (custody/sealed.go lists them; a test checks that every bytea column named
-- *sealed is there). For each: its values counted per master key, up to 100 values not sealed
-- under the key whose sealed header is @header (in key order), and the compare-and-swap that
-- stores a value re-sealed (no row: it changed meanwhile).

-- name: SealedKeysWalletSeed :many
SELECT coffer_sealed_key_id(sealed)::text AS key_id, count(*) AS n FROM wallet_seed WHERE sealed IS NOT NULL GROUP BY 1;

-- name: NotUnderWalletSeed :many
SELECT id::text AS pk, ''::text AS arg, sealed::bytea AS sealed FROM wallet_seed
WHERE sealed IS NOT NULL AND substring(sealed from 1 for 9) <> @header::bytea ORDER BY id LIMIT 100;

-- name: ResealWalletSeed :execrows
UPDATE wallet_seed SET sealed = @resealed::bytea WHERE id = (@pk::text)::boolean AND sealed = @sealed::bytea;

-- name: SealedKeysWalletPublic :many
SELECT coffer_sealed_key_id(public_sealed)::text AS key_id, count(*) AS n FROM wallet_seed
WHERE public_sealed IS NOT NULL GROUP BY 1;

-- name: NotUnderWalletPublic :many
SELECT id::text AS pk, ''::text AS arg, public_sealed::bytea AS sealed FROM wallet_seed
WHERE public_sealed IS NOT NULL AND substring(public_sealed from 1 for 9) <> @header::bytea ORDER BY id LIMIT 100;

-- name: ResealWalletPublic :execrows
UPDATE wallet_seed SET public_sealed = @resealed::bytea WHERE id = (@pk::text)::boolean AND public_sealed = @sealed::bytea;

-- name: SealedKeysOperatorKeys :many
SELECT coffer_sealed_key_id(sealed)::text AS key_id, count(*) AS n FROM operator_keys WHERE sealed IS NOT NULL GROUP BY 1;

-- name: NotUnderOperatorKeys :many
SELECT id::text AS pk, operator_id::text AS arg, sealed::bytea AS sealed FROM operator_keys
WHERE sealed IS NOT NULL AND substring(sealed from 1 for 9) <> @header::bytea ORDER BY id LIMIT 100;

-- name: ResealOperatorKeys :execrows
UPDATE operator_keys SET sealed = @resealed::bytea WHERE id = (@pk::text)::bigint AND sealed = @sealed::bytea;

-- name: SealedKeysAdminTOTP :many
SELECT coffer_sealed_key_id(totp_sealed)::text AS key_id, count(*) AS n FROM admins WHERE totp_sealed IS NOT NULL GROUP BY 1;

-- name: NotUnderAdminTOTP :many
SELECT id::text AS pk, id::text AS arg, totp_sealed::bytea AS sealed FROM admins
WHERE totp_sealed IS NOT NULL AND substring(totp_sealed from 1 for 9) <> @header::bytea ORDER BY id LIMIT 100;

-- name: ResealAdminTOTP :execrows
UPDATE admins SET totp_sealed = @resealed::bytea WHERE id = (@pk::text)::uuid AND totp_sealed = @sealed::bytea;
