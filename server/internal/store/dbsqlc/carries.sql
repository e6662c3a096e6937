-- name: CarryBalance :one
-- What is carried to the bankroll and the fee address for an address's deposits of an asset,
-- and not yet taken by a sweep, other than except_sweep's own rows.
SELECT coalesce(sum(bankroll), 0)::numeric AS bankroll, coalesce(sum(fee), 0)::numeric AS fee
FROM sweep_carries
WHERE chain_id = @chain_id AND address = @address AND currency = @currency AND sweep_id <> @except_sweep::bigint;

-- name: CarryBalanceBefore :one
-- CarryBalance as a batched sweep found it when it was planned: the rows of the sweeps before
-- before_sweep (an address has one open sweep at a time), so the plan read again later (its
-- batch's receipt checked, the sweep credited) is the plan that was signed.
SELECT coalesce(sum(bankroll), 0)::numeric AS bankroll, coalesce(sum(fee), 0)::numeric AS fee
FROM sweep_carries
WHERE chain_id = @chain_id AND address = @address AND currency = @currency AND sweep_id < @before_sweep::bigint;

-- name: InsertCarry :exec
INSERT INTO sweep_carries (chain_id, address, currency, sweep_id, kind, bankroll, fee)
VALUES (@chain_id, @address, @currency, @sweep_id, @kind, @bankroll, @fee);

-- name: DetachUncredited :execrows
-- A finished sweep's written-off deposits leave it in the transaction that credits the others
-- (deposit.finishSweep): what it moved in their name is carried to later deposits, so one an
-- engineer reinstates (its payment back at the address) is swept again, as after a retirement.
-- Each is noted in swept_uncredited (SweptUncredited).
WITH detached AS (
	UPDATE deposits SET sweep_id = NULL
	WHERE sweep_id = @sweep_id::bigint AND status = 'REORGED' AND id = ANY(@ids::bigint[])
	RETURNING id
)
INSERT INTO swept_uncredited (deposit_id, sweep_id) SELECT detached.id, @sweep_id::bigint FROM detached;

-- name: SweptUncredited :one
-- Whether a finished batched sweep moved money in a written-off deposit's name
-- (DetachUncredited) and carried nothing for it (settled before batches carried,
-- deposit/carry.go).
SELECT EXISTS (SELECT 1 FROM swept_uncredited u JOIN sweeps s ON s.id = u.sweep_id
	WHERE u.deposit_id = @deposit_id AND s.batched
	AND NOT EXISTS (SELECT 1 FROM sweep_carries c WHERE c.sweep_id = s.id AND c.kind = 'CARRIED')) AS swept;

-- name: SweepsCoveredBy :many
-- The done sweeps credited from their address's carry with no transaction of their own (a
-- batched one in no batch: deposit creditCovered; an unbatched one with no transfer, failed
-- ones aside) that took a carry after one of the given sweeps carried to their address.
SELECT DISTINCT y.id FROM sweep_carries src
	JOIN sweep_carries tk ON tk.chain_id = src.chain_id AND tk.address = src.address AND tk.currency = src.currency
		AND tk.kind = 'TAKEN' AND tk.sweep_id > src.sweep_id
	JOIN sweeps y ON y.id = tk.sweep_id AND y.status = 'DONE'
		AND ((y.batched AND y.batch_id IS NULL)
			OR (NOT y.batched AND NOT EXISTS (SELECT 1 FROM chain_txs t WHERE t.chain_id = y.chain_id
				AND t.purpose IN ('sweep', 'sweep-fee') AND t.ref LIKE 'sweep:' || y.id || ':%' AND t.state <> 'failed')))
WHERE src.kind = 'CARRIED' AND src.sweep_id = ANY(@sweep_ids::bigint[])
ORDER BY y.id;

-- name: CarrySources :many
-- The sweeps that carried to an address before a sweep of it.
SELECT DISTINCT sweep_id FROM sweep_carries
WHERE chain_id = @chain_id AND address = @address AND kind = 'CARRIED' AND sweep_id < @before_sweep::bigint
ORDER BY sweep_id;
