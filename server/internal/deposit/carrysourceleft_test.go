package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a 40 USDT deposit credited from its address's carry with no batch (a
// written-off deposit's batch had moved its payment's money); a reorg deeper than the depth
// then took away only that batch (the payment stayed) and the node dropped it. The deposit
// stayed CREDITED while its 40 USDT were back at its address: the books 40 USDT short of the
// bankroll for good. The rollback now reorgs a deposit credited from a carry whose sweep left
// the chain; it is swept anew and credited back once (no second DEPOSIT), the batch that
// carried cancelled, the books whole at every step. A batch the node mines again changes
// nothing.
func TestCoveredDepositWhoseCarryLeftTheChain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		drops bool
	}{{"the node drops the batch that carried", true}, {"the node mines it again", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			addr := e.tokenAddress("covered")
			pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
			parent := e.latestHeader() // the later payment is in; the old batch comes after
			e.mine(e.resent(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
				WHERE t.purpose = 'sweep-batch' AND t.state = 'pending' ORDER BY a.id LIMIT 1`)...)
			e.scan()
			next := e.findDeposit(again.Hash())
			e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
			if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batch_id IS NULL`,
				next); n != 1 {
				t.Fatal("the test needs the later deposit credited from the carry with no batch")
			}
			e.runBlocks(confirmations + 1)
			e.reconciled()

			e.engine.RebroadcastAfter = 0
			oldHead := e.latestHeader().Number.Uint64()
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			if tc.drops {
				e.dev.Rollback()
			}
			e.dev.Commit()
			bank0 := e.tokenBalance(e.bankroll)
			e.settledPast(oldHead)
			e.sweptAndCredited(next, addr)

			kinds, received, reorgs := "DEPOSIT,REORG,REINSTATE", int64(40_000_000), 1
			if !tc.drops {
				kinds, received, reorgs = "DEPOSIT", 0, 0
			}
			if got := e.deposit(next); got.Status != domain.DepositCredited || e.fundKinds(next) != kinds || e.depositEvents(next) != 1 {
				t.Errorf("the later deposit is %s with fund entries %q and %d DEPOSIT events; want CREDITED, %q, one", got.Status,
					e.fundKinds(next), e.depositEvents(next), kinds)
			}
			if n := e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1`, next); n != reorgs {
				t.Errorf("%d incidents for the later deposit, want %d", n, reorgs)
			}
			if got := e.tokenBalance(addr); got.Sign() != 0 {
				t.Errorf("the address keeps %v USDT units", got)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != received {
				t.Errorf("the bankroll received %v USDT units since the fork, want %d", got, received)
			}
			if got := e.available("USDT"); got.Int64() != 40_000_000 {
				t.Errorf("%v USDT available, want the later deposit's once", got)
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}
