-- name: InsertWithdrawal :one
-- A withdrawal is returned with the handle of its session and operatorReference. created_at is
-- the time its WITHDRAW_REQUEST carried when it was sent before the record (mode A), else now.
INSERT INTO withdrawals (id, operator_id, session_id, external_user_id, type, approval_mode, status, chain_id,
    currency, contract_address, decimals, address, fiat_currency, fiat_amount, crypto_amount, expires_at,
    amount_in_usd, cap_amount, cap_currency, offramp_provider, offramp_ref, created_at)
VALUES (@id, @operator_id, @session_id, @external_user_id, @type, @approval_mode, @status, @chain_id,
    @currency, NULLIF(@contract_address::text, ''), @decimals, @address, @fiat_currency, @fiat_amount, @crypto_amount,
    @expires_at, @amount_in_usd, @cap_amount, NULLIF(@cap_currency::text, ''), NULLIF(@offramp_provider::text, ''),
    NULLIF(@offramp_ref::text, ''), coalesce(sqlc.narg(created_at)::timestamptz, now()))
RETURNING sqlc.embed(withdrawals),
    (SELECT session_ref FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS session_ref,
    (SELECT coalesce(operator_reference, '') FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS operator_reference;

-- name: LockWithdrawal :one
SELECT sqlc.embed(withdrawals),
    (SELECT session_ref FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS session_ref,
    (SELECT coalesce(operator_reference, '') FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS operator_reference
FROM withdrawals
WHERE withdrawals.id = @id
  AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR withdrawals.operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
FOR UPDATE;

-- name: GetWithdrawal :one
SELECT sqlc.embed(withdrawals),
    (SELECT session_ref FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS session_ref,
    (SELECT coalesce(operator_reference, '') FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS operator_reference
FROM withdrawals
WHERE withdrawals.id = @id
  AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR withdrawals.operator_id = ANY(sqlc.narg(operator_ids)::uuid[]));

-- name: ListWithdrawals :many
-- Empty statuses, external_user_id, a zero chain_id or nulls match everything; paging is strictly before
-- (before_time, before_id).
SELECT sqlc.embed(withdrawals),
    (SELECT session_ref FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS session_ref,
    (SELECT coalesce(operator_reference, '') FROM sessions WHERE sessions.id = withdrawals.session_id)::text AS operator_reference
FROM withdrawals
WHERE (sqlc.narg(operator_ids)::uuid[] IS NULL OR withdrawals.operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
  AND (coalesce(cardinality(sqlc.narg(statuses)::text[]), 0) = 0 OR withdrawals.status = ANY(sqlc.narg(statuses)::text[]))
  AND (@external_user_id::text = '' OR withdrawals.external_user_id = @external_user_id::text)
  AND (@chain_id::bigint = 0 OR withdrawals.chain_id = @chain_id::bigint)
  AND (sqlc.narg(created_after)::timestamptz IS NULL OR withdrawals.created_at >= sqlc.narg(created_after)::timestamptz)
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR withdrawals.created_at < sqlc.narg(created_before)::timestamptz)
  AND (sqlc.narg(before_time)::timestamptz IS NULL
       OR (withdrawals.created_at, withdrawals.id) < (sqlc.narg(before_time)::timestamptz, sqlc.narg(before_id)::uuid))
ORDER BY withdrawals.created_at DESC, withdrawals.id DESC
LIMIT @max_rows;

-- name: SetWithdrawalStatus :exec
-- Moves a withdrawal still in from_status to to_status and records the transition.
WITH w AS (
    UPDATE withdrawals SET status = @to_status, updated_at = now(),
        settlement_tx_hash = coalesce(NULLIF(@settlement_tx_hash::text, ''), settlement_tx_hash),
        completed_at = CASE WHEN @to_status = 'COMPLETED' THEN now() ELSE completed_at END,
        payout_queued_at = CASE WHEN @queue_payout::bool THEN now() WHEN @stop_payout::bool THEN NULL ELSE payout_queued_at END,
        held_reason = CASE WHEN @queue_payout::bool THEN NULL WHEN @stop_payout::bool THEN NULLIF(@held_reason::text, '') ELSE held_reason END,
        admin_note = coalesce(NULLIF(@admin_note::text, ''), admin_note)
    WHERE withdrawals.id = @id AND withdrawals.status = @from_status
    RETURNING withdrawals.id
)
INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
SELECT w.id, @from_status, @to_status, @action, @actor, @note FROM w;

-- name: HoldWithdrawal :exec
WITH w AS (
    UPDATE withdrawals SET held_reason = @held_reason::text, updated_at = now() WHERE withdrawals.id = @id RETURNING withdrawals.id
)
INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
SELECT w.id, @from_status, @to_status, @action, @actor, @note FROM w;

-- name: MoveSettlement :execrows
-- A completed withdrawal's settlement moves to the attempt the chain has now (its payout, sent
-- again after its block left the chain, was mined as another attempt at the same nonce), with
-- its audit row. The status does not change.
WITH w AS (
    UPDATE withdrawals SET settlement_tx_hash = @settlement_tx_hash::text, updated_at = now()
    WHERE withdrawals.id = @id AND withdrawals.status = 'COMPLETED'
      AND withdrawals.settlement_tx_hash IS DISTINCT FROM @settlement_tx_hash::text
    RETURNING withdrawals.id
)
INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
SELECT w.id, 'COMPLETED', 'COMPLETED', @action, @actor, @note FROM w;

-- name: LockOperatorCaps :one
SELECT id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at
FROM operators WHERE id = @id FOR NO KEY UPDATE;

-- name: LockOperatorShare :one
SELECT id, parent_id, name, webhook_url, approval_mode, approval_enabled, per_tx_cap, daily_cap, fiat_currency,
    redirect_url, theme_slug, deposit_fee_bps, active, created_at, updated_at
FROM operators WHERE id = @id FOR SHARE;

-- name: PaidSince :many
-- Per currency the cap amounts are in ('' for those recorded before it was), their sum and
-- their USD value.
SELECT coalesce(cap_currency, '')::text AS cap_currency, coalesce(sum(cap_amount), 0)::numeric AS cap_amount,
    coalesce(sum(amount_in_usd), 0)::numeric AS amount_in_usd
FROM withdrawals
WHERE operator_id = @operator_id AND payout_queued_at IS NOT NULL AND payout_queued_at > @since::timestamptz
GROUP BY cap_currency ORDER BY cap_currency;

-- name: LockPayoutLiquidity :exec
SELECT pg_advisory_xact_lock(hashtext('coffer payout liquidity'), @chain_id::int);

-- name: UnminedPayouts :one
-- The payouts that may still leave the hot wallet: queued and not mined, a completed
-- withdrawal's included when its payout is pending again (its block left the chain: it is
-- being sent again).
SELECT coalesce(sum(w.crypto_amount), 0)::numeric FROM withdrawals w
WHERE w.chain_id = @chain_id AND w.currency = @currency AND w.payout_queued_at IS NOT NULL
  AND (w.status <> 'COMPLETED' OR EXISTS (SELECT 1 FROM chain_txs t WHERE t.purpose = @purpose
                                          AND t.ref = 'withdrawal:' || w.id::text AND t.state = 'pending'))
  AND NOT EXISTS (SELECT 1 FROM chain_txs t WHERE t.purpose = @purpose AND t.ref = 'withdrawal:' || w.id::text
                  AND t.state <> 'pending');

-- name: OpenWithdrawalsOfSession :many
SELECT id FROM withdrawals WHERE session_id = @session_id
  AND status IN ('PENDING', 'AWAITING_APPROVAL') AND payout_queued_at IS NULL ORDER BY created_at;

-- name: DueWithdrawals :many
-- expired is false for a withdrawal due because its session was cancelled. Only an unactioned
-- withdrawal expires: one whose payout was queued once (approved) and since stopped or
-- abandoned (the actions payout:stopped and payout:abandoned of withdrawal/transitions.go) is
-- open again but was actioned.
SELECT w.id, due.lapsed AS expired FROM withdrawals w JOIN sessions s ON s.id = w.session_id,
    LATERAL (SELECT (w.expires_at <= @now::timestamptz AND NOT EXISTS (SELECT 1 FROM withdrawal_transitions t
        WHERE t.withdrawal_id = w.id AND t.action IN ('payout:stopped', 'payout:abandoned')))::bool AS lapsed) due
WHERE w.status IN ('PENDING', 'AWAITING_APPROVAL') AND w.payout_queued_at IS NULL
  AND (due.lapsed OR s.cancelled_at IS NOT NULL)
ORDER BY w.expires_at LIMIT @max_rows;

-- name: WithdrawalWasApproved :one
-- Whether a withdrawal's payout was queued once and since stopped or abandoned (see
-- DueWithdrawals): it was approved, and its TTL no longer applies.
SELECT EXISTS (SELECT 1 FROM withdrawal_transitions WHERE withdrawal_id = @withdrawal_id
    AND action IN ('payout:stopped', 'payout:abandoned'))::bool;

-- name: PayingWithdrawals :many
SELECT id FROM withdrawals WHERE payout_queued_at IS NOT NULL AND status <> 'COMPLETED' ORDER BY payout_queued_at;

-- name: CompletedWithdrawalsPayingAgain :many
-- Completed withdrawals whose payout transaction is pending again: its block left the chain
-- after the withdrawal completed, and its stored bytes are being sent again.
SELECT w.id FROM withdrawals w JOIN chain_txs t ON t.purpose = @purpose AND t.ref = 'withdrawal:' || w.id::text
WHERE w.status = 'COMPLETED' AND t.state = 'pending' ORDER BY t.chain_id, t.nonce;

-- name: LockSession :exec
SELECT 1 FROM sessions WHERE id = @id FOR UPDATE;

-- name: WithdrawalTransitions :many
SELECT id, withdrawal_id, from_status, to_status, action, actor, note, at FROM withdrawal_transitions
WHERE withdrawal_id = @withdrawal_id ORDER BY id;
