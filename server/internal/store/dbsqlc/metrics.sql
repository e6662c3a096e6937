-- name: CountOpenDeposits :many
-- The open deposits (deposits_open_idx) by status, chain and currency: read on every scrape.
SELECT status, chain_id, currency, count(*) AS n FROM deposits
WHERE status IN ('CONFIRMING', 'SWEEPING') GROUP BY 1, 2, 3;

-- name: CountDeposits :many
-- Every deposit by status, chain and currency: reads the whole table, so the collector runs it
-- only when the open ones moved or a while passed.
SELECT status, chain_id, currency, count(*) AS n FROM deposits GROUP BY 1, 2, 3;

-- name: ChainCursorLags :many
-- Each chain's head, last scanned block and seconds since the scanner last recorded them.
SELECT chain_id, head_block, (next_block - 1)::bigint AS scanned_block,
    extract(epoch FROM now() - updated_at)::float8 AS age_seconds
FROM chain_cursors;

-- name: PendingChainTxsBySender :many
-- Signed transactions not mined yet (chain_txs_pending_idx), per chain and sender, with the
-- age of the oldest.
SELECT chain_id, from_address, count(*) AS n, extract(epoch FROM now() - min(created_at))::float8 AS oldest_age_seconds
FROM chain_txs WHERE state = 'pending' GROUP BY 1, 2;

-- name: CountDeadWebhooks :one
SELECT count(*) FROM webhook_events WHERE dead_at IS NOT NULL;

-- name: DueWebhookBacklog :one
-- Outbox webhooks due now and how long the oldest has waited past its due time (0 for none).
SELECT count(*) AS n, COALESCE(extract(epoch FROM now() - min(next_attempt_at))::float8, 0)::float8 AS oldest_age_seconds
FROM webhook_queue WHERE next_attempt_at <= now();
