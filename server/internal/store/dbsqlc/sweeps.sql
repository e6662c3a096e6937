-- name: LockAddress :exec
-- Serialises the sweep planning of one deposit address until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('coffer sweep ' || @chain_id::bigint || ' ' || @address::text));

-- name: OpenSweep :one
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps
WHERE chain_id = @chain_id AND address = @address AND status <> 'DONE';

-- name: LockSweep :one
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps WHERE id = @id FOR UPDATE;

-- name: InsertSweep :one
INSERT INTO sweeps (chain_id, address, batched) VALUES (@chain_id, @address, @batched)
RETURNING id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after;

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
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE deposits.chain_id = @chain_id AND deposits.address = @address AND deposits.sweep_id IS NULL
  AND deposits.status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM') ORDER BY deposits.id;

-- name: SweepDeposits :many
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
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

-- name: LastTopUpID :one
-- The newest gas top-up to an address in any state (0: none), to tell whether one was stored
-- since a caller read the address's balance.
SELECT coalesce(max(id), 0)::bigint FROM chain_txs WHERE chain_id = @chain_id AND to_address = @to_address AND purpose = @purpose;

-- name: MinedTopUpIDs :many
-- The newest mined gas top-ups to an address, newest first.
SELECT id FROM chain_txs WHERE chain_id = @chain_id AND to_address = @to_address AND purpose = @purpose AND state = 'mined'
ORDER BY id DESC LIMIT @max_rows;

-- name: CountChainTxs :one
SELECT count(*) FROM chain_txs WHERE purpose = @purpose AND starts_with(ref, @prefix);

-- name: LockBatchChain :exec
-- Serialises the forming of a chain's batches until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('coffer sweep batch ' || @chain_id::bigint));

-- name: OpenSweepBatches :many
SELECT id, chain_id, status, created_at, done_at FROM sweep_batches WHERE chain_id = @chain_id AND status = 'SENDING' ORDER BY id;

-- name: LockSweepBatch :one
SELECT id, chain_id, status, created_at, done_at FROM sweep_batches WHERE id = @id FOR UPDATE;

-- name: InsertSweepBatch :one
INSERT INTO sweep_batches (chain_id) VALUES (@chain_id) RETURNING id, chain_id, status, created_at, done_at;

-- name: SetSweepBatchStatus :exec
UPDATE sweep_batches SET status = @status, done_at = CASE WHEN @status = 'DONE' THEN now() ELSE done_at END WHERE id = @id;

-- name: DueBatchSweeps :many
-- A chain's batched sweeps waiting for a batch, oldest first, but those a reorg holds (a deposit
-- of theirs left the chain: nothing is signed for them until it is resolved) and those skipped
-- too often, until their backoff ends (batch_after, migration 0024).
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps
WHERE sweeps.chain_id = @chain_id AND sweeps.batched AND sweeps.status = 'FUNDING' AND sweeps.batch_id IS NULL
  AND (sweeps.batch_after IS NULL OR sweeps.batch_after <= now())
  AND NOT EXISTS (SELECT 1 FROM deposits d JOIN deposit_reorgs r ON r.deposit_id = d.id
	WHERE d.sweep_id = sweeps.id AND r.resolution IS NULL)
ORDER BY sweeps.id LIMIT @lim;

-- name: JoinBatch :execrows
-- A waiting sweep enters a batch: its transfer is now that batch's transaction (FUNDING → SENDING).
UPDATE sweeps SET batch_id = @batch_id::bigint, status = 'SENDING', sent_at = now()
WHERE id = @id AND batched AND status = 'FUNDING' AND batch_id IS NULL;

-- name: BatchSweeps :many
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps
WHERE batch_id = @batch_id::bigint ORDER BY id;

-- name: LeaveBatch :exec
-- The batch skipped the sweep (or never ran it): it waits for the next one (SENDING → FUNDING),
-- after a backoff from its fourth skip on (5 s, doubling, at most 10 minutes; migration 0024).
UPDATE sweeps SET batch_id = NULL, status = 'FUNDING', sent_at = NULL, skips = skips + 1,
    batch_after = CASE WHEN skips + 1 > 3
        THEN now() + least(interval '5 seconds' * power(2, least(skips + 1 - 4, 20)), interval '10 minutes') END
WHERE id = @id AND batch_id = @batch_id::bigint AND status = 'SENDING' AND mined_at IS NULL;

-- name: AddressBatched :one
-- Whether an address has had a batched sweep (deposit.batched: it may be delegated).
SELECT EXISTS (SELECT 1 FROM sweeps WHERE chain_id = @chain_id AND address = @address AND batched) AS batched;

-- name: DueTokenAddresses :many
-- A chain's token-deposit addresses holding confirmed deposits no sweep has taken yet: the
-- sweeps a batch opens before it forms, so deposits confirmed together go together.
SELECT DISTINCT deposits.address FROM deposits JOIN token_addresses ON token_addresses.address = deposits.address
WHERE deposits.chain_id = @chain_id AND deposits.sweep_id IS NULL AND deposits.status = 'SWEEPING'
ORDER BY deposits.address LIMIT @lim;

