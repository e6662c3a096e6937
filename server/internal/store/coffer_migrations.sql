-- The applied Coffer migrations: created by Migrate before it applies any (so not itself a
-- migration), and read by sqlc beside the migrations for the statements about them.
CREATE TABLE IF NOT EXISTS coffer_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
