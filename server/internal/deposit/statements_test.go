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

// seeder makes a database of its own with an operator, and returns its queries and seed, which
// stores a deposit of the operator in a status on a chain of its own (the bulk statements work
// per chain), in block 10 (hash 0xb10), at logIndex.
func seeder(t *testing.T, logIndex int64) (*store.Queries, func(domain.DepositStatus) domain.Deposit) {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t)
	q := store.New(pool)
	operatorID := testfactory.Operator(ctx, t, pool, nil).ID
	chainID := int64(9000)
	return q, func(status domain.DepositStatus) domain.Deposit {
		t.Helper()
		chainID++
		tx := fmt.Sprintf("0x%064x", chainID)
		d, _, err := q.UpsertDeposit(ctx, domain.Deposit{OperatorID: operatorID, ExternalUserID: "u", ChainID: chainID, TxHash: tx,
			LogIndex: logIndex, BlockNumber: 10, BlockHash: "0xb10", Address: fmt.Sprintf("0xaddr%d", chainID), Currency: "ETH",
			Decimals: 18, GrossAmount: big.NewInt(1000), Status: status, IdempotencyKey: fmt.Sprintf("%d:%s:%d", chainID, tx, logIndex)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// TestStatementsFollowTheTable runs each store statement that moves deposits in bulk (its
// WHERE clause picks the statuses) on a deposit in every status, and checks that it moves
// exactly the deposits the table moves, to the status the table says: the table and the SQL
// cannot drift apart.
func TestStatementsFollowTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, seed := seeder(t, -1)
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
		{"OrphanDeposits", deposit.Orphan, func(d domain.Deposit) error {
			_, err := q.OrphanDeposits(ctx, []int64{d.ID})
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

// TestLockDepositsOffChainFollowsTheTable checks the scan pass's lookup of deposits whose block
// left the chain (LockDepositsOffChain) on a deposit in every status, recorded in block 10:
// it selects exactly those the table orphans or reorgs (the pass orphans or reorgs each one it
// selects), by either sign, a block read at that height under another hash or the transfer
// found in another block, and never one the pass found where it was recorded.
func TestLockDepositsOffChainFollowsTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, seed := seeder(t, 2)
	at := func(d domain.Deposit, number uint64, hash string) domain.Deposit {
		d.BlockNumber, d.BlockHash = number, hash
		return d
	}
	signs := []struct {
		name   string
		blocks []store.BlockRef
		found  func(d domain.Deposit) []domain.Deposit
		gone   bool
	}{
		{"another block at its height", []store.BlockRef{{Number: 9, Hash: "0xb9"}, {Number: 10, Hash: "0xother"}}, nil, true},
		{"its transfer in another block", []store.BlockRef{{Number: 8, Hash: "0xb8"}},
			func(d domain.Deposit) []domain.Deposit { return []domain.Deposit{at(d, 8, "0xb8")} }, true},
		{"its block read, its transfer in it", []store.BlockRef{{Number: 10, Hash: "0xb10"}},
			func(d domain.Deposit) []domain.Deposit { return []domain.Deposit{at(d, 10, "0xb10")} }, false},
		{"another height read", []store.BlockRef{{Number: 11, Hash: "0xother"}}, nil, false},
	}
	for _, sign := range signs {
		for _, from := range domain.DepositStatuses() {
			d := seed(from)
			var found []domain.Deposit
			if sign.found != nil {
				found = sign.found(d)
			}
			gone, err := q.LockDepositsOffChain(ctx, d.ChainID, sign.blocks, found)
			if err != nil {
				t.Fatal(err)
			}
			want := sign.gone && (deposit.Moves(from, deposit.Orphan) || deposit.Moves(from, deposit.Reorg))
			if got := len(gone) == 1 && gone[0].ID == d.ID; got != want || len(gone) > 1 {
				t.Errorf("%s, a %s deposit: selected %v, want %v", sign.name, from, got, want)
			}
		}
	}
	// An engineer reinstated a deposit whose block was found gone: it keeps that block, and is
	// not found gone again.
	d := seed(domain.DepositCredited)
	r, err := q.InsertReorg(ctx, domain.Reorg{DepositID: d.ID, ChainID: d.ChainID, ForkBlock: 9, BlockNumber: 10, BlockHash: d.BlockHash,
		PriorStatus: d.Status, Reversed: new(big.Int)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.SetDepositStatus(ctx, d.ID, domain.DepositReorged, domain.DepositCredited); err != nil {
		t.Fatal(err)
	}
	if _, err := q.CloseReorg(ctx, r.ID, domain.ReorgReinstate, "t", "paid by wire"); err != nil {
		t.Fatal(err)
	}
	if gone, err := q.LockDepositsOffChain(ctx, d.ChainID, []store.BlockRef{{Number: 10, Hash: "0xother"}}, nil); err != nil || len(gone) != 0 {
		t.Fatalf("a reinstated deposit found gone again: %d, %v", len(gone), err)
	}
}