-- name: ListSweepBatches :many
-- Batches newest first, each with its transaction (stored in the transaction that inserts the
-- batch, so every batch has one): what ListSweepBatches shows an engineer.
SELECT b.id, b.chain_id, b.status, b.created_at, b.done_at,
    t.id AS tx_id, t.state AS tx_state, COALESCE(t.mined_hash, '')::text AS tx_mined_hash,
    COALESCE(t.mined_block, 0)::bigint AS tx_mined_block, t.data AS tx_data, t.authorizations AS tx_authorizations
FROM sweep_batches b
JOIN chain_txs t ON t.purpose = 'sweep-batch' AND t.ref = 'batch:' || b.id
WHERE (@chain_id::bigint = 0 OR b.chain_id = @chain_id::bigint) AND (NOT @open::boolean OR b.status = 'SENDING')
ORDER BY b.id DESC
LIMIT @lim;

-- name: SweepsInBatches :many
-- The sweeps the batches hold now (those they skipped left them).
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps
WHERE batch_id = ANY(@batch_ids::bigint[]) ORDER BY id;

-- name: SkippedSweepsOfAddresses :many
-- Every sweep a batch skipped (skips > 0: sweeps_skipped_idx) of these addresses of a chain,
-- oldest first: where the sweeps a batch skipped are now.
SELECT id, chain_id, address, status, created_at, sent_at, mined_at, done_at, batched, batch_id, skips, batch_after FROM sweeps
WHERE chain_id = @chain_id AND skips > 0 AND address = ANY(@addresses::text[]) ORDER BY id;

-- name: DepositIDsOfSweeps :many
SELECT id, sweep_id FROM deposits WHERE sweep_id = ANY(@sweep_ids::bigint[]) ORDER BY id;

-- name: FixDepositFees :exec
-- Fixes the deposit fee of each deposit (the arrays are parallel) the first time a
-- transaction sweeping it is signed, in that transaction; a fee fixed before is kept.
UPDATE deposits d SET signed_fee = f.fee
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@fees::numeric[]) AS fee) f
WHERE d.id = f.id AND d.signed_fee IS NULL;

-- name: ParkedTotals :many
-- The deposits parked below the minimum on a chain, per address and asset: their total and the
-- oldest one (whose settle job looks at the address again).
SELECT address, currency, (contract_address IS NULL)::boolean AS native, min(id)::bigint AS first_id,
	sum(gross_amount)::numeric AS total
FROM deposits
WHERE chain_id = @chain_id AND status = 'BELOW_MINIMUM' AND sweep_id IS NULL
GROUP BY address, currency, contract_address IS NULL ORDER BY first_id;

-- name: SweepingWithoutJob :many
-- A chain's confirmed deposits waiting to be swept or credited whose settle job will not run
-- again (River discarded it after its attempts, or it was cancelled): nothing else moves them.
SELECT d.id FROM deposits d
WHERE d.chain_id = @chain_id AND d.status = 'SWEEPING'
  AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.kind = 'deposit.settle'
	AND j.state IN ('available', 'pending', 'running', 'retryable', 'scheduled')
	AND j.args @> jsonb_build_object('depositId', d.id))
ORDER BY d.id;

-- name: DetachSweepDeposits :execrows
-- A retired sweep's deposits leave it (deposit.retireSweep): the SWEEPING ones are due again,
-- for a new sweep to take; a written-off one, if an engineer reinstates it, too.
UPDATE deposits SET sweep_id = NULL WHERE sweep_id = @sweep_id::bigint AND status IN ('SWEEPING', 'REORGED');

-- name: LeaveCancelledSweep :execrows
-- A reorged deposit reinstated once its done sweep's transfers were cancelled (deposit.restore)
-- leaves that sweep, for a new sweep to move its money again.
UPDATE deposits SET sweep_id = NULL WHERE id = @id AND sweep_id = @sweep_id::bigint AND status = 'REORGED';

-- name: DetachSweepCurrencies :execrows
-- The deposits of the given currencies leave a sweep whose transfers of them were cancelled or
-- reverted while its others were mined (deposit.closeRetired): they are swept again.
UPDATE deposits SET sweep_id = NULL
WHERE sweep_id = @sweep_id::bigint AND status IN ('SWEEPING', 'REORGED') AND currency = ANY(@currencies::text[]);

-- name: DetachWrittenOff :execrows
-- A waiting batched sweep's written-off deposits leave it before it joins a batch
-- (deposit.formBatch): their money left the chain, and a batch planned with their amounts
-- would take another payment's. Only from a FUNDING sweep, and only once their reorg is resolved.
UPDATE deposits SET sweep_id = NULL
WHERE deposits.sweep_id = @sweep_id::bigint AND deposits.status = 'REORGED'
  AND EXISTS (SELECT 1 FROM sweeps WHERE sweeps.id = @sweep_id::bigint AND sweeps.status = 'FUNDING')
  AND NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = deposits.id AND r.resolution IS NULL);
