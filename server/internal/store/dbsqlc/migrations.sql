-- name: CountAppliedMigrations :one
SELECT count(*) FROM coffer_migrations;

-- name: LockMigrations :exec
-- Held by Migrate on its connection while it migrates, so concurrent replicas migrate once.
SELECT pg_advisory_lock(@lock_key::bigint);

-- name: UnlockMigrations :exec
SELECT pg_advisory_unlock(@lock_key::bigint);

-- name: RecordMigration :execrows
-- In the migration's own transaction, before it runs: no row when it was applied already.
INSERT INTO coffer_migrations (version, name) VALUES (@version, @name) ON CONFLICT DO NOTHING;
