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
	coalesce((SELECT sum(w.crypto_amount) FROM withdrawals w JOIN chain_txs t
		ON t.purpose = 'payout' AND t.ref = 'withdrawal:' || w.id::text AND t.state = 'mined'
		WHERE w.chain_id = f.chain_id AND w.currency = f.currency AND w.status <> 'COMPLETED'
		  AND w.payout_queued_at IS NOT NULL), 0)::numeric AS paid_out,
	(-sum(least(f.available, 0)))::numeric AS shortfall
FROM operator_funds f GROUP BY f.chain_id, f.currency ORDER BY f.chain_id, f.currency;

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
