-- name: LockSettledDepositsFrom :many
-- Deposits past their confirmation depth in blocks from a number on: a reorg deeper than the depth reached them.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE deposits.chain_id = @chain_id AND deposits.block_number >= @from_block AND deposits.status IN ('SWEEPING', 'BELOW_MINIMUM', 'CREDITED')
	-- A deposit an engineer reinstated keeps the block an earlier reorg found gone: a later
	-- rollback below it takes nothing away (the engineer decided), as LockDepositsOffChain;
	-- unless the scanner has since read that block on the chain again (the chain went back to
	-- its branch): leaving now, it is news.
	AND (NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = deposits.id AND r.block_hash = deposits.block_hash)
		OR EXISTS (SELECT 1 FROM chain_blocks b WHERE b.chain_id = deposits.chain_id AND b.number = deposits.block_number
			AND b.hash = deposits.block_hash))
ORDER BY deposits.id FOR UPDATE;

-- name: LockDepositsSweptFrom :many
-- Deposits of the given sweeps in blocks before a number whose sweep has a transaction mined
-- in a block from that number on: a reorg deeper than the depth took that sweep away, not
-- their transfer. A batched sweep brings the other sweeps of its batch (other addresses): the
-- batch that left the chain moved their money too.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE (deposits.sweep_id = ANY(@sweep_ids::bigint[])
		OR deposits.sweep_id IN (SELECT sib.id FROM sweeps own JOIN sweeps sib ON sib.batch_id = own.batch_id
			WHERE own.id = ANY(@sweep_ids::bigint[]) AND own.batched))
	AND deposits.chain_id = @chain_id AND deposits.block_number < @from_block
	AND deposits.status IN ('SWEEPING', 'CREDITED')
	AND EXISTS (SELECT 1 FROM chain_txs t JOIN sweeps ON sweeps.id = deposits.sweep_id
		WHERE t.chain_id = @chain_id AND t.mined_block >= @from_block AND t.state <> 'failed'
			AND ((NOT sweeps.batched AND t.purpose IN ('sweep', 'sweep-fee') AND split_part(t.ref, ':', 2) = sweeps.id::text)
				OR (sweeps.batched AND t.purpose = 'sweep-batch' AND t.ref = 'batch:' || sweeps.batch_id)))
	-- A deposit whose own block an earlier reorg found gone (its transfer not mined again; an
	-- engineer may have reinstated it) has no money at its address: its sweep leaving takes
	-- nothing away, unless the scanner has since read that block on the chain again.
	AND NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = deposits.id AND r.block_hash = deposits.block_hash
		AND r.reincluded_hash IS DISTINCT FROM deposits.block_hash
		AND NOT EXISTS (SELECT 1 FROM chain_blocks b WHERE b.chain_id = deposits.chain_id AND b.number = deposits.block_number
			AND b.hash = deposits.block_hash))
ORDER BY deposits.id FOR UPDATE;

-- name: LockCoveredDeposits :many
-- Deposits (SWEEPING, CREDITED) of the given sweeps credited from a carry (no transaction of
-- their own) in blocks before a number: a rollback there took away the sweep that carried.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE deposits.sweep_id = ANY(@sweep_ids::bigint[]) AND deposits.chain_id = @chain_id AND deposits.block_number < @from_block
	AND deposits.status IN ('SWEEPING', 'CREDITED')
	-- A deposit whose own block an earlier reorg found gone (its transfer not mined again; an
	-- engineer may have reinstated it) has no money at its address: its sweep leaving takes
	-- nothing away, unless the scanner has since read that block on the chain again.
	AND NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = deposits.id AND r.block_hash = deposits.block_hash
		AND r.reincluded_hash IS DISTINCT FROM deposits.block_hash
		AND NOT EXISTS (SELECT 1 FROM chain_blocks b WHERE b.chain_id = deposits.chain_id AND b.number = deposits.block_number
			AND b.hash = deposits.block_hash))
ORDER BY deposits.id FOR UPDATE;

-- name: SweepTxsMinedIn :many
-- The sweep transactions (transfers, fee transfers, batches) mined in the books, successfully,
-- in a block from from_block to to_block, each with the sweeps it moved: a reorg deeper than
-- the depth may have taken it away while every deposit it moved stays on the chain. Both bounds
-- go to chain_txs_mined_block_idx; each transaction finds its sweeps by key (sweeps_pkey, or
-- sweeps_batch_idx for a batch), the number its ref carries read only where the ref has one:
-- matched on the ref's text alone, every transaction listed scanned every sweep of the chain.
SELECT s.id AS sweep_id, t.id AS tx_id, coalesce(t.mined_hash, '')::text AS mined_hash,
	coalesce(t.mined_block, 0)::bigint AS mined_block
