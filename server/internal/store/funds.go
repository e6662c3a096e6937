package store

import (
	"context"
	"errors"
	"math/big"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// fundsOf maps an operator_funds row to the domain.
func fundsOf(r dbsqlc.OperatorFund) (domain.Funds, error) {
	return domain.Funds{OperatorID: r.OperatorID, ChainID: r.ChainID, Currency: r.Currency, Available: r.Available.BigInt(),
		Reserved: r.Reserved.BigInt(), UpdatedAt: r.UpdatedAt}, nil
}

// MoveFunds applies an entry to an operator's funds and records it, in the caller's
// transaction. It returns ok false, writing nothing, when a debit would take the funds below
// zero (not enough available, or more released or settled than reserved) unless the entry may
// overdraw; funds holds them as they are then. A credit is never refused, even while available
// is below zero after a reorg (it covers the shortfall first). A repeated DEPOSIT, TREASURY or
// SETTLE entry for the same ref is refused by the database (a unique violation).
func (q *Queries) MoveFunds(ctx context.Context, e domain.FundEntry) (funds domain.Funds, ok bool, err error) {
	if err := sqlc.EnsureFunds(ctx, q.db, dbsqlc.EnsureFundsParams{OperatorID: e.OperatorID, ChainID: e.ChainID,
		Currency: e.Currency}); err != nil {
		return funds, false, err
	}
	r, err := sqlc.ApplyFunds(ctx, q.db, dbsqlc.ApplyFundsParams{OperatorID: e.OperatorID, ChainID: e.ChainID, Currency: e.Currency,
		AvailableDelta: Uint256(e.AvailableDelta), ReservedDelta: Uint256(e.ReservedDelta), Overdraw: e.Overdraw})
	if err = notFound(err); errors.Is(err, ErrNotFound) {
		funds, err = q.GetFunds(ctx, e.OperatorID, e.ChainID, e.Currency)
		return funds, false, err
	}
	if err != nil {
		return funds, false, err
	}
	funds, _ = fundsOf(r)
	err = sqlc.InsertFundEntry(ctx, q.db, dbsqlc.InsertFundEntryParams{OperatorID: e.OperatorID, ChainID: e.ChainID,
		Currency: e.Currency, Kind: e.Kind, AvailableDelta: Uint256(e.AvailableDelta), ReservedDelta: Uint256(e.ReservedDelta),
		Ref: e.Ref, Actor: string(e.Actor), Note: e.Note})
	return funds, err == nil, err
}

// ReservedFor is what entries with a ref hold reserved now (a payout's reservation).
func (q *Queries) ReservedFor(ctx context.Context, operatorID, ref string) (*big.Int, error) {
	sum, err := sqlc.ReservedFor(ctx, q.db, dbsqlc.ReservedForParams{OperatorID: operatorID, Ref: ref})
	return sum.BigInt(), err
}

// GetFunds returns an operator's funds in one asset (zero when it never had any).
func (q *Queries) GetFunds(ctx context.Context, operatorID string, chainID int64, currency string) (domain.Funds, error) {
	r, err := sqlc.GetFunds(ctx, q.db, dbsqlc.GetFundsParams{OperatorID: operatorID, ChainID: chainID, Currency: currency})
	if err = notFound(err); errors.Is(err, ErrNotFound) {
		return domain.Funds{OperatorID: operatorID, ChainID: chainID, Currency: currency, Available: new(big.Int), Reserved: new(big.Int)}, nil
	}
	if err != nil {
		return domain.Funds{}, err
	}
	return fundsOf(r)
}

// ListFunds lists the funds of the given operators (nil: every operator), by operator, chain
// and currency.
func (q *Queries) ListFunds(ctx context.Context, operatorIDs []string) ([]domain.Funds, error) {
	rows, err := sqlc.ListFunds(ctx, q.db, operatorIDs)
	return many(rows, err, fundsOf)
}

// FundTotal is the sum of every operator's funds in one asset of one chain.
type FundTotal struct {
	ChainID   int64
	Currency  string
	Available *big.Int
	Reserved  *big.Int
	// Shortfall is what operators whose available is below zero (a reorg reversed funds they
	// had used) owe back, as a positive number. Available sums only the funds above zero: a
	// shortfall is not cash, so it never offsets what the service owes other operators.
	Shortfall *big.Int
}

// PayoutInFlight is a reserved payout not settled yet whose transaction may have paid: part of
// Reserved, and no longer in the hot wallet once that transaction is on the chain.
type PayoutInFlight struct {
	ChainID  int64
	Currency string
	Amount   *big.Int
	// Mined is the block the payout job recorded it mined in; 0 while it is recorded pending.
	Mined uint64
	// Hashes are those of its attempts that pay (not its cancels).
	Hashes []string
}

// FundBooks reads every operator's funds summed per chain and asset, and the payouts in flight
// they reserve, in one snapshot: a payout settling between two reads would otherwise be
// counted in neither or both.
func (q *Queries) FundBooks(ctx context.Context) (totals []FundTotal, inFlight []PayoutInFlight, err error) {
	read := func(db DBTX) error {
		totals, err = fundTotals(ctx, db)
		if err != nil {
			return err
		}
		inFlight, err = payoutsInFlight(ctx, db)
		return err
	}
	if b, ok := q.db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		err = pgx.BeginTxFunc(ctx, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return read(tx) })
		return totals, inFlight, err
	}
	return totals, inFlight, read(q.db) // already in the caller's transaction
}

