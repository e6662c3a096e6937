-- name: RegisterDepositor :exec
INSERT INTO depositors (operator_id, external_user_id) VALUES (@operator_id, @external_user_id) ON CONFLICT DO NOTHING;

-- name: LockDepositorAddress :one
SELECT address_index, address FROM depositors WHERE operator_id = @operator_id AND external_user_id = @external_user_id FOR UPDATE;

-- name: NextAddressIndex :one
SELECT nextval('deposit_address_index')::bigint;

-- name: AssignAddress :exec
UPDATE depositors SET address_index = @address_index::bigint, address = @address::text, updated_at = now()
WHERE operator_id = @operator_id AND external_user_id = @external_user_id;

-- name: DepositAddressesAfter :many
-- Every address the scanner watches: depositors', treasuries' and token-deposit addresses.
SELECT operator_id::text AS operator_id, external_user_id::text AS external_user_id, address_index::bigint AS address_index,
	address::text AS address, treasury::boolean AS treasury, token::boolean AS token
FROM watched_addresses WHERE address_index > @after::bigint ORDER BY address_index LIMIT @lim;

-- name: DepositAddressByAddress :one
SELECT operator_id::text AS operator_id, external_user_id::text AS external_user_id, address_index::bigint AS address_index,
	address::text AS address, treasury::boolean AS treasury, token::boolean AS token
FROM watched_addresses WHERE address = @address::text;

-- name: DepositAddressesIn :many
-- The owners of those of the addresses that are watched: the scanner's exact check of what its
-- filter let through (the unique indexes on depositors.address, treasuries.address and
-- token_addresses.address).
SELECT operator_id::text AS operator_id, external_user_id::text AS external_user_id, address_index::bigint AS address_index,
	address::text AS address, treasury::boolean AS treasury, token::boolean AS token
FROM watched_addresses WHERE address = ANY(@addresses::text[]);

-- name: DepositAddressesAt :many
-- The watched addresses with these derivation indexes (the scanner looks again for indexes it
-- skipped: taken by a transaction that had not committed yet).
SELECT operator_id::text AS operator_id, external_user_id::text AS external_user_id, address_index::bigint AS address_index,
	address::text AS address, treasury::boolean AS treasury, token::boolean AS token
FROM watched_addresses WHERE address_index = ANY(@indexes::bigint[]);

-- name: MaxAddressIndex :one
-- The highest derivation index assigned (-1 for none): a bound on the number of watched addresses.
SELECT greatest(coalesce((SELECT max(address_index) FROM depositors), -1),
	coalesce((SELECT max(address_index) FROM treasuries), -1),
	coalesce((SELECT max(address_index) FROM token_addresses), -1))::bigint AS max_index;

-- name: GetTreasury :one
SELECT operator_id, address_index, address, created_at FROM treasuries WHERE operator_id = @operator_id;

-- name: LockTreasuries :exec
-- Serialises treasury assignments until the transaction ends.
SELECT pg_advisory_xact_lock(hashtext('coffer treasuries'));

-- name: InsertTreasury :exec
INSERT INTO treasuries (operator_id, address_index, address) VALUES (@operator_id, @address_index, @address);

-- name: GetTokenAddress :one
-- A user's token-deposit address. Its assignment is serialised by the depositor's row lock
-- (LockDepositorAddress).
SELECT address_index, address FROM token_addresses WHERE operator_id = @operator_id AND external_user_id = @external_user_id;

-- name: InsertTokenAddress :exec
INSERT INTO token_addresses (operator_id, external_user_id, address_index, address)
VALUES (@operator_id, @external_user_id, @address_index, @address);

-- name: DepositAddressOf :one
SELECT address FROM depositors WHERE operator_id = @operator_id AND external_user_id = @external_user_id;

-- name: GetCursor :one
-- Locked: one scanner per chain at a time.
SELECT chain_id, genesis_hash, next_block, head_block, updated_at FROM chain_cursors WHERE chain_id = @chain_id FOR UPDATE;

-- name: PutCursor :exec
INSERT INTO chain_cursors (chain_id, genesis_hash, next_block, head_block) VALUES (@chain_id, @genesis_hash, @next_block, @head_block)
ON CONFLICT (chain_id) DO UPDATE SET genesis_hash = @genesis_hash, next_block = @next_block, head_block = @head_block, updated_at = now();

-- name: ChainHead :one
SELECT COALESCE((SELECT head_block FROM chain_cursors WHERE chain_id = @chain_id), 0)::bigint;

-- name: BlockHash :one
SELECT hash FROM chain_blocks WHERE chain_id = @chain_id AND number = @number;

