-- name: InsertSession :one
-- Registers the depositor of a deposit session on the way.
WITH inserted AS (
	INSERT INTO sessions (id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency,
		user_balance, amount, email, operator_reference, expires_at)
	VALUES (@id, @operator_id, @kind, @session_ref, @external_user_id, @lang, @fiat_currency,
		@user_balance, @amount, NULLIF(@email::text, ''), NULLIF(@operator_reference::text, ''), now() + @ttl::interval)
	RETURNING sessions.operator_id, sessions.kind, sessions.external_user_id, sessions.email, sessions.created_at, sessions.expires_at
), depositor AS (
	INSERT INTO depositors (operator_id, external_user_id, email)
	SELECT inserted.operator_id, inserted.external_user_id, inserted.email FROM inserted WHERE inserted.kind = 'DEPOSIT'
	ON CONFLICT (operator_id, external_user_id) DO NOTHING
)
SELECT inserted.created_at, inserted.expires_at FROM inserted;

-- name: SessionByID :one
SELECT id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency, user_balance, amount, email,
	operator_reference, created_at, expires_at, cancelled_at, submitting_until
FROM sessions WHERE id = @id;

-- name: SessionsByIDs :many
SELECT id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency, user_balance, amount, email,
	operator_reference, created_at, expires_at, cancelled_at, submitting_until
FROM sessions WHERE id = ANY(@ids::uuid[]);

-- name: SessionForOperators :one
SELECT id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency, user_balance, amount, email,
	operator_reference, created_at, expires_at, cancelled_at, submitting_until
FROM sessions WHERE id = @id AND operator_id = ANY(@operator_ids::uuid[]);

-- name: CancelSession :one
UPDATE sessions SET cancelled_at = COALESCE(cancelled_at, now())
WHERE id = @id AND expires_at > now()
RETURNING id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency, user_balance, amount, email,
	operator_reference, created_at, expires_at, cancelled_at, submitting_until;
