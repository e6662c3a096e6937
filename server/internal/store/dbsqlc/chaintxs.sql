-- name: EnsureNonce :exec
INSERT INTO chain_nonces (chain_id, address, next_nonce) VALUES (@chain_id, @address, @next_nonce) ON CONFLICT DO NOTHING;

-- name: AllocateNonce :one
-- The row stays locked until the transaction ends: allocations of one address are serialised.
UPDATE chain_nonces SET next_nonce = next_nonce + 1 WHERE chain_id = @chain_id AND address = @address
RETURNING (next_nonce - 1)::bigint AS nonce;

-- name: InsertChainTx :one
-- The transaction and its first attempt, in one statement.
WITH tx AS (
	INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref, pays_own_gas, authorizations)
	VALUES (@chain_id, @from_address, @nonce, @to_address, @value, @data, @gas_limit, @purpose, @ref, @pays_own_gas, @authorizations) RETURNING id
), attempt AS (
	INSERT INTO chain_tx_attempts (tx_id, hash, raw, gas_tip_cap, gas_fee_cap, value)
	SELECT tx.id, @hash, @raw, @gas_tip_cap, @gas_fee_cap, @value FROM tx
) SELECT tx.id FROM tx;

-- name: InsertTxAttempt :exec
INSERT INTO chain_tx_attempts (tx_id, hash, raw, gas_tip_cap, gas_fee_cap, value, cancel)
VALUES (@tx_id, @hash, @raw, @gas_tip_cap, @gas_fee_cap, @value, @cancel);

-- name: MarkBroadcast :exec
UPDATE chain_tx_attempts SET broadcast_at = now() WHERE id = @id;

-- name: MarkMined :exec
-- The transaction's value becomes the mined attempt's. A service-team request not carried out
-- yet is void: nothing replaces a mined transaction.
UPDATE chain_txs SET state = @state, mined_hash = @mined_hash::text, mined_block = @mined_block::bigint, gas_used = @gas_used::bigint,
	effective_gas_price = @effective_gas_price::numeric, mined_at = now(), requested_action = NULL,
	value = coalesce((SELECT chain_tx_attempts.value FROM chain_tx_attempts
		WHERE chain_tx_attempts.tx_id = @id AND chain_tx_attempts.hash = @mined_hash::text), chain_txs.value)
WHERE chain_txs.id = @id AND chain_txs.state = 'pending';

-- name: MoveMinedBlock :execrows
-- The block a mined transaction is in now, read on the chain: a node that mined it again after
-- a reorg may have put it higher (or lower) than the block first recorded.
UPDATE chain_txs SET mined_block = @mined_block::bigint
WHERE id = @id AND state = 'mined' AND mined_hash = @mined_hash::text;

-- name: GetChainTx :one
SELECT id, chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref, state, mined_hash, mined_block,
	gas_used, effective_gas_price, created_at, mined_at, pays_own_gas, requested_action, authorizations
FROM chain_txs WHERE id = @id;

-- name: ChainTxByRef :one
SELECT id, chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref, state, mined_hash, mined_block,
	gas_used, effective_gas_price, created_at, mined_at, pays_own_gas, requested_action, authorizations
FROM chain_txs WHERE purpose = @purpose AND ref = @ref;

-- name: ChainTxAttempts :many
SELECT id, tx_id, hash, raw, gas_tip_cap, gas_fee_cap, created_at, broadcast_at, value, cancel FROM chain_tx_attempts
WHERE tx_id = @tx_id ORDER BY id;

-- name: ChainTxIDsByRefPrefix :many
SELECT id FROM chain_txs WHERE purpose = @purpose AND starts_with(ref, @prefix) ORDER BY id;

-- name: LockChainTxState :one
-- Locks the transaction's row until the caller's transaction ends.
SELECT state, coalesce(mined_hash, '')::text AS mined_hash FROM chain_txs WHERE id = @id FOR UPDATE;

-- name: ReopenChainTx :one
-- Back to pending, attempts not broadcast: the next advance sends the stored bytes again. Only
-- from the state and mined hash the caller read (a row changed meanwhile, failed or mined again
-- as another attempt, is left alone): reopened is false then.
WITH t AS (
	UPDATE chain_txs SET state = 'pending', mined_hash = NULL, mined_block = NULL, gas_used = NULL,
		effective_gas_price = NULL, mined_at = NULL
	WHERE chain_txs.id = @id AND chain_txs.state = @from_state
		AND coalesce(chain_txs.mined_hash, '') = @mined_hash::text RETURNING chain_txs.id
), a AS (
	UPDATE chain_tx_attempts SET broadcast_at = NULL WHERE tx_id IN (SELECT t.id FROM t)
)
SELECT count(*) > 0 AS reopened FROM t;

