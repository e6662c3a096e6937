package store

import (
	"context"
	"math"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// reorgRow is what every reorg query returns: the deposit_reorgs row and its deposit's
// operator. Each query has its own generated row type of this shape; reorgRows lets one mapper
// read them all.
type reorgRow struct {
	DepositReorg dbsqlc.DepositReorg
	OperatorID   string
}

type reorgRows interface {
	~struct {
		DepositReorg dbsqlc.DepositReorg
		OperatorID   string
	}
}

// reorgOf maps a deposit_reorgs row to the domain.
func reorgOf[R reorgRows](row R) (domain.Reorg, error) {
	x := reorgRow(row)
	r := x.DepositReorg
	out := domain.Reorg{ID: r.ID, DepositID: r.DepositID, ChainID: r.ChainID, ForkBlock: chainUint(r.ForkBlock),
		BlockNumber: chainUint(r.BlockNumber), BlockHash: r.BlockHash, PriorStatus: r.PriorStatus, Reversed: r.Reversed.BigInt(),
		DetectedAt: r.DetectedAt, ReincludedBlock: chainUint(r.ReincludedBlock.Int64), ReincludedHash: deref(r.ReincludedHash),
		ResolvedBy: domain.Actor(deref(r.ResolvedBy)), Note: r.Note, ResolvedAt: r.ResolvedAt, OperatorID: x.OperatorID}
	if r.Resolution != nil {
		out.Resolution = *r.Resolution
	}
	return out, nil
}

// oneReorg maps a single-row reorg query's result.
func oneReorg[R reorgRows](r R, err error) (domain.Reorg, error) {
	return one(r, err, reorgOf[R])
}

// manyReorgs maps a reorg list query's result.
func manyReorgs[R reorgRows](rows []R, err error) ([]domain.Reorg, error) {
	return many(rows, err, reorgOf[R])
}

// LockSettledDepositsFrom locks the deposits past their confirmation depth (SWEEPING,
// BELOW_MINIMUM, CREDITED) in blocks from a number on: a reorg deeper than the confirmation
// depth reached them.
func (q *Queries) LockSettledDepositsFrom(ctx context.Context, chainID int64, from uint64) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.LockSettledDepositsFrom(ctx, q.db, dbsqlc.LockSettledDepositsFromParams{ChainID: chainID,
		FromBlock: bigint(from)}))
}

// LockDepositsSweptFrom locks the deposits (SWEEPING, CREDITED) of the given sweeps in blocks
// below from whose sweep has a transaction mined at or after that height: a rollback there
// took that sweep away, not their transfer.
func (q *Queries) LockDepositsSweptFrom(ctx context.Context, chainID int64, from uint64, sweepIDs []int64) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.LockDepositsSweptFrom(ctx, q.db, dbsqlc.LockDepositsSweptFromParams{ChainID: chainID,
		FromBlock: bigint(from), SweepIds: sweepIDs}))
}

// LockDepositsOffChain locks the deposits (CONFIRMING, SWEEPING, BELOW_MINIMUM, CREDITED) a
// scan pass shows are in a block no longer on the chain: recorded at a height among blocks (the
// window the pass read) under another hash, or whose transfer is among found (the transfers
// the pass found, each with the block it is in) under another block; not one reinstated by an
// engineer after its block was found gone (it keeps that block). One query, whatever the
// window's size.
func (q *Queries) LockDepositsOffChain(ctx context.Context, chainID int64, blocks []BlockRef, found []domain.Deposit) ([]domain.Deposit, error) {
	p := dbsqlc.LockDepositsOffChainParams{ChainID: chainID, FromBlock: 0, ToBlock: -1, Numbers: make([]int64, len(blocks)),
		Hashes: make([]string, len(blocks)), TxHashes: make([]string, len(found)), LogIndexes: make([]int32, len(found)),
		FoundHashes: make([]string, len(found))}
	for i, b := range blocks {
		p.Numbers[i], p.Hashes[i] = bigint(b.Number), b.Hash
		if i == 0 || p.Numbers[i] < p.FromBlock {
			p.FromBlock = p.Numbers[i]
		}
		p.ToBlock = max(p.ToBlock, p.Numbers[i])
	}
	for i, d := range found {
		p.TxHashes[i], p.LogIndexes[i], p.FoundHashes[i] = d.TxHash, int4(d.LogIndex), d.BlockHash
	}
	return manyDeposits(sqlc.LockDepositsOffChain(ctx, q.db, p))
}