-- name: PutBlocks :exec
-- ROWS FROM of unnests is unnest(a, b, c), spelled so sqlc can type it.
WITH put AS (
	INSERT INTO chain_blocks (chain_id, number, hash, parent_hash)
	SELECT @chain_id, b.n, b.h, b.p FROM ROWS FROM (unnest(@numbers::bigint[]), unnest(@hashes::text[]), unnest(@parents::text[])) AS b (n, h, p)
	ON CONFLICT (chain_id, number) DO UPDATE SET hash = EXCLUDED.hash, parent_hash = EXCLUDED.parent_hash
) DELETE FROM chain_blocks WHERE chain_blocks.chain_id = @chain_id AND chain_blocks.number < @keep_from;

-- name: DeleteBlocksFrom :exec
DELETE FROM chain_blocks WHERE chain_id = @chain_id AND number >= @from_number;

-- name: UpsertDeposit :one
-- A known transfer moves to the block it is now in (a reorg re-mined it); inserted is false then.
INSERT INTO deposits (operator_id, external_user_id, session_id, chain_id, tx_hash, log_index, block_number, block_hash,
	address, address_index, currency, contract_address, decimals, gross_amount, status, manual, idempotency_key, treasury, replayed_by)
VALUES (@operator_id, @external_user_id, NULLIF(@session_id::text, '')::uuid, @chain_id, @tx_hash, @log_index, @block_number, @block_hash,
	@address, @address_index, @currency, NULLIF(@contract_address::text, ''), @decimals, @gross_amount, @status, @manual, @idempotency_key, @treasury,
	NULLIF(@replayed_by::text, ''))
ON CONFLICT (chain_id, tx_hash, log_index) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash,
	status = CASE WHEN deposits.status = 'ORPHANED' THEN 'CONFIRMING' ELSE deposits.status END,
	-- An orphaned transfer a replay records again is the replay's; any other known one stays as it was.
	manual = deposits.manual OR (deposits.status = 'ORPHANED' AND EXCLUDED.manual),
	replayed_by = CASE WHEN deposits.status = 'ORPHANED' THEN COALESCE(EXCLUDED.replayed_by, deposits.replayed_by) ELSE deposits.replayed_by END
RETURNING sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference,
	xmax = 0 AS inserted;

-- name: GetDeposit :one
-- Deposit queries return the deposits row and three joined values, in this order, so one
-- mapper in the store reads them all.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits WHERE deposits.id = @id;

-- name: LockDeposit :one
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits WHERE deposits.id = @id FOR UPDATE;

-- name: DepositByTransfer :one
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits WHERE deposits.chain_id = @chain_id AND deposits.tx_hash = @tx_hash AND deposits.log_index = @log_index;

-- name: OrphanDepositsFrom :execrows
UPDATE deposits SET status = 'ORPHANED' WHERE chain_id = @chain_id AND block_number >= @from_block AND status = 'CONFIRMING';

-- name: OrphanChainDeposits :execrows
UPDATE deposits SET status = 'ORPHANED' WHERE chain_id = @chain_id AND status = 'CONFIRMING';

-- name: ConfirmDeposits :many
UPDATE deposits SET status = 'SWEEPING', confirmed_at = now()
WHERE chain_id = @chain_id AND status = 'CONFIRMING' AND block_number <= @max_block RETURNING id;

-- name: LockDepositStatus :one
SELECT status FROM deposits WHERE id = @id FOR UPDATE;

-- name: ConfirmDeposit :exec
UPDATE deposits SET status = 'SWEEPING', confirmed_at = now() WHERE id = @id AND status = 'CONFIRMING';

-- name: CreditDeposit :one
UPDATE deposits SET status = 'CREDITED', credited_at = now(), fee_amount = @fee_amount, amount = @amount,
	usd_price = @usd_price, fiat_per_usd = @fiat_per_usd, fiat_currency = @fiat_currency, amount_in_dollar = @amount_in_dollar,
	amount_in_local = @amount_in_local, fee_in_dollar = @fee_in_dollar, unpriced = @unpriced
WHERE deposits.id = @id AND deposits.status = 'SWEEPING'
RETURNING sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference;

-- name: SessionDeposits :many
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits WHERE deposits.session_id = @session_id::uuid AND deposits.status <> 'ORPHANED' ORDER BY deposits.id;

