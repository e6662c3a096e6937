package store

import (
	"context"
	"math/big"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// Carry is money a sweep moved from a deposit address for no deposit of it (deposit/carry.go):
// to the bankroll and to the fee address, in the asset's smallest unit.
type Carry struct {
	Bankroll, Fee *big.Int
}

// Kinds of sweep_carries rows: carried for the address's later deposits, or taken by a sweep
// that credited them.
const (
	CarryCarried = "CARRIED"
	CarryTaken   = "TAKEN"
)

// CarryBalance is what is carried for an address's deposits of currency and not yet taken,
// other than by sweep except's own rows (0: none).
func (q *Queries) CarryBalance(ctx context.Context, chainID int64, address, currency string, except int64) (Carry, error) {
	r, err := sqlc.CarryBalance(ctx, q.db, dbsqlc.CarryBalanceParams{ChainID: chainID, Address: address, Currency: currency,
		ExceptSweep: except})
	return Carry{Bankroll: r.Bankroll.BigInt(), Fee: r.Fee.BigInt()}, err
}

// CarryBalanceBefore is CarryBalance as batched sweep before found it when it was planned: the
// rows of the sweeps before it.
func (q *Queries) CarryBalanceBefore(ctx context.Context, chainID int64, address, currency string, before int64) (Carry, error) {
	r, err := sqlc.CarryBalanceBefore(ctx, q.db, dbsqlc.CarryBalanceBeforeParams{ChainID: chainID, Address: address,
		Currency: currency, BeforeSweep: before})
	return Carry{Bankroll: r.Bankroll.BigInt(), Fee: r.Fee.BigInt()}, err
}

// InsertCarry records what sweepID carried (kind CarryCarried, amounts not negative) or took
// (CarryTaken, amounts not positive) of an address's currency; once per sweep, asset and kind.
func (q *Queries) InsertCarry(ctx context.Context, chainID int64, address, currency string, sweepID int64, kind string, c Carry) error {
	return sqlc.InsertCarry(ctx, q.db, dbsqlc.InsertCarryParams{ChainID: chainID, Address: address, Currency: currency,
		SweepID: sweepID, Kind: kind, Bankroll: Uint256(c.Bankroll), Fee: Uint256(c.Fee)})
}

// DetachUncredited takes a finished sweep's written-off deposits (ids, REORGED) out of it.
func (q *Queries) DetachUncredited(ctx context.Context, sweepID int64, ids []int64) (int64, error) {
	return sqlc.DetachUncredited(ctx, q.db, dbsqlc.DetachUncreditedParams{SweepID: sweepID, Ids: ids})
}

// SweptUncredited reports whether a finished batched sweep moved money in written-off deposit
// id's name, not crediting it (DetachUncredited), and carried nothing for it (a batch settled
// before batches carried): no carry stands for it.
func (q *Queries) SweptUncredited(ctx context.Context, id int64) (bool, error) {
	return sqlc.SweptUncredited(ctx, q.db, id)
}

// SweepsCoveredBy lists the done sweeps credited from their address's carry with no
// transaction of their own (a batched one in no batch, an unbatched one with no transfer) that
// took a carry after one of sweepIDs carried to their address.
func (q *Queries) SweepsCoveredBy(ctx context.Context, sweepIDs []int64) ([]int64, error) {
	return sqlc.SweepsCoveredBy(ctx, q.db, sweepIDs)
}

// CarrySources lists the sweeps that carried to address before sweep beforeSweep.
func (q *Queries) CarrySources(ctx context.Context, chainID int64, address string, beforeSweep int64) ([]int64, error) {
	return sqlc.CarrySources(ctx, q.db, dbsqlc.CarrySourcesParams{ChainID: chainID, Address: address, BeforeSweep: beforeSweep})
}