// InsertReorg records a reorged deposit and marks it REORGED. A deposit of a sweep that has
// signed nothing yet leaves it (its money is gone; the sweep must not plan for it); one of a
// signed sweep stays, and that sweep waits until the reorg is resolved.
func (q *Queries) InsertReorg(ctx context.Context, r domain.Reorg) (domain.Reorg, error) {
	if err := sqlc.MarkDepositReorged(ctx, q.db, r.DepositID); err != nil {
		return r, err
	}
	return oneReorg(sqlc.InsertReorg(ctx, q.db, dbsqlc.InsertReorgParams{DepositID: r.DepositID, ChainID: r.ChainID,
		ForkBlock: bigint(r.ForkBlock), BlockNumber: bigint(r.BlockNumber), BlockHash: r.BlockHash, PriorStatus: r.PriorStatus,
		Reversed: Uint256(r.Reversed)}))
}

// AddReorgAction appends to a reorg's audit trail.
func (q *Queries) AddReorgAction(ctx context.Context, a domain.ReorgAction) error {
	return sqlc.AddReorgAction(ctx, q.db, dbsqlc.AddReorgActionParams{ReorgID: a.ReorgID, DepositID: a.DepositID, Action: a.Action,
		Actor: string(a.Actor), Note: a.Note})
}

// NoteReinclusion records that a reorged deposit's transfer was mined again, in a new block.
// It returns false when the deposit has no open reorg.
func (q *Queries) NoteReinclusion(ctx context.Context, depositID int64, block uint64, hash string) (bool, error) {
	n, err := sqlc.NoteReinclusion(ctx, q.db, dbsqlc.NoteReinclusionParams{DepositID: depositID, ReincludedBlock: bigint(block),
		ReincludedHash: hash})
	return n > 0, err
}

// ForgetReinclusions clears the re-inclusions in blocks from a number on (they left the chain too).
func (q *Queries) ForgetReinclusions(ctx context.Context, chainID int64, from uint64) (int64, error) {
	return sqlc.ForgetReinclusions(ctx, q.db, dbsqlc.ForgetReinclusionsParams{ChainID: chainID, FromBlock: bigint(from)})
}

// ReincludedReorgs lists the open reorgs of a chain whose transfer was mined again in a block
// up to upTo (one that reached the confirmation depth), locking them in a transaction.
func (q *Queries) ReincludedReorgs(ctx context.Context, chainID int64, upTo uint64) ([]domain.Reorg, error) {
	return manyReorgs(sqlc.ReincludedReorgs(ctx, q.db, dbsqlc.ReincludedReorgsParams{ChainID: chainID, UpTo: bigint(upTo)}))
}

// WrittenOffMinedAgain lists the write-offs of a chain whose deposit's transfer the scanner
// has since read again, in a block up to upTo still on the chain that the write-off did not
// know of (the deposit's money is back at its address).
func (q *Queries) WrittenOffMinedAgain(ctx context.Context, chainID int64, upTo uint64) ([]domain.Reorg, error) {
	return manyReorgs(sqlc.WrittenOffMinedAgain(ctx, q.db, dbsqlc.WrittenOffMinedAgainParams{ChainID: chainID, UpTo: bigint(upTo)}))
}

// BlockWrittenOff reports whether an engineer wrote off, in a reorg of the deposit before
// reorgID, the loss of the block blockHash.
func (q *Queries) BlockWrittenOff(ctx context.Context, depositID, reorgID int64, blockHash string) (bool, error) {
	return sqlc.BlockWrittenOff(ctx, q.db, dbsqlc.BlockWrittenOffParams{DepositID: depositID, ReorgID: reorgID, BlockHash: blockHash})
}

// LockOpenReorg locks a deposit's open reorg (ErrNotFound: none).
func (q *Queries) LockOpenReorg(ctx context.Context, depositID int64) (domain.Reorg, error) {
	return oneReorg(sqlc.LockOpenReorg(ctx, q.db, depositID))
}

// LatestReorg is a deposit's most recent reorg (ErrNotFound: it never had one).
func (q *Queries) LatestReorg(ctx context.Context, depositID int64) (domain.Reorg, error) {
	return oneReorg(sqlc.LatestReorg(ctx, q.db, depositID))
}

// LatestDecision is a deposit's latest reorg an engineer resolved, REINSTATE or WRITE_OFF
// (ErrNotFound: none).
func (q *Queries) LatestDecision(ctx context.Context, depositID int64) (domain.Reorg, error) {
	return oneReorg(sqlc.LatestDecision(ctx, q.db, depositID))
}

// CloseReorg records a reorg's resolution.
func (q *Queries) CloseReorg(ctx context.Context, id int64, resolution domain.ReorgResolution, actor domain.Actor, note string) (domain.Reorg, error) {
	return oneReorg(sqlc.CloseReorg(ctx, q.db, dbsqlc.CloseReorgParams{ID: id, Resolution: &resolution, ResolvedBy: string(actor),
		Note: note}))
}

