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

-- name: OpenSessionByKey :one
-- InsertSession for the operator owning an unexpired key with this digest, authenticated in
-- the same statement (one round trip on the hot path): no row when no such key, an operator
-- row without a session (created_at NULL) when the operator is inactive; nothing is written
-- in either case.
WITH op AS (
	SELECT operators.id, operators.active FROM operators WHERE operators.id = (
		SELECT operator_keys.operator_id FROM operator_keys
		WHERE operator_keys.digest = @digest AND (operator_keys.expires_at IS NULL OR operator_keys.expires_at > now()))
), inserted AS (
	INSERT INTO sessions (id, operator_id, kind, session_ref, external_user_id, lang, fiat_currency,
		user_balance, amount, email, operator_reference, expires_at)
	SELECT @id, op.id, @kind, @session_ref, @external_user_id, @lang, @fiat_currency,
		@user_balance, @amount, NULLIF(@email::text, ''), NULL, now() + @ttl::interval
	FROM op WHERE op.active
	RETURNING sessions.operator_id, sessions.kind, sessions.external_user_id, sessions.email, sessions.created_at, sessions.expires_at
), depositor AS (
	INSERT INTO depositors (operator_id, external_user_id, email)
	SELECT inserted.operator_id, inserted.external_user_id, inserted.email FROM inserted WHERE inserted.kind = 'DEPOSIT'
	ON CONFLICT (operator_id, external_user_id) DO NOTHING
)
SELECT op.id AS operator_id, inserted.created_at, inserted.expires_at FROM op LEFT JOIN inserted ON true;
