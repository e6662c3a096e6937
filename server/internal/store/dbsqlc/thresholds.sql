-- name: InsertWalletThreshold :one
INSERT INTO wallet_thresholds (chain_id, wallet, currency, amount, set_by, reason)
VALUES (@chain_id, @wallet, @currency, sqlc.narg(amount)::numeric, @set_by, @reason)
RETURNING *;

-- name: WalletThresholds :many
-- The thresholds in force: the newest row of each (chain, wallet, currency), unless it removed it.
SELECT * FROM (
    SELECT DISTINCT ON (chain_id, wallet, currency) * FROM wallet_thresholds ORDER BY chain_id, wallet, currency, id DESC
) t WHERE t.amount IS NOT NULL ORDER BY chain_id, wallet, currency;
