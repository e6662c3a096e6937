package store

import (
	"context"
	"math/big"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

func scanFunds(row pgx.Row) (domain.Funds, error) {
	var f domain.Funds
	var avail, res decimal.Decimal
	err := row.Scan(&f.OperatorID, &f.ChainID, &f.Currency, &avail, &res, &f.UpdatedAt)
	f.Available, f.Reserved = avail.BigInt(), res.BigInt()
	return f, notFound(err)
}

const fundsColumns = `operator_id::text, chain_id, currency, available, reserved, updated_at`

// MoveFunds applies an entry to an operator's funds and records it, in the caller's
// transaction. It returns ok false, writing nothing, when a debit would take the funds below
// zero (not enough available, or more released or settled than reserved) unless the entry may
// overdraw; funds holds them as they are then. A credit is never refused, even while available
// is below zero after a reorg (it covers the shortfall first). A repeated DEPOSIT, TREASURY or
// SETTLE entry for the same ref is refused by the database (a unique violation).
func (q *Queries) MoveFunds(ctx context.Context, e domain.FundEntry) (funds domain.Funds, ok bool, err error) {
	if _, err := q.db.Exec(ctx, `INSERT INTO operator_funds (operator_id, chain_id, currency) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, e.OperatorID, e.ChainID, e.Currency); err != nil {
		return funds, false, err
	}
	funds, err = scanFunds(q.db.QueryRow(ctx, `UPDATE operator_funds SET available = available + $4, reserved = reserved + $5,
		updated_at = now()
		WHERE operator_id = $1 AND chain_id = $2 AND currency = $3
		  AND ($6 OR $4::numeric >= 0 OR available + $4 >= 0) AND reserved + $5 >= 0
		RETURNING `+fundsColumns, e.OperatorID, e.ChainID, e.Currency, Uint256(e.AvailableDelta), Uint256(e.ReservedDelta),
		e.Overdraw))
	if err == ErrNotFound {
		funds, err = q.GetFunds(ctx, e.OperatorID, e.ChainID, e.Currency)
		return funds, false, err
	}
	if err != nil {
		return funds, false, err
	}
	_, err = q.db.Exec(ctx, `INSERT INTO fund_entries (operator_id, chain_id, currency, kind, available_delta, reserved_delta, ref,
		actor, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, e.OperatorID, e.ChainID, e.Currency, e.Kind,
		Uint256(e.AvailableDelta), Uint256(e.ReservedDelta), e.Ref, e.Actor, e.Note)
	return funds, err == nil, err
}

// ReservedFor is what entries with a ref hold reserved now (a payout's reservation).
func (q *Queries) ReservedFor(ctx context.Context, operatorID, ref string) (*big.Int, error) {
	var sum decimal.Decimal
	err := q.db.QueryRow(ctx, `SELECT coalesce(sum(reserved_delta), 0) FROM fund_entries WHERE operator_id = $1 AND ref = $2`,
		operatorID, ref).Scan(&sum)
	return sum.BigInt(), err
}

// GetFunds returns an operator's funds in one asset (zero when it never had any).
func (q *Queries) GetFunds(ctx context.Context, operatorID string, chainID int64, currency string) (domain.Funds, error) {
	f, err := scanFunds(q.db.QueryRow(ctx, `SELECT `+fundsColumns+` FROM operator_funds
		WHERE operator_id = $1 AND chain_id = $2 AND currency = $3`, operatorID, chainID, currency))
	if err == ErrNotFound {
		return domain.Funds{OperatorID: operatorID, ChainID: chainID, Currency: currency, Available: new(big.Int), Reserved: new(big.Int)}, nil
	}
	return f, err
}

// ListFunds lists the funds of the given operators (nil: every operator), by operator, chain
// and currency.
func (q *Queries) ListFunds(ctx context.Context, operatorIDs []string) ([]domain.Funds, error) {
	rows, err := q.db.Query(ctx, `SELECT `+fundsColumns+` FROM operator_funds
		WHERE $1::uuid[] IS NULL OR operator_id = ANY($1::uuid[]) ORDER BY operator_id, chain_id, currency`, operatorIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Funds, error) { return scanFunds(r) })
}

// FundTotal is the sum of every operator's funds in one asset of one chain.
type FundTotal struct {
	ChainID   int64
	Currency  string
	Available *big.Int
	Reserved  *big.Int
	// PaidOut is the part of Reserved whose payout transaction is already mined (it left the
	// hot wallet) but not confirmed yet, so not settled.
	PaidOut *big.Int
	// Shortfall is what operators whose available is below zero (a reorg reversed funds they
	// had used) owe back, as a positive number. Available sums only the funds above zero: a
	// shortfall is not cash, so it never offsets what the service owes other operators.
	Shortfall *big.Int
}

// FundTotals sums every operator's funds per chain and asset.
func (q *Queries) FundTotals(ctx context.Context) ([]FundTotal, error) {
	rows, err := q.db.Query(ctx, `
		SELECT f.chain_id, f.currency, sum(greatest(f.available, 0)), sum(f.reserved),
			coalesce((SELECT sum(w.crypto_amount) FROM withdrawals w JOIN chain_txs t
				ON t.purpose = 'payout' AND t.ref = 'withdrawal:' || w.id::text AND t.state = 'mined'
				WHERE w.chain_id = f.chain_id AND w.currency = f.currency AND w.status <> 'COMPLETED'
				  AND w.payout_queued_at IS NOT NULL), 0),
			-sum(least(f.available, 0))
		FROM operator_funds f GROUP BY f.chain_id, f.currency ORDER BY f.chain_id, f.currency`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (FundTotal, error) {
		var t FundTotal
		var a, res, paid, short decimal.Decimal
		err := r.Scan(&t.ChainID, &t.Currency, &a, &res, &paid, &short)
		t.Available, t.Reserved, t.PaidOut, t.Shortfall = a.BigInt(), res.BigInt(), paid.BigInt(), short.BigInt()
		return t, err
	})
}

// FundEntries lists an operator's fund movements, newest first.
func (q *Queries) FundEntries(ctx context.Context, operatorID string, limit int) ([]domain.FundEntry, error) {
	rows, err := q.db.Query(ctx, `SELECT id, operator_id::text, chain_id, currency, kind, available_delta, reserved_delta, ref, actor,
		note, created_at FROM fund_entries WHERE operator_id = $1 ORDER BY id DESC LIMIT $2`, operatorID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.FundEntry, error) {
		var e domain.FundEntry
		var a, res decimal.Decimal
		err := r.Scan(&e.ID, &e.OperatorID, &e.ChainID, &e.Currency, &e.Kind, &a, &res, &e.Ref, &e.Actor, &e.Note, &e.CreatedAt)
		e.AvailableDelta, e.ReservedDelta = a.BigInt(), res.BigInt()
		return e, err
	})
}
