package store

import (
	"context"
	"math/big"
	"slices"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// sweepOf maps a sweeps row to the domain.
func sweepOf(r dbsqlc.Sweep) domain.Sweep {
	return domain.Sweep{ID: r.ID, ChainID: r.ChainID, Address: r.Address, Status: r.Status, CreatedAt: r.CreatedAt, MinedAt: r.MinedAt}
}

// oneSweep maps a single-row sweep query's result.
func oneSweep(r dbsqlc.Sweep, err error) (domain.Sweep, error) {
	if err != nil {
		return domain.Sweep{}, notFound(err)
	}
	return sweepOf(r), nil
}

// LockAddress serialises the sweep planning of one deposit address until the transaction ends.
func (q *Queries) LockAddress(ctx context.Context, chainID int64, address string) error {
	return sqlc.LockAddress(ctx, q.db, dbsqlc.LockAddressParams{ChainID: chainID, Address: address})
}

// OpenSweep returns the address's sweep that is not done (ErrNotFound: none).
func (q *Queries) OpenSweep(ctx context.Context, chainID int64, address string) (domain.Sweep, error) {
	return oneSweep(sqlc.OpenSweep(ctx, q.db, dbsqlc.OpenSweepParams{ChainID: chainID, Address: address}))
}

// LockSweep loads a sweep and holds its row until the transaction ends.
func (q *Queries) LockSweep(ctx context.Context, id int64) (domain.Sweep, error) {
	return oneSweep(sqlc.LockSweep(ctx, q.db, id))
}

// InsertSweep opens a sweep of an address and attaches the deposits to it.
func (q *Queries) InsertSweep(ctx context.Context, chainID int64, address string, depositIDs []int64) (domain.Sweep, error) {
	sw, err := oneSweep(sqlc.InsertSweep(ctx, q.db, dbsqlc.InsertSweepParams{ChainID: chainID, Address: address}))
	if err != nil {
		return sw, err
	}
	return sw, sqlc.AttachSweepDeposits(ctx, q.db, dbsqlc.AttachSweepDepositsParams{SweepID: sw.ID, DepositIds: depositIDs})
}

// SetSweepStatus moves a sweep on: SENDING once its transactions are stored, DONE once its
// deposits are credited.
func (q *Queries) SetSweepStatus(ctx context.Context, id int64, status domain.SweepStatus) error {
	return sqlc.SetSweepStatus(ctx, q.db, dbsqlc.SetSweepStatusParams{ID: id, Status: status})
}

// MarkSweepMined records when every transaction of a sweep was first seen mined (the rate wait
// of its credit counts from then).
func (q *Queries) MarkSweepMined(ctx context.Context, id int64) (time.Time, error) {
	at, err := sqlc.MarkSweepMined(ctx, q.db, id)
	if at == nil { // only with err: the statement sets it
		return time.Time{}, err
	}
	return *at, err
}

// DueDeposits lists the address's confirmed deposits no sweep has taken yet (SWEEPING without a
// sweep, and BELOW_MINIMUM), oldest first: UnsweptDeposits without the CONFIRMING ones.
func (q *Queries) DueDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	unswept, err := q.UnsweptDeposits(ctx, chainID, address)
	return slices.DeleteFunc(unswept, func(d domain.Deposit) bool { return d.Status == domain.DepositConfirming }), err
}

// UnsweptDeposits lists the address's deposits no sweep has taken yet, confirming ones too.
func (q *Queries) UnsweptDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.UnsweptDeposits(ctx, q.db, dbsqlc.UnsweptDepositsParams{ChainID: chainID, Address: address}))
}

// SweepDeposits lists the deposits of a sweep, oldest first.
func (q *Queries) SweepDeposits(ctx context.Context, sweepID int64) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.SweepDeposits(ctx, q.db, sweepID))
}

// MarkBelowMinimum parks confirmed deposits that are too small to sweep alone.
func (q *Queries) MarkBelowMinimum(ctx context.Context, ids []int64) error {
	return sqlc.MarkBelowMinimum(ctx, q.db, ids)
}

// UnsweptNative is the native currency at an address that belongs to deposits no mined sweep
// has moved yet, other than those of sweep except (0: none): confirming, waiting or parked
// deposits. A sweep's gas must leave it there.
func (q *Queries) UnsweptNative(ctx context.Context, chainID int64, address string, except int64) (*big.Int, error) {
	sum, err := sqlc.UnsweptNative(ctx, q.db, dbsqlc.UnsweptNativeParams{ChainID: chainID, Address: address, ExceptSweep: except})
	return sum.BigInt(), err
}

// PendingTopUps lists the gas top-ups to an address that are not mined yet.
func (q *Queries) PendingTopUps(ctx context.Context, chainID int64, address, purpose string) ([]int64, error) {
	return ids(sqlc.PendingTopUps(ctx, q.db, dbsqlc.PendingTopUpsParams{ChainID: chainID, ToAddress: address, Purpose: purpose}))
}

// CountChainTxs counts the transactions of a purpose whose ref starts with prefix.
func (q *Queries) CountChainTxs(ctx context.Context, purpose, prefix string) (int, error) {
	n, err := sqlc.CountChainTxs(ctx, q.db, dbsqlc.CountChainTxsParams{Purpose: purpose, Prefix: prefix})
	return int(n), err
}
