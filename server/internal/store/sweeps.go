package store

import (
	"context"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const sweepColumns = `id, chain_id, address, status, created_at, mined_at`

func scanSweep(row pgx.Row) (domain.Sweep, error) {
	var s domain.Sweep
	err := row.Scan(&s.ID, &s.ChainID, &s.Address, &s.Status, &s.CreatedAt, &s.MinedAt)
	return s, notFound(err)
}

// LockAddress serialises the sweep planning of one deposit address until the transaction ends.
func (q *Queries) LockAddress(ctx context.Context, chainID int64, address string) error {
	_, err := q.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('coffer sweep ' || $1::bigint || ' ' || $2))`, chainID, address)
	return err
}

// OpenSweep returns the address's sweep that is not done (ErrNotFound: none).
func (q *Queries) OpenSweep(ctx context.Context, chainID int64, address string) (domain.Sweep, error) {
	return scanSweep(q.db.QueryRow(ctx, `SELECT `+sweepColumns+` FROM sweeps WHERE chain_id = $1 AND address = $2 AND status <> 'DONE'`,
		chainID, address))
}

// LockSweep loads a sweep and holds its row until the transaction ends.
func (q *Queries) LockSweep(ctx context.Context, id int64) (domain.Sweep, error) {
	return scanSweep(q.db.QueryRow(ctx, `SELECT `+sweepColumns+` FROM sweeps WHERE id = $1 FOR UPDATE`, id))
}

// InsertSweep opens a sweep of an address and attaches the deposits to it.
func (q *Queries) InsertSweep(ctx context.Context, chainID int64, address string, depositIDs []int64) (domain.Sweep, error) {
	sw, err := scanSweep(q.db.QueryRow(ctx, `INSERT INTO sweeps (chain_id, address) VALUES ($1, $2) RETURNING `+sweepColumns,
		chainID, address))
	if err != nil {
		return sw, err
	}
	_, err = q.db.Exec(ctx, `UPDATE deposits SET sweep_id = $1, status = 'SWEEPING'
		WHERE id = ANY($2) AND sweep_id IS NULL AND status IN ('SWEEPING', 'BELOW_MINIMUM')`, sw.ID, depositIDs)
	return sw, err
}

// SetSweepStatus moves a sweep on: SENDING once its transactions are stored, DONE once its
// deposits are credited.
func (q *Queries) SetSweepStatus(ctx context.Context, id int64, status domain.SweepStatus) error {
	_, err := q.db.Exec(ctx, `UPDATE sweeps SET status = $2,
		sent_at = CASE WHEN $2 = 'SENDING' THEN now() ELSE sent_at END,
		done_at = CASE WHEN $2 = 'DONE' THEN now() ELSE done_at END
		WHERE id = $1`, id, status)
	return err
}

// MarkSweepMined records when every transaction of a sweep was first seen mined (the rate wait
// of its credit counts from then).
func (q *Queries) MarkSweepMined(ctx context.Context, id int64) (time.Time, error) {
	var at time.Time
	err := q.db.QueryRow(ctx, `UPDATE sweeps SET mined_at = coalesce(mined_at, now()) WHERE id = $1 RETURNING mined_at`, id).Scan(&at)
	return at, err
}

// DueDeposits lists the address's confirmed deposits no sweep has taken yet (SWEEPING without a
// sweep, and BELOW_MINIMUM), oldest first.
func (q *Queries) DueDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits
		WHERE chain_id = $1 AND address = $2 AND sweep_id IS NULL AND status IN ('SWEEPING', 'BELOW_MINIMUM') ORDER BY id`,
		chainID, address)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// UnsweptDeposits lists the address's deposits no sweep has taken yet, confirming ones too.
func (q *Queries) UnsweptDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits
		WHERE chain_id = $1 AND address = $2 AND sweep_id IS NULL AND status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM') ORDER BY id`,
		chainID, address)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// SweepDeposits lists the deposits of a sweep, oldest first.
func (q *Queries) SweepDeposits(ctx context.Context, sweepID int64) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits WHERE sweep_id = $1 ORDER BY id`, sweepID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// MarkBelowMinimum parks confirmed deposits that are too small to sweep alone.
func (q *Queries) MarkBelowMinimum(ctx context.Context, ids []int64) error {
	_, err := q.db.Exec(ctx, `UPDATE deposits SET status = 'BELOW_MINIMUM' WHERE id = ANY($1) AND status = 'SWEEPING' AND sweep_id IS NULL`, ids)
	return err
}

// UnsweptNative is the native currency at an address that belongs to deposits no mined sweep
// has moved yet, other than those of sweep except (0: none): confirming, waiting or parked
// deposits. A sweep's gas must leave it there.
func (q *Queries) UnsweptNative(ctx context.Context, chainID int64, address string, except int64) (*big.Int, error) {
	var sum decimal.Decimal
	err := q.db.QueryRow(ctx, `SELECT coalesce(sum(gross_amount), 0) FROM deposits
		WHERE chain_id = $1 AND address = $2 AND contract_address IS NULL
		  AND status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM') AND sweep_id IS DISTINCT FROM $3`,
		chainID, address, except).Scan(&sum)
	return sum.BigInt(), err
}

// PendingTopUps lists the gas top-ups to an address that are not mined yet.
func (q *Queries) PendingTopUps(ctx context.Context, chainID int64, address, purpose string) ([]int64, error) {
	rows, err := q.db.Query(ctx, `SELECT id FROM chain_txs WHERE chain_id = $1 AND to_address = $2 AND purpose = $3 AND state = 'pending'
		ORDER BY id`, chainID, address, purpose)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// CountChainTxs counts the transactions of a purpose whose ref starts with prefix.
func (q *Queries) CountChainTxs(ctx context.Context, purpose, prefix string) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, `SELECT count(*) FROM chain_txs WHERE purpose = $1 AND starts_with(ref, $2)`, purpose, prefix).Scan(&n)
	return n, err
}
