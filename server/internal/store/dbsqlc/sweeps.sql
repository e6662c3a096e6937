-- name: LockAddress :exec
-- Serialises the sweep planning of one deposit address until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('coffer sweep ' || @chain_id::bigint || ' ' || @address::text));

-- name: OpenSweep :one
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at FROM sweeps
WHERE chain_id = @chain_id AND address = @address AND status <> 'DONE';

-- name: LockSweep :one
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at FROM sweeps WHERE id = @id FOR UPDATE;

-- name: InsertSweep :one
INSERT INTO sweeps (chain_id, address) VALUES (@chain_id, @address)
RETURNING id, chain_id, address, status, created_at, sent_at, mined_at, done_at;

-- name: AttachSweepDeposits :exec
UPDATE deposits SET sweep_id = @sweep_id::bigint, status = 'SWEEPING'
WHERE id = ANY(@deposit_ids::bigint[]) AND sweep_id IS NULL AND status IN ('SWEEPING', 'BELOW_MINIMUM');

-- name: SetSweepStatus :exec
UPDATE sweeps SET status = @status,
	sent_at = CASE WHEN @status = 'SENDING' THEN now() ELSE sent_at END,
	done_at = CASE WHEN @status = 'DONE' THEN now() ELSE done_at END
WHERE id = @id;

-- name: MarkSweepMined :one
UPDATE sweeps SET mined_at = coalesce(mined_at, now()) WHERE id = @id RETURNING mined_at;

-- name: UnsweptDeposits :many
SELECT sqlc.embed(deposits),
	COALESCE((SELECT chain_txs.mined_hash FROM chain_txs WHERE chain_txs.purpose = 'sweep'
		AND chain_txs.ref IN ('deposit:' || deposits.id, 'sweep:' || deposits.sweep_id || ':' || deposits.currency)), '')::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE deposits.chain_id = @chain_id AND deposits.address = @address AND deposits.sweep_id IS NULL
  AND deposits.status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM') ORDER BY deposits.id;

-- name: SweepDeposits :many
SELECT sqlc.embed(deposits),
	COALESCE((SELECT chain_txs.mined_hash FROM chain_txs WHERE chain_txs.purpose = 'sweep'
		AND chain_txs.ref IN ('deposit:' || deposits.id, 'sweep:' || deposits.sweep_id || ':' || deposits.currency)), '')::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits WHERE deposits.sweep_id = @sweep_id::bigint ORDER BY deposits.id;

-- name: MarkBelowMinimum :exec
UPDATE deposits SET status = 'BELOW_MINIMUM' WHERE id = ANY(@ids::bigint[]) AND status = 'SWEEPING' AND sweep_id IS NULL;

-- name: UnsweptNative :one
-- Native currency at an address of deposits no mined sweep has moved, other than those of except_sweep.
SELECT coalesce(sum(gross_amount), 0)::numeric FROM deposits
WHERE chain_id = @chain_id AND address = @address AND contract_address IS NULL
  AND status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM') AND sweep_id IS DISTINCT FROM @except_sweep::bigint;

-- name: PendingTopUps :many
SELECT id FROM chain_txs WHERE chain_id = @chain_id AND to_address = @to_address AND purpose = @purpose AND state = 'pending'
ORDER BY id;

-- name: CountChainTxs :one
SELECT count(*) FROM chain_txs WHERE purpose = @purpose AND starts_with(ref, @prefix);