-- name: RequestTxAction :execrows
-- A re-send or cancel for the worker, on a pending transaction only.
UPDATE chain_txs SET requested_action = @action::text WHERE id = @id AND state = 'pending';

-- name: ClearTxAction :exec
-- The worker carried out the request it read (a newer one stays).
UPDATE chain_txs SET requested_action = NULL WHERE id = @id AND requested_action = @action::text;

-- name: InsertTxAction :exec
INSERT INTO chain_tx_actions (tx_id, action, actor, reason) VALUES (@tx_id, @action, @actor, @reason);

-- name: TxActions :many
SELECT action, actor, reason, created_at FROM chain_tx_actions WHERE tx_id = @tx_id ORDER BY id;

-- name: ResolveChainTx :execrows
-- A cancelled or failed transaction leaves its ref: the (purpose, ref) it held may be used by
-- a new transaction (a withdrawal decided again). Only from the state the caller read.
UPDATE chain_txs SET state = @to_state, ref = ref || ':resolved:' || id::text, requested_action = NULL
WHERE id = @id AND state = @from_state;

-- name: ListChainTxIDs :many
-- Transactions newest first; with stuck_before set, only those needing an engineer: pending
-- since before it, or a reverted or cancelled payout whose withdrawal still waits on it.
SELECT id FROM chain_txs
WHERE NOT @stuck::boolean
   OR (state = 'pending' AND created_at < @stuck_before::timestamptz)
   OR (state IN ('reverted', 'cancelled') AND purpose = 'payout' AND ref NOT LIKE '%:resolved:%')
ORDER BY id DESC LIMIT @max_rows;

-- name: GapChainTxIDs :many
-- A sender's transactions below a nonce that may hold a gap before it (deposit.cancelGapBefore),
-- lowest nonce first: pending ones, ones mined in the books at or above the chain's nonce
-- (from_nonce: not on the chain), and mined cancels not yet retired.
SELECT id FROM chain_txs WHERE chain_id = @chain_id AND from_address = @from_address AND nonce < @to_nonce
	AND (state = 'pending' OR (state = 'mined' AND nonce >= @from_nonce)
		OR (state = 'cancelled' AND ref NOT LIKE '%:resolved:%'))
ORDER BY nonce;

-- name: MinedTxIDsFromNonce :many
-- A sender's transactions of a purpose mined in the books (an attempt, reverted or not, or
-- their cancel, retired or not) at or above the sender's nonce on the chain: the chain's nonce
-- is not past them, so they are on no chain now (or the node answering is behind, or one was
-- mined after the nonce was read: the caller checks each receipt).
SELECT id FROM chain_txs WHERE chain_id = @chain_id AND from_address = @from_address AND nonce >= @from_nonce
	AND state IN ('mined', 'reverted', 'cancelled') AND purpose = @purpose
ORDER BY nonce;

-- name: FailedTxIDsFromNonce :many
-- A sender's transactions of a purpose marked failed at or above the sender's nonce on the
-- chain: the nonce that proved them never mined (used at depth by another transaction, or by
-- their own reverted attempt) is free again (a reorg deeper than the depth), so their own signed
-- bytes could be mined (or the node answering is behind: the caller checks).
SELECT id FROM chain_txs WHERE chain_id = @chain_id AND from_address = @from_address AND nonce >= @from_nonce
	AND state = 'failed' AND purpose = @purpose
ORDER BY nonce;

-- name: ReopenFailedToCancel :execrows
-- A failed transaction whose nonce is free again back to pending with a cancel requested (the
-- next advance replaces its bytes with a 0-value self-send at its nonce), with its audit row.
-- Its ref stays resolved. Only from failed.
WITH t AS (
	UPDATE chain_txs SET state = 'pending', requested_action = 'cancel', mined_hash = NULL, mined_block = NULL,
		gas_used = NULL, effective_gas_price = NULL, mined_at = NULL
	WHERE chain_txs.id = @id AND chain_txs.state = 'failed' RETURNING chain_txs.id
)
INSERT INTO chain_tx_actions (tx_id, action, actor, reason) SELECT t.id, 'cancel', @actor, @reason FROM t;

-- name: ResolvedPendingTxIDs :many
-- Transactions of a purpose pending again after they were resolved (a retired cancel whose
-- block left the chain): no job of their purpose follows them any more.
SELECT id FROM chain_txs WHERE purpose = @purpose AND state = 'pending' AND ref LIKE '%:resolved:%' ORDER BY chain_id, nonce;
