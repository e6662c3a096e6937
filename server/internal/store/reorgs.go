package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const reorgColumns = `r.id, r.deposit_id, r.chain_id, r.fork_block, r.block_number, r.block_hash, r.prior_status, r.reversed,
	r.detected_at, coalesce(r.reincluded_block, 0), coalesce(r.reincluded_hash, ''), coalesce(r.resolution, ''),
	coalesce(r.resolved_by, ''), r.note, r.resolved_at,
	(SELECT operator_id::text FROM deposits WHERE id = r.deposit_id)`

func scanReorg(row pgx.Row) (domain.Reorg, error) {
	var r domain.Reorg
	var fork, block, reincluded int64
	var reversed decimal.Decimal
	err := row.Scan(&r.ID, &r.DepositID, &r.ChainID, &fork, &block, &r.BlockHash, &r.PriorStatus, &reversed, &r.DetectedAt,
		&reincluded, &r.ReincludedHash, &r.Resolution, &r.ResolvedBy, &r.Note, &r.ResolvedAt, &r.OperatorID)
	r.ForkBlock, r.BlockNumber, r.ReincludedBlock, r.Reversed = uint64(fork), uint64(block), uint64(reincluded), reversed.BigInt()
	return r, notFound(err)
}

func collectReorgs(rows pgx.Rows, err error) ([]domain.Reorg, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Reorg, error) { return scanReorg(r) })
}

// LockSettledDepositsFrom locks the deposits past their confirmation depth (SWEEPING,
// BELOW_MINIMUM, CREDITED) in blocks from a number on: a reorg deeper than the confirmation
// depth reached them.
func (q *Queries) LockSettledDepositsFrom(ctx context.Context, chainID int64, from uint64) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits
		WHERE chain_id = $1 AND block_number >= $2 AND status IN ('SWEEPING', 'BELOW_MINIMUM', 'CREDITED') ORDER BY id FOR UPDATE`,
		chainID, int64(from))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// InsertReorg records a reorged deposit and marks it REORGED. A deposit of a sweep that has
// signed nothing yet leaves it (its money is gone; the sweep must not plan for it); one of a
// signed sweep stays, and that sweep waits until the reorg is resolved.
func (q *Queries) InsertReorg(ctx context.Context, r domain.Reorg) (domain.Reorg, error) {
	if _, err := q.db.Exec(ctx, `UPDATE deposits SET status = 'REORGED',
		sweep_id = CASE WHEN (SELECT status FROM sweeps WHERE id = deposits.sweep_id) = 'FUNDING' THEN NULL ELSE sweep_id END
		WHERE id = $1`, r.DepositID); err != nil {
		return r, err
	}
	return scanReorg(q.db.QueryRow(ctx, `WITH r AS (
		INSERT INTO deposit_reorgs (deposit_id, chain_id, fork_block, block_number, block_hash, prior_status, reversed)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *) SELECT `+reorgColumns+` FROM r`,
		r.DepositID, r.ChainID, int64(r.ForkBlock), int64(r.BlockNumber), r.BlockHash, r.PriorStatus, Uint256(r.Reversed)))
}

// AddReorgAction appends to a reorg's audit trail.
func (q *Queries) AddReorgAction(ctx context.Context, a domain.ReorgAction) error {
	_, err := q.db.Exec(ctx, `INSERT INTO deposit_reorg_actions (reorg_id, deposit_id, action, actor, note) VALUES ($1, $2, $3, $4, $5)`,
		a.ReorgID, a.DepositID, a.Action, a.Actor, a.Note)
	return err
}

// NoteReinclusion records that a reorged deposit's transfer was mined again, in a new block.
// It returns false when the deposit has no open reorg.
func (q *Queries) NoteReinclusion(ctx context.Context, depositID int64, block uint64, hash string) (bool, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deposit_reorgs SET reincluded_block = $2, reincluded_hash = $3
		WHERE deposit_id = $1 AND resolution IS NULL`, depositID, int64(block), hash)
	return tag.RowsAffected() > 0, err
}