-- name: ListDeposits :many
-- A NULL operator_ids matches every operator; an empty external_user_id, statuses, chain_id,
-- detected_after, detected_before or before_id no filter.
SELECT sqlc.embed(deposits),
	deposit_sweep_tx_hash(deposits.id, deposits.sweep_id, deposits.currency)::text AS sweep_tx_hash,
	COALESCE((SELECT sessions.session_ref FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS session_ref,
	COALESCE((SELECT sessions.operator_reference FROM sessions WHERE sessions.id = deposits.session_id), '')::text AS operator_reference
FROM deposits
WHERE (sqlc.narg(operator_ids)::uuid[] IS NULL OR deposits.operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
  AND (@external_user_id::text = '' OR deposits.external_user_id = @external_user_id::text)
  AND (coalesce(cardinality(sqlc.narg(statuses)::text[]), 0) = 0 OR deposits.status = ANY(sqlc.narg(statuses)::text[]))
  AND (@chain_id::bigint = 0 OR deposits.chain_id = @chain_id::bigint)
  AND (sqlc.narg(detected_after)::timestamptz IS NULL OR deposits.detected_at >= sqlc.narg(detected_after)::timestamptz)
  AND (sqlc.narg(detected_before)::timestamptz IS NULL OR deposits.detected_at < sqlc.narg(detected_before)::timestamptz)
  AND (@before_id::bigint = 0 OR deposits.id < @before_id::bigint)
ORDER BY deposits.id DESC LIMIT @lim;

-- name: LockHandouts :exec
-- Orders one user's handouts (the session's depositor row): whether a handout continues the
-- session's run depends on the user's latest handout.
SELECT 1 FROM depositors d JOIN sessions s ON s.operator_id = d.operator_id AND s.external_user_id = d.external_user_id
WHERE s.id = @session_id FOR UPDATE OF d;

-- name: ExtendHandoutRun :execrows
-- The session showed the address again and no other session of the user has shown it for the
-- chain and currency since: its latest run, the user's latest, moves on.
UPDATE handout_runs r SET last_at = clock_timestamp()
FROM sessions s
WHERE r.session_id = @session_id AND r.chain_id = @chain_id AND r.currency = @currency AND s.id = r.session_id
  AND r.last_at = (SELECT max(o.last_at) FROM handout_runs o JOIN sessions os ON os.id = o.session_id
	WHERE os.operator_id = s.operator_id AND os.external_user_id = s.external_user_id
	  AND o.chain_id = @chain_id AND o.currency = @currency);

-- name: StartHandoutRun :exec
INSERT INTO handout_runs (session_id, chain_id, currency, started_at, last_at)
VALUES (@session_id, @chain_id, @currency, clock_timestamp(), clock_timestamp());

-- name: RecordHandout :exec
-- The previous release's record of handouts (first and latest per session), kept written for
-- its replicas during a rolling deploy; attribution reads handout_runs.
INSERT INTO address_handouts (session_id, chain_id, currency) VALUES (@session_id, @chain_id, @currency)
ON CONFLICT (session_id, chain_id, currency) DO UPDATE SET handed_at = now();

-- name: AttributedSession :one
-- Among the user's deposit sessions live at a moment, the one that most recently handed out
-- the address for the chain and currency before it (slack: database clock against block
-- timestamps). A session's latest handout before the moment is the last_at of its latest run
-- that started before it, or the moment itself when that run goes on past it (runs of one user
-- never overlap, so no other session handed it out in between).
SELECT s.id, s.operator_id, s.kind, s.session_ref, s.external_user_id, s.lang, s.fiat_currency, s.user_balance, s.amount,
	s.email, s.operator_reference, s.created_at, s.expires_at, s.cancelled_at, s.submitting_until
FROM sessions s
JOIN LATERAL (
	SELECT max(LEAST(r.last_at, sqlc.arg(paid_at)::timestamptz + sqlc.arg(slack)::interval)) AS handed_at
	FROM handout_runs r
	WHERE r.session_id = s.id AND r.chain_id = sqlc.arg(chain_id) AND r.currency = sqlc.arg(currency)
	  AND r.started_at <= sqlc.arg(paid_at)::timestamptz + sqlc.arg(slack)::interval
) h ON h.handed_at IS NOT NULL
WHERE s.operator_id = sqlc.arg(operator_id) AND s.external_user_id = sqlc.arg(external_user_id) AND s.kind = 'DEPOSIT'
  AND s.created_at <= sqlc.arg(paid_at)::timestamptz + sqlc.arg(slack)::interval
  AND s.expires_at > sqlc.arg(paid_at) AND (s.cancelled_at IS NULL OR s.cancelled_at > sqlc.arg(paid_at))
ORDER BY h.handed_at DESC LIMIT 1;

-- name: AllWatchedAddresses :many
-- Every watched address, in no particular order. Read as a stream (AllWatchedAddressesRows,
-- store.EachWatchedAddress): there are millions, which this generated method would collect.
SELECT address_index, address FROM watched_addresses;

-- name: OrphanDeposits :execrows
UPDATE deposits SET status = 'ORPHANED' WHERE id = ANY(@ids::bigint[]) AND status = 'CONFIRMING';
