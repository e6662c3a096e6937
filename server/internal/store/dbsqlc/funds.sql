-- name: EnsureFunds :exec
INSERT INTO operator_funds (operator_id, chain_id, currency) VALUES (@operator_id, @chain_id, @currency) ON CONFLICT DO NOTHING;

-- name: ApplyFunds :one
-- No row when a debit would take the funds below zero and the entry may not overdraw.
UPDATE operator_funds SET available = available + @available_delta::numeric, reserved = reserved + @reserved_delta::numeric,
	updated_at = now()
WHERE operator_id = @operator_id AND chain_id = @chain_id AND currency = @currency
  AND (@overdraw::boolean OR @available_delta::numeric >= 0 OR available + @available_delta::numeric >= 0)
  AND reserved + @reserved_delta::numeric >= 0
RETURNING operator_id, chain_id, currency, available, reserved, updated_at;

-- name: InsertFundEntry :exec
INSERT INTO fund_entries (operator_id, chain_id, currency, kind, available_delta, reserved_delta, ref, actor, note)
VALUES (@operator_id, @chain_id, @currency, @kind, @available_delta, @reserved_delta, @ref, @actor, @note);

-- name: ReservedFor :one
SELECT coalesce(sum(reserved_delta), 0)::numeric AS reserved FROM fund_entries WHERE operator_id = @operator_id AND ref = @ref;

-- name: GetFunds :one
SELECT operator_id, chain_id, currency, available, reserved, updated_at FROM operator_funds
WHERE operator_id = @operator_id AND chain_id = @chain_id AND currency = @currency;

-- name: ListFunds :many
-- A NULL operator_ids matches every operator.
SELECT operator_id, chain_id, currency, available, reserved, updated_at FROM operator_funds
WHERE sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[])
ORDER BY operator_id, chain_id, currency;

-- name: FundTotals :many
-- Available sums only funds above zero; what operators below zero owe is the shortfall.
SELECT f.chain_id, f.currency, sum(greatest(f.available, 0))::numeric AS available, sum(f.reserved)::numeric AS reserved,
	(-sum(least(f.available, 0)))::numeric AS shortfall
FROM operator_funds f GROUP BY f.chain_id, f.currency ORDER BY f.chain_id, f.currency;

-- name: PayoutsInFlight :many
-- Every payout queued and not settled whose transaction is stored and may have paid (pending or
-- mined): its amount, the block it was recorded mined in (0 while pending), and the hashes of
-- its attempts that pay (not its cancels, which move nothing).
SELECT w.chain_id, w.currency, w.crypto_amount::numeric AS amount, t.state, coalesce(t.mined_block, 0)::bigint AS mined_block,
	coalesce(array_agg(a.hash ORDER BY a.id) FILTER (WHERE a.id IS NOT NULL AND NOT a.cancel), '{}')::text[] AS hashes
FROM withdrawals w
JOIN chain_txs t ON t.purpose = 'payout' AND t.ref = 'withdrawal:' || w.id::text AND t.state IN ('pending', 'mined')
LEFT JOIN chain_tx_attempts a ON a.tx_id = t.id
WHERE w.status <> 'COMPLETED' AND w.payout_queued_at IS NOT NULL
GROUP BY w.id, t.id ORDER BY w.chain_id, w.currency, w.id;

-- name: FundEntries :many
SELECT id, operator_id, chain_id, currency, kind, available_delta, reserved_delta, ref, actor, note, created_at FROM fund_entries
WHERE operator_id = @operator_id ORDER BY id DESC LIMIT @lim;

-- name: RecordedDecimals :one
-- The decimals an asset's deposits or withdrawals were recorded with (-1 when none was): how
-- its funds are read once the asset is no longer configured.
SELECT coalesce(
	(SELECT d.decimals FROM deposits d WHERE d.chain_id = @chain_id AND d.currency = @currency LIMIT 1),
	(SELECT w.decimals FROM withdrawals w WHERE w.chain_id = @chain_id AND w.currency = @currency LIMIT 1),
	-1)::int AS decimals;
