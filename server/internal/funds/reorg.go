package funds

import (
	"context"
	"fmt"
	"math/big"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Reverse takes a credited deposit's amount back out of its operator's available funds (a
// REORG entry), in the caller's transaction: its block left the chain, so the money never
// reached the bankroll on the chain that counts. It applies even when the operator already
// used the funds: available then goes below zero, a shortfall that refuses every payout until
// deposits, treasury payments or an adjustment cover it. It returns the funds after the entry.
func Reverse(ctx context.Context, tx pgx.Tx, d domain.Deposit, amount *big.Int, note string) (domain.Funds, error) {
	f, ok, err := store.New(tx).MoveFunds(ctx, domain.FundEntry{OperatorID: d.OperatorID, ChainID: d.ChainID, Currency: d.Currency,
		Kind: domain.FundReorg, AvailableDelta: new(big.Int).Neg(amount), ReservedDelta: new(big.Int), Ref: fmt.Sprintf("deposit:%d", d.ID),
		Actor: domain.System, Note: note, Overdraw: true})
	if err == nil && !ok {
		err = fmt.Errorf("funds: reversing deposit %d refused", d.ID)
	}
	return f, err
}

// Reinstate gives a reorged deposit's reversed amount back to its operator's available funds
// (a REINSTATE entry), in the caller's transaction.
func Reinstate(ctx context.Context, tx pgx.Tx, d domain.Deposit, amount *big.Int, actor domain.Actor, note string) (domain.Funds, error) {
	f, ok, err := store.New(tx).MoveFunds(ctx, domain.FundEntry{OperatorID: d.OperatorID, ChainID: d.ChainID, Currency: d.Currency,
		Kind: domain.FundReinstate, AvailableDelta: amount, ReservedDelta: new(big.Int), Ref: fmt.Sprintf("deposit:%d", d.ID),
		Actor: actor, Note: note})
	if err == nil && !ok {
		err = fmt.Errorf("funds: reinstating deposit %d refused", d.ID)
	}
	return f, err
}

// ReportUnresolvedReorgs sets coffer_deposits_reorged_unresolved for every configured chain
// from the database, so every replica exports the same number.
func ReportUnresolvedReorgs(ctx context.Context, db store.DBTX, chains *chain.Registry) error {
	open, err := store.New(db).OpenReorgsByChain(ctx)
	if err != nil {
		return err
	}
	for _, n := range chains.Networks() {
		metrics.DepositsReorgedUnresolved.WithLabelValues(strconv.FormatInt(n.ChainID, 10)).Set(float64(open[n.ChainID]))
		delete(open, n.ChainID)
	}
	for chainID, count := range open { // chains no longer configured
		metrics.DepositsReorgedUnresolved.WithLabelValues(strconv.FormatInt(chainID, 10)).Set(float64(count))
	}
	return nil
}