// SetDepositStatus moves a reorged deposit back to a status (a resolution that counts it again).
func (q *Queries) SetDepositStatus(ctx context.Context, id int64, from, to domain.DepositStatus) (bool, error) {
	n, err := sqlc.SetDepositStatus(ctx, q.db, dbsqlc.SetDepositStatusParams{ID: id, FromStatus: from, ToStatus: to})
	return n > 0, err
}

// ListReorgs lists reorgs, newest first.
func (q *Queries) ListReorgs(ctx context.Context, f domain.ReorgFilter) ([]domain.Reorg, error) {
	return manyReorgs(sqlc.ListReorgs(ctx, q.db, dbsqlc.ListReorgsParams{OperatorIDs: f.OperatorIDs,
		IncludeResolved: f.IncludeResolved, BeforeID: f.BeforeID, Lim: rowLimit(f.Limit)}))
}

// reorgActionOf maps a deposit_reorg_actions row to the domain.
func reorgActionOf(r dbsqlc.DepositReorgAction) (domain.ReorgAction, error) {
	return domain.ReorgAction{ID: r.ID, ReorgID: r.ReorgID, DepositID: r.DepositID, Action: r.Action, Actor: domain.Actor(r.Actor),
		Note: r.Note, CreatedAt: r.CreatedAt}, nil
}

// ReorgActions lists the audit trails of reorgs, oldest first.
func (q *Queries) ReorgActions(ctx context.Context, reorgIDs []int64) ([]domain.ReorgAction, error) {
	rows, err := sqlc.ReorgActions(ctx, q.db, reorgIDs)
	return many(rows, err, reorgActionOf)
}

// OpenReorgsByChain counts the unresolved reorgs per chain.
func (q *Queries) OpenReorgsByChain(ctx context.Context) (map[int64]int64, error) {
	rows, err := sqlc.OpenReorgsByChain(ctx, q.db)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	for _, r := range rows {
		out[r.ChainID] = r.Open
	}
	return out, nil
}

// SweepMissingDeposit reports whether a sweep moves a reorged deposit whose transfer is not on
// the chain again up to upTo: its money is not at the address.
func (q *Queries) SweepMissingDeposit(ctx context.Context, sweepID int64, upTo uint64) (bool, error) {
	return sqlc.SweepMissingDeposit(ctx, q.db, dbsqlc.SweepMissingDepositParams{SweepID: sweepID, UpTo: bigint(upTo)})
}

// SweepHeldByReorg reports whether a sweep has a deposit with an open reorg: the sweep waits
// (signs, sends, tops up and credits nothing) until it is resolved.
func (q *Queries) SweepHeldByReorg(ctx context.Context, sweepID int64) (bool, error) {
	return sqlc.SweepHeldByReorg(ctx, q.db, sweepID)
}

// SweepTx is a sweep transaction mined in the books and one sweep it moved.
type SweepTx struct {
	SweepID, TxID int64
	MinedHash     string
	// MinedBlock is the block the books have it in (where it was first read mined).
	MinedBlock uint64
}

// SweepTxsMinedIn lists the sweep transactions (transfers, fee transfers, batches) mined in
// the books, successfully, in a block from `from` to `to`, once per sweep each moved, in
// transaction order.
func (q *Queries) SweepTxsMinedIn(ctx context.Context, chainID int64, from, to uint64) ([]SweepTx, error) {
	rows, err := sqlc.SweepTxsMinedIn(ctx, q.db, dbsqlc.SweepTxsMinedInParams{ChainID: chainID, FromBlock: bigint(from),
		ToBlock: bigint(to)})
	if err != nil {
		return nil, err
	}
	out := make([]SweepTx, len(rows))
	for i, r := range rows {
		out[i] = SweepTx{SweepID: r.SweepID, TxID: r.TxID, MinedHash: r.MinedHash, MinedBlock: chainUint(r.MinedBlock)}
	}
	return out, nil
}

// SweepTxsMinedFrom is SweepTxsMinedIn from a block on, every one above it: what a rollback
// there takes away, however high the books have it (the new branch may be shorter than the
// old one was).
func (q *Queries) SweepTxsMinedFrom(ctx context.Context, chainID int64, from uint64) ([]SweepTx, error) {
	return q.SweepTxsMinedIn(ctx, chainID, from, math.MaxInt64)
}

// LockCoveredDeposits locks the deposits (SWEEPING, CREDITED) of the given sweeps, credited from
// their address's carry, in blocks below from: a rollback there took away the sweep that carried.
func (q *Queries) LockCoveredDeposits(ctx context.Context, chainID int64, from uint64, sweepIDs []int64) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.LockCoveredDeposits(ctx, q.db, dbsqlc.LockCoveredDepositsParams{ChainID: chainID,
		FromBlock: bigint(from), SweepIds: sweepIDs}))
}
