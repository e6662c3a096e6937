package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// twoDepositsInOneSweep pays 1 ETH to addr from a new user, then 2 ETH from second in the
// next block, and waits until one sweep has credited both. parent is the first's block: a
// fork there keeps the first transfer and takes the second's and the sweep away.
func (e *env) twoDepositsInOneSweep(addr common.Address, second user) (d1, d2 domain.Deposit, parent *types.Header) {
	e.t.Helper()
	kept := e.send(e.newUser(), 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(kept)
	parent = e.latestHeader()
	other := e.send(second, 0, addr, testfactory.Ether(2), nil, 2)
	e.mine(other)
	e.confirm()
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	d1, d2 = e.deposit(e.findDeposit(kept.Hash())), e.deposit(e.findDeposit(other.Hash()))
	if d1.SweepID == 0 || d1.SweepID != d2.SweepID {
		e.t.Fatalf("the test needs both deposits in one sweep: %d and %d", d1.SweepID, d2.SweepID)
	}
	return d1, d2, parent
}

// What was seen: two native deposits at one address, the second a block later, were swept
// together and credited; a reorg deeper than the confirmation depth then took away the second
// deposit's block (its payer spent the nonce elsewhere) and the sweep's, but kept the first's.
// The second was reorged (its credit reversed); the first stayed CREDITED although its money
// was back at the deposit address, and the sweep could never be mined again (it moved the
// second's money too): the books owed its operator money the bankroll did not hold, which a
// payout would have drawn from the shared hot wallet, other operators' money. A rollback now
// also reorgs the deposits whose sweep it takes away; their transfer stays, so once the sweep
// is mined again and confirmed they count again (REINCLUDED, one DEPOSIT); until then, or if
// it never is, they do not count and an engineer resolves them.
func TestRollbackThatTakesASweepAwayReorgsItsDeposits(t *testing.T) {
	t.Parallel()
	t.Run("the sweep cannot come back", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0)
		goes := e.newUser()
		d1, d2, parent := e.twoDepositsInOneSweep(e.address("ivy"), goes)
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Fatal(err)
		}
		e.mine(e.send(goes, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50))
		for range 3 * confirmations {
			e.scan()
			e.settleAll()
			e.dev.Commit()
		}
		for _, d := range []domain.Deposit{d1, d2} {
			if got := e.deposit(d.ID); got.Status != domain.DepositReorged {
				t.Errorf("deposit %d is %s after the reorg, want REORGED", d.ID, got.Status)
			}
			if got := e.fundKinds(d.ID); got != "DEPOSIT,REORG" {
				t.Errorf("deposit %d fund entries %q, want DEPOSIT,REORG", d.ID, got)
			}
		}
		if got := e.reorgActions(d1.ID); got != "DETECTED/system" {
			t.Errorf("the kept deposit's audit: %s", got)
		}
		if e.available("ETH").Sign() != 0 {
			t.Errorf("%v ETH available after the reorg, want none", e.available("ETH"))
		}
		var reincluded *int64
		if err := e.pool.QueryRow(e.ctx, `SELECT reincluded_block FROM deposit_reorgs WHERE deposit_id = $1`, d1.ID).Scan(&reincluded); err != nil ||
			reincluded == nil || uint64(*reincluded) != d1.BlockNumber {
			t.Errorf("the kept deposit's transfer is not noted as on the chain at %d: %v %v", d1.BlockNumber, reincluded, err)
		}
		e.reconciled()
		if n := len(e.hooks.all()); n != 2 {
			t.Errorf("%d DEPOSIT events, want the two", n)
		}
	})

	t.Run("the sweep is mined again", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0)
		d1, d2, parent := e.twoDepositsInOneSweep(e.address("jo"), e.newUser())
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Fatal(err)
		}
		e.dev.Commit() // the new branch: the second transfer goes back to the pool and is mined again
		e.scan()
		if a, b := e.deposit(d1.ID), e.deposit(d2.ID); a.Status != domain.DepositReorged || b.Status != domain.DepositReorged ||
			e.available("ETH").Sign() != 0 {
			t.Fatalf("after the rollback the deposits are %s and %s with %v ETH available, want both REORGED with none",
				a.Status, b.Status, e.available("ETH"))
		}
		e.run(func() bool {
			return e.deposit(d1.ID).Status == domain.DepositCredited && e.deposit(d2.ID).Status == domain.DepositCredited
		})
		for _, d := range []domain.Deposit{d1, d2} {
			if got := e.fundKinds(d.ID); got != "DEPOSIT,REORG,REINSTATE" {
				t.Errorf("deposit %d fund entries %q, want DEPOSIT,REORG,REINSTATE", d.ID, got)
			}
			if got := e.reorgActions(d.ID); got != "DETECTED/system,REINCLUDED/system" {
				t.Errorf("deposit %d audit: %s", d.ID, got)
			}
		}
		if want := new(big.Int).Add(d1.Amount, d2.Amount); e.available("ETH").Cmp(want) != 0 {
			t.Errorf("%v ETH available, want %v", e.available("ETH"), want)
		}
		if n := len(e.hooks.all()); n != 2 {
			t.Errorf("%d DEPOSIT events, want the two", n)
		}
		e.reconciled()
	})

	// A reorg that takes away only the sweep's block (all its deposits stay) leaves them
	// alone: the sweep's inputs are all on the chain, and it is mined again as it was.
	t.Run("only the sweep's block leaves", func(t *testing.T) {
		t.Parallel()
		e := setup(t, 0)
		addr := e.address("kim")
		tx := e.send(e.newUser(), 0, addr, testfactory.Ether(1), nil, 2)
		e.mine(tx)
		e.confirm()
		parent := e.latestHeader() // the deposit is confirmed; its sweep comes after
		e.run(func() bool { return len(e.hooks.all()) == 1 })
		d := e.deposit(e.findDeposit(tx.Hash()))
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Fatal(err)
		}
		e.dev.Commit()
		sweep := common.HexToHash(e.deposit(d.ID).SweepTxHash)
		e.run(func() bool {
			r, err := e.client.Receipt(e.ctx, sweep)
			return err == nil && r.BlockNumber.Uint64() > parent.Number.Uint64()
		})
		if got := e.deposit(d.ID); got.Status != domain.DepositCredited || e.fundKinds(d.ID) != "DEPOSIT" ||
			e.count(`SELECT count(*) FROM deposit_reorgs`) != 0 {
			t.Errorf("the deposit is %s with fund entries %q and %d reorgs, want CREDITED, DEPOSIT, none", got.Status,
				e.fundKinds(d.ID), e.count(`SELECT count(*) FROM deposit_reorgs`))
		}
		e.reconciled()
	})
}