FROM chain_txs t CROSS JOIN LATERAL (
	SELECT sweeps.id FROM sweeps WHERE t.purpose IN ('sweep', 'sweep-fee') AND sweeps.chain_id = t.chain_id AND NOT sweeps.batched
		AND sweeps.id = (CASE WHEN split_part(t.ref, ':', 2) ~ '^[0-9]{1,18}$' THEN split_part(t.ref, ':', 2)::bigint END)
		AND split_part(t.ref, ':', 2) = sweeps.id::text
	UNION ALL
	SELECT sweeps.id FROM sweeps WHERE t.purpose = 'sweep-batch' AND sweeps.chain_id = t.chain_id AND sweeps.batched
		AND sweeps.batch_id = (CASE WHEN t.ref ~ '^batch:[0-9]{1,18}$' THEN substr(t.ref, 7)::bigint END)
		AND t.ref = 'batch:' || sweeps.batch_id) s
WHERE t.chain_id = @chain_id AND t.state = 'mined' AND t.mined_block BETWEEN @from_block::bigint AND @to_block::bigint
	AND t.purpose IN ('sweep', 'sweep-fee', 'sweep-batch')
ORDER BY t.id, s.id;

-- name: MarkDepositReorged :exec
-- A deposit of a sweep that has signed nothing yet leaves it; one of a signed sweep stays.
UPDATE deposits SET status = 'REORGED',
	sweep_id = CASE WHEN (SELECT sweeps.status FROM sweeps WHERE sweeps.id = deposits.sweep_id) = 'FUNDING' THEN NULL ELSE deposits.sweep_id END
WHERE deposits.id = @id;

-- name: InsertReorg :one
-- Reorg queries return the deposit_reorgs row and its deposit's operator, in this order, so
-- one mapper in the store reads them all.
INSERT INTO deposit_reorgs (deposit_id, chain_id, fork_block, block_number, block_hash, prior_status, reversed)
VALUES (@deposit_id, @chain_id, @fork_block, @block_number, @block_hash, @prior_status, @reversed)
RETURNING sqlc.embed(deposit_reorgs),
	(SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = deposit_reorgs.deposit_id)::text AS operator_id;

-- name: AddReorgAction :exec
INSERT INTO deposit_reorg_actions (reorg_id, deposit_id, action, actor, note) VALUES (@reorg_id, @deposit_id, @action, @actor, @note);

-- name: NoteReinclusion :execrows
UPDATE deposit_reorgs SET reincluded_block = @reincluded_block::bigint, reincluded_hash = @reincluded_hash::text
WHERE deposit_id = @deposit_id AND resolution IS NULL;

-- name: ForgetReinclusions :execrows
UPDATE deposit_reorgs SET reincluded_block = NULL, reincluded_hash = NULL
WHERE chain_id = @chain_id AND resolution IS NULL AND reincluded_block >= @from_block::bigint;

-- name: ReincludedReorgs :many
-- Open reorgs whose transfer was mined again in a block up to up_to. A read: whoever resolves
-- one locks its deposit, then the reorg (LockOpenReorg), as ResolveReorg does, so the two
-- cannot deadlock.
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r
WHERE r.chain_id = @chain_id AND r.resolution IS NULL AND r.reincluded_block <= @up_to::bigint ORDER BY r.id;

-- name: LockOpenReorg :one
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r
WHERE r.deposit_id = @deposit_id AND r.resolution IS NULL FOR UPDATE;

-- name: LatestReorg :one
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r
WHERE r.deposit_id = @deposit_id ORDER BY r.id DESC LIMIT 1;

-- name: LatestDecision :one
-- A deposit's latest reorg resolved by an engineer's decision (REINSTATE or WRITE_OFF), not by
-- the scanner (REINCLUDED): whether it counts.
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r
WHERE r.deposit_id = @deposit_id AND r.resolution IN ('REINSTATE', 'WRITE_OFF') ORDER BY r.id DESC LIMIT 1;

-- name: CloseReorg :one
UPDATE deposit_reorgs SET resolution = @resolution, resolved_by = @resolved_by::text, note = @note, resolved_at = now()
WHERE deposit_reorgs.id = @id AND deposit_reorgs.resolution IS NULL
RETURNING sqlc.embed(deposit_reorgs),
	(SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = deposit_reorgs.deposit_id)::text AS operator_id;

-- name: SetDepositStatus :execrows
UPDATE deposits SET status = sqlc.arg(to_status) WHERE id = sqlc.arg(id) AND status = sqlc.arg(from_status);

