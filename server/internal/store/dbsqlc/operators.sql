-- name: InsertOperator :one
-- Absent (NULL) settings take the column defaults; an empty string clears the optional ones.
INSERT INTO operators (id, name, webhook_url, parent_id, approval_mode, approval_enabled, per_tx_cap,
    daily_cap, fiat_currency, redirect_url, theme_slug, deposit_fee_bps, active)
VALUES (@id, sqlc.narg(name)::text, sqlc.narg(webhook_url)::text, NULLIF(sqlc.narg(parent_id)::text, '')::uuid,
    COALESCE(sqlc.narg(approval_mode)::text, 'SYNC'), COALESCE(sqlc.narg(approval_enabled)::bool, false),
    NULLIF(sqlc.narg(per_tx_cap)::text, '')::numeric, NULLIF(sqlc.narg(daily_cap)::text, '')::numeric,
    COALESCE(sqlc.narg(fiat_currency)::text, 'USD'), NULLIF(sqlc.narg(redirect_url)::text, ''),
    NULLIF(sqlc.narg(theme_slug)::text, ''), COALESCE(sqlc.narg(deposit_fee_bps)::int, 0),
    COALESCE(sqlc.narg(active)::bool, true))
RETURNING id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at;

-- name: UpdateOperator :one
-- Applies the non-NULL settings; an empty string clears the optional ones.
UPDATE operators SET
    name = COALESCE(sqlc.narg(name)::text, name),
    webhook_url = COALESCE(sqlc.narg(webhook_url)::text, webhook_url),
    parent_id = CASE WHEN sqlc.narg(parent_id)::text IS NULL THEN parent_id ELSE NULLIF(sqlc.narg(parent_id)::text, '')::uuid END,
    approval_mode = COALESCE(sqlc.narg(approval_mode)::text, approval_mode),
    approval_enabled = COALESCE(sqlc.narg(approval_enabled)::bool, approval_enabled),
    per_tx_cap = CASE WHEN sqlc.narg(per_tx_cap)::text IS NULL THEN per_tx_cap ELSE NULLIF(sqlc.narg(per_tx_cap)::text, '')::numeric END,
    daily_cap = CASE WHEN sqlc.narg(daily_cap)::text IS NULL THEN daily_cap ELSE NULLIF(sqlc.narg(daily_cap)::text, '')::numeric END,
    fiat_currency = COALESCE(sqlc.narg(fiat_currency)::text, fiat_currency),
    redirect_url = CASE WHEN sqlc.narg(redirect_url)::text IS NULL THEN redirect_url ELSE NULLIF(sqlc.narg(redirect_url)::text, '') END,
    theme_slug = CASE WHEN sqlc.narg(theme_slug)::text IS NULL THEN theme_slug ELSE NULLIF(sqlc.narg(theme_slug)::text, '') END,
    deposit_fee_bps = COALESCE(sqlc.narg(deposit_fee_bps)::int, deposit_fee_bps),
    active = COALESCE(sqlc.narg(active)::bool, active),
    updated_at = now()
WHERE id = @id
RETURNING id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at;

-- name: GetOperator :one
SELECT id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at
FROM operators WHERE id = @id;

-- name: ListOperators :many
-- Every operator, or the direct children of parent_id when it is not empty.
SELECT id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at
FROM operators WHERE @parent_id::text = '' OR parent_id = NULLIF(@parent_id::text, '')::uuid
ORDER BY created_at, id;

-- name: OperatorTree :many
-- root and every operator below it, transitively.
WITH RECURSIVE tree AS (
    SELECT operators.id FROM operators WHERE operators.id = @root
    UNION SELECT o.id FROM operators o JOIN tree t ON o.parent_id = t.id
) SELECT tree.id::text FROM tree;

-- name: InsertOperatorKey :exec
INSERT INTO operator_keys (operator_id, digest, sealed, prefix) VALUES (@operator_id, @digest, @sealed, @prefix);

-- name: ExpireCurrentKeys :one
-- Starts the grace period of the current keys of the operator; returns the expiry it set.
WITH upd AS (
    UPDATE operator_keys SET expires_at = now() + @grace::interval
    WHERE operator_id = @operator_id AND (expires_at IS NULL OR expires_at > now() + @grace::interval)
) SELECT (now() + @grace::interval)::timestamptz;

-- name: ValidOperatorKeys :many
SELECT id, operator_id, digest, sealed, prefix, created_at, expires_at FROM operator_keys
WHERE operator_id = @operator_id AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC, id DESC;

-- name: OperatorByKeyDigest :one
-- The operator owning an unexpired key with this digest.
SELECT id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at
FROM operators WHERE id = (
    SELECT operator_id FROM operator_keys WHERE digest = @digest AND (expires_at IS NULL OR expires_at > now()));