func fundTotals(ctx context.Context, db DBTX) ([]FundTotal, error) {
	rows, err := sqlc.FundTotals(ctx, db)
	if err != nil {
		return nil, err
	}
	return mapAll(rows, func(r dbsqlc.FundTotalsRow) (FundTotal, error) {
		return FundTotal{ChainID: r.ChainID, Currency: r.Currency, Available: r.Available.BigInt(), Reserved: r.Reserved.BigInt(),
			Shortfall: r.Shortfall.BigInt()}, nil
	})
}

func payoutsInFlight(ctx context.Context, db DBTX) ([]PayoutInFlight, error) {
	rows, err := sqlc.PayoutsInFlight(ctx, db)
	if err != nil {
		return nil, err
	}
	return mapAll(rows, func(r dbsqlc.PayoutsInFlightRow) (PayoutInFlight, error) {
		p := PayoutInFlight{ChainID: r.ChainID, Currency: r.Currency, Amount: r.Amount.BigInt(), Hashes: r.Hashes}
		if r.State == domain.ChainTxMined && r.MinedBlock > 0 {
			p.Mined = uint64(r.MinedBlock)
		}
		return p, nil
	})
}

// RecordedDecimals is the number of decimals an asset's deposits or withdrawals were recorded
// with; ok is false when none was.
func (q *Queries) RecordedDecimals(ctx context.Context, chainID int64, currency string) (decimals int32, ok bool, err error) {
	d, err := sqlc.RecordedDecimals(ctx, q.db, dbsqlc.RecordedDecimalsParams{ChainID: chainID, Currency: currency})
	return d, err == nil && d >= 0, err
}

// fundEntryOf maps a fund_entries row to the domain.
func fundEntryOf(r dbsqlc.FundEntry) (domain.FundEntry, error) {
	return domain.FundEntry{ID: r.ID, OperatorID: r.OperatorID, ChainID: r.ChainID, Currency: r.Currency, Kind: r.Kind,
		AvailableDelta: r.AvailableDelta.BigInt(), ReservedDelta: r.ReservedDelta.BigInt(), Ref: r.Ref, Actor: domain.Actor(r.Actor),
		Note: r.Note, CreatedAt: r.CreatedAt}, nil
}

// FundEntries lists an operator's fund movements, newest first.
func (q *Queries) FundEntries(ctx context.Context, operatorID string, limit int) ([]domain.FundEntry, error) {
	rows, err := sqlc.FundEntries(ctx, q.db, dbsqlc.FundEntriesParams{OperatorID: operatorID, Lim: rowLimit(limit)})
	return many(rows, err, fundEntryOf)
}