-- name: ListReorgs :many
-- A NULL operator_ids matches every operator; before_id 0 pages from the newest.
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r JOIN deposits d ON d.id = r.deposit_id
WHERE (sqlc.narg(operator_ids)::uuid[] IS NULL OR d.operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
  AND (@include_resolved::boolean OR r.resolution IS NULL)
  AND (@before_id::bigint = 0 OR r.id < @before_id::bigint)
ORDER BY r.id DESC LIMIT @lim;

-- name: ReorgActions :many
SELECT id, reorg_id, deposit_id, action, actor, note, created_at FROM deposit_reorg_actions
WHERE reorg_id = ANY(@reorg_ids::bigint[]) ORDER BY id;

-- name: OpenReorgsByChain :many
SELECT chain_id, count(*) AS open FROM deposit_reorgs WHERE resolution IS NULL GROUP BY chain_id;

-- name: SweepHeldByReorg :one
SELECT EXISTS (SELECT 1 FROM deposits d JOIN deposit_reorgs r ON r.deposit_id = d.id
	WHERE d.sweep_id = @sweep_id::bigint AND r.resolution IS NULL) AS held;

-- name: SweepMissingDeposit :one
-- Whether a sweep moves a reorged deposit whose money is not back at its address: no open
-- reorg of it notes its transfer mined again in a block up to up_to (it is still off the
-- chain, or written off).
SELECT EXISTS (SELECT 1 FROM deposits d WHERE d.sweep_id = @sweep_id::bigint AND d.status = 'REORGED'
	AND NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = d.id AND r.resolution IS NULL
		AND r.reincluded_block <= @up_to::bigint)) AS missing;

-- name: LockDepositsOffChain :many
-- Deposits not yet orphaned or reorged whose block a scan pass shows is not on the chain: one
-- recorded at a height the pass read (from_block..to_block) under another block hash, or one
-- whose transfer the pass found in another block (a transaction is in one block of a chain).
-- Each branch is an index lookup: deposits_block_idx, and the (chain_id, tx_hash, log_index) key.
-- A deposit an engineer reinstated keeps the block that left the chain: that one is not news.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE deposits.id IN (
	SELECT d.id FROM deposits d
	JOIN ROWS FROM (unnest(@numbers::bigint[]), unnest(@hashes::text[])) AS b (n, h) ON d.block_number = b.n
	WHERE d.chain_id = @chain_id AND d.block_number BETWEEN @from_block AND @to_block AND d.block_hash <> b.h
		AND d.status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM', 'CREDITED')
	UNION
	SELECT d.id FROM deposits d
	JOIN ROWS FROM (unnest(@tx_hashes::text[]), unnest(@log_indexes::integer[]), unnest(@found_hashes::text[])) AS f (t, i, h)
		ON d.tx_hash = f.t AND d.log_index = f.i
	WHERE d.chain_id = @chain_id AND d.block_hash <> f.h AND d.status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM', 'CREDITED'))
	-- A block already found gone is not found again: the engineer who reinstated the deposit decided.
	AND NOT EXISTS (SELECT 1 FROM deposit_reorgs r WHERE r.deposit_id = deposits.id AND r.block_hash = deposits.block_hash)
ORDER BY deposits.id FOR UPDATE;

-- name: WrittenOffMinedAgain :many
-- Written-off reorged deposits whose transfer the scanner has since read again, in a block up
-- to up_to that is still on the chain (its hash is kept) and that their write-off did not
-- know of: their money is back at the deposit address. Each row is the deposit's newest reorg,
-- the write-off (so none is open).
SELECT sqlc.embed(r), (SELECT deposits.operator_id::text FROM deposits WHERE deposits.id = r.deposit_id)::text AS operator_id
FROM deposit_reorgs r JOIN deposits d ON d.id = r.deposit_id
WHERE r.chain_id = @chain_id AND r.resolution = 'WRITE_OFF' AND d.status = 'REORGED' AND d.block_number <= @up_to::bigint
	AND r.id = (SELECT max(l.id) FROM deposit_reorgs l WHERE l.deposit_id = r.deposit_id)
	AND r.reincluded_hash IS DISTINCT FROM d.block_hash
	AND EXISTS (SELECT 1 FROM chain_blocks b WHERE b.chain_id = d.chain_id AND b.number = d.block_number AND b.hash = d.block_hash)
ORDER BY r.id;

-- name: BlockWrittenOff :one
-- Whether an engineer wrote off, in an earlier reorg of the deposit, the loss of this block.
SELECT EXISTS (SELECT 1 FROM deposit_reorgs w WHERE w.deposit_id = @deposit_id AND w.id < @reorg_id
	AND w.resolution = 'WRITE_OFF' AND w.block_hash = @block_hash) AS written_off;
