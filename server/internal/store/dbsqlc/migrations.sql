-- name: CountAppliedMigrations :one
SELECT count(*) FROM coffer_migrations;
