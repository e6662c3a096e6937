package deposit_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestStatementsFollowTheTable runs each store statement that moves deposits in bulk (its
// WHERE clause picks the statuses) on a deposit in every status, and checks that it moves
// exactly the deposits the table moves, to the status the table says: the table and the SQL
// cannot drift apart.
func TestStatementsFollowTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	q := store.New(pool)
	op := testfactory.Operator(ctx, t, pool, nil)
	chainID := int64(9000)
	// seed stores a deposit in status on a chain of its own (the bulk statements work per
	// chain), in block 10.
	seed := func(status domain.DepositStatus) domain.Deposit {
		chainID++
		tx := fmt.Sprintf("0x%064x", chainID)
		d, _, err := q.UpsertDeposit(ctx, domain.Deposit{OperatorID: op.ID, ExternalUserID: "u", ChainID: chainID, TxHash: tx,
			LogIndex: -1, BlockNumber: 10, BlockHash: "0xb10", Address: fmt.Sprintf("0xaddr%d", chainID), Currency: "ETH", Decimals: 18,
			GrossAmount: big.NewInt(1000), Status: status, IdempotencyKey: fmt.Sprintf("%d:%s:-1", chainID, tx)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	statements := []struct {
		name  string
		event deposit.Event
		run   func(d domain.Deposit) error
	}{
		{"UpsertDeposit (mined again, in block 11)", deposit.Mined, func(d domain.Deposit) error {
			d.BlockNumber, d.BlockHash, d.Status = 11, "0xb11", domain.DepositConfirming
			_, _, err := q.UpsertDeposit(ctx, d)
			return err
		}},
		{"ConfirmDeposits", deposit.Confirm, func(d domain.Deposit) error {
			_, err := q.ConfirmDeposits(ctx, d.ChainID, 10)
			return err
		}},
		{"ConfirmDeposit (replay)", deposit.Confirm, func(d domain.Deposit) error { return q.ConfirmDeposit(ctx, d.ID) }},
		{"OrphanDepositsFrom", deposit.Orphan, func(d domain.Deposit) error {
			_, err := q.OrphanDepositsFrom(ctx, d.ChainID, 10)
			return err
		}},
		{"OrphanChainDeposits", deposit.Orphan, func(d domain.Deposit) error {
			_, err := q.OrphanChainDeposits(ctx, d.ChainID)
			return err
		}},
		{"MarkBelowMinimum", deposit.Park, func(d domain.Deposit) error { return q.MarkBelowMinimum(ctx, []int64{d.ID}) }},
		{"InsertSweep", deposit.Take, func(d domain.Deposit) error {
			_, err := q.InsertSweep(ctx, d.ChainID, d.Address, false, []int64{d.ID})
			return err
		}},
		{"CreditDeposit", deposit.Credit, func(d domain.Deposit) error {
			_, err := q.CreditDeposit(ctx, d.ID, store.Credit{FeeAmount: big.NewInt(1), Amount: big.NewInt(999), FiatCurrency: "USD",
				Unpriced: true})
			if errors.Is(err, store.ErrNotFound) {
				return nil // not SWEEPING: nothing credited
			}
			return err
		}},
		{"LockSettledDepositsFrom + InsertReorg", deposit.Reorg, func(d domain.Deposit) error {
			settled, err := q.LockSettledDepositsFrom(ctx, d.ChainID, 10)
			for _, s := range settled {
				if _, err := q.InsertReorg(ctx, domain.Reorg{DepositID: s.ID, ChainID: s.ChainID, ForkBlock: 9, BlockNumber: 10,
					BlockHash: s.BlockHash, PriorStatus: s.Status, Reversed: new(big.Int)}); err != nil {
					return err
				}
			}
			return err
		}},
	}
	for _, st := range statements {
		for _, from := range domain.DepositStatuses() {
			d := seed(from)
			if err := st.run(d); err != nil {
				t.Fatalf("%s on %s: %v", st.name, from, err)
			}
			got, err := q.GetDeposit(ctx, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := from // refused by the table: the statement must leave it alone
			if to, err := deposit.Next(from, st.event); err == nil {
				want = to
			}
			if got.Status != want {
				t.Errorf("%s on a %s deposit: %s; the table says %s (%s)", st.name, from, got.Status, want, st.event)
			}
		}
	}
}