// ForgetReinclusions clears the re-inclusions in blocks from a number on (they left the chain too).
func (q *Queries) ForgetReinclusions(ctx context.Context, chainID int64, from uint64) (int64, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deposit_reorgs SET reincluded_block = NULL, reincluded_hash = NULL
		WHERE chain_id = $1 AND resolution IS NULL AND reincluded_block >= $2`, chainID, int64(from))
	return tag.RowsAffected(), err
}

// ReincludedReorgs lists the open reorgs of a chain whose transfer was mined again in a block
// up to upTo (one that reached the confirmation depth), locking them in a transaction.
func (q *Queries) ReincludedReorgs(ctx context.Context, chainID int64, upTo uint64) ([]domain.Reorg, error) {
	return collectReorgs(q.db.Query(ctx, `SELECT `+reorgColumns+` FROM deposit_reorgs r
		WHERE r.chain_id = $1 AND r.resolution IS NULL AND r.reincluded_block <= $2 ORDER BY r.id FOR UPDATE`, chainID, int64(upTo)))
}

// LockOpenReorg locks a deposit's open reorg (ErrNotFound: none).
func (q *Queries) LockOpenReorg(ctx context.Context, depositID int64) (domain.Reorg, error) {
	return scanReorg(q.db.QueryRow(ctx, `SELECT `+reorgColumns+` FROM deposit_reorgs r
		WHERE r.deposit_id = $1 AND r.resolution IS NULL FOR UPDATE`, depositID))
}

// LatestReorg is a deposit's most recent reorg (ErrNotFound: it never had one).
func (q *Queries) LatestReorg(ctx context.Context, depositID int64) (domain.Reorg, error) {
	return scanReorg(q.db.QueryRow(ctx, `SELECT `+reorgColumns+` FROM deposit_reorgs r
		WHERE r.deposit_id = $1 ORDER BY r.id DESC LIMIT 1`, depositID))
}

// CloseReorg records a reorg's resolution.
func (q *Queries) CloseReorg(ctx context.Context, id int64, resolution domain.ReorgResolution, actor domain.Actor, note string) (domain.Reorg, error) {
	return scanReorg(q.db.QueryRow(ctx, `WITH r AS (
		UPDATE deposit_reorgs SET resolution = $2, resolved_by = $3, note = $4, resolved_at = now()
		WHERE id = $1 AND resolution IS NULL RETURNING *) SELECT `+reorgColumns+` FROM r`, id, resolution, actor, note))
}

// SetDepositStatus moves a reorged deposit back to a status (a resolution that counts it again).
func (q *Queries) SetDepositStatus(ctx context.Context, id int64, from, to domain.DepositStatus) (bool, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deposits SET status = $3 WHERE id = $1 AND status = $2`, id, from, to)
	return tag.RowsAffected() > 0, err
}

// ListReorgs lists reorgs, newest first.
func (q *Queries) ListReorgs(ctx context.Context, f domain.ReorgFilter) ([]domain.Reorg, error) {
	return collectReorgs(q.db.Query(ctx, `SELECT `+reorgColumns+` FROM deposit_reorgs r JOIN deposits d ON d.id = r.deposit_id
		WHERE ($1::uuid[] IS NULL OR d.operator_id = ANY($1::uuid[]))
		  AND ($2 OR r.resolution IS NULL)
		  AND ($3 = 0 OR r.id < $3)
		ORDER BY r.id DESC LIMIT $4`, f.OperatorIDs, f.IncludeResolved, f.BeforeID, f.Limit))
}

// ReorgActions lists the audit trails of reorgs, oldest first.
func (q *Queries) ReorgActions(ctx context.Context, reorgIDs []int64) ([]domain.ReorgAction, error) {
	rows, err := q.db.Query(ctx, `SELECT id, reorg_id, deposit_id, action, actor, note, created_at FROM deposit_reorg_actions
		WHERE reorg_id = ANY($1) ORDER BY id`, reorgIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.ReorgAction, error) {
		var a domain.ReorgAction
		err := r.Scan(&a.ID, &a.ReorgID, &a.DepositID, &a.Action, &a.Actor, &a.Note, &a.CreatedAt)
		return a, err
	})
}

// OpenReorgsByChain counts the unresolved reorgs per chain.
func (q *Queries) OpenReorgsByChain(ctx context.Context) (map[int64]int64, error) {
	rows, err := q.db.Query(ctx, `SELECT chain_id, count(*) FROM deposit_reorgs WHERE resolution IS NULL GROUP BY chain_id`)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	defer rows.Close()
	for rows.Next() {
		var chainID, n int64
		if err := rows.Scan(&chainID, &n); err != nil {
			return nil, err
		}
		out[chainID] = n
	}
	return out, rows.Err()
}

// SweepHeldByReorg reports whether a sweep has a deposit with an open reorg: the sweep waits
// (signs, sends, tops up and credits nothing) until it is resolved.
func (q *Queries) SweepHeldByReorg(ctx context.Context, sweepID int64) (bool, error) {
	var held bool
	err := q.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM deposits d JOIN deposit_reorgs r ON r.deposit_id = d.id
		WHERE d.sweep_id = $1 AND r.resolution IS NULL)`, sweepID).Scan(&held)
	return held, err
}
