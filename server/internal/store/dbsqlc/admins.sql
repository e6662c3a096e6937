-- name: InsertAdmin :one
INSERT INTO admins (id, email, password_hash, totp_sealed, operator_id)
VALUES (@id, @email, @password_hash, @totp_sealed, NULLIF(@operator_id::text, '')::uuid)
RETURNING id, email, password_hash, totp_sealed, operator_id, active, created_at, totp_last_step;

-- name: AdminByEmail :one
-- Case-insensitive, as the unique index.
SELECT id, email, password_hash, totp_sealed, operator_id, active, created_at, totp_last_step FROM admins
WHERE lower(email) = lower(@email);

-- name: AdminByID :one
SELECT id, email, password_hash, totp_sealed, operator_id, active, created_at, totp_last_step FROM admins
WHERE id = @id;

-- name: InsertAdminSession :one
INSERT INTO admin_sessions (digest, admin_id, expires_at) VALUES (@digest, @admin_id, now() + @ttl::interval)
RETURNING expires_at;

-- name: AdminBySessionDigest :one
-- The active admin of an unexpired session.
SELECT id, email, password_hash, totp_sealed, operator_id, active, created_at, totp_last_step FROM admins
WHERE active AND id = (SELECT admin_id FROM admin_sessions WHERE digest = @digest AND expires_at > now());

-- name: DeleteAdminSession :exec
DELETE FROM admin_sessions WHERE digest = @digest;

-- name: SetAdminActive :one
-- Disabling also deletes the login tokens of the admin, in the same statement; revoked counts them.
WITH revoked AS (DELETE FROM admin_sessions WHERE admin_id = @id AND NOT @active::bool RETURNING 1)
UPDATE admins SET active = @active::bool WHERE admins.id = @id
RETURNING sqlc.embed(admins), (SELECT count(*) FROM revoked)::bigint AS revoked;

-- name: DeleteAdminSessions :execrows
DELETE FROM admin_sessions WHERE admin_id = @admin_id;

-- name: UseTOTPStep :execrows
-- Matches nothing when this step or a later one was accepted already (a replay).
UPDATE admins SET totp_last_step = @step::bigint
WHERE id = @id AND (totp_last_step IS NULL OR totp_last_step < @step::bigint);

-- name: RememberLoginClient :exec
INSERT INTO admin_login_clients (admin_id, client) VALUES (@admin_id, @client)
ON CONFLICT (admin_id, client) DO UPDATE SET last_login_at = now();

-- name: LoginClientKnown :one
SELECT EXISTS (SELECT 1 FROM admin_login_clients c JOIN admins a ON a.id = c.admin_id
    WHERE lower(a.email) = lower(@email) AND c.client = @client AND c.last_login_at >= now() - @period::interval)::bool;

-- name: DeleteOldLoginClients :execrows
DELETE FROM admin_login_clients WHERE last_login_at < @before::timestamptz;

-- name: DeleteExpiredAdminSessions :execrows
DELETE FROM admin_sessions WHERE expires_at <= now();
