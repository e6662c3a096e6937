package store

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

func thresholdOf(r dbsqlc.WalletThreshold) domain.WalletThreshold {
	return domain.WalletThreshold{ChainID: r.ChainID, Wallet: r.Wallet, Currency: r.Currency, Amount: r.Amount.Decimal,
		Removed: !r.Amount.Valid, SetBy: domain.Actor(r.SetBy), Reason: r.Reason, SetAt: r.SetAt}
}

// InsertWalletThreshold records a threshold setting (or, with Removed, its removal).
func (q *Queries) InsertWalletThreshold(ctx context.Context, t domain.WalletThreshold) (domain.WalletThreshold, error) {
	r, err := sqlc.InsertWalletThreshold(ctx, q.db, dbsqlc.InsertWalletThresholdParams{ChainID: t.ChainID, Wallet: t.Wallet,
		Currency: t.Currency, Amount: decimal.NullDecimal{Decimal: t.Amount, Valid: !t.Removed}, SetBy: string(t.SetBy), Reason: t.Reason})
	return thresholdOf(r), err
}

// WalletThresholds lists the thresholds in force.
func (q *Queries) WalletThresholds(ctx context.Context) ([]domain.WalletThreshold, error) {
	rows, err := sqlc.WalletThresholds(ctx, q.db)
	out := make([]domain.WalletThreshold, 0, len(rows))
	for _, r := range rows {
		out = append(out, thresholdOf(r))
	}
	return out, err
}
