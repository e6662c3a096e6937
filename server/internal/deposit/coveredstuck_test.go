package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a 40 USDT deposit credited from its address's carry with no batch (batch 1, a
// written-off deposit's, had moved the payment's money); a reorg took batch 1 away and the node
// dropped it. The rollback reorged the covered deposit and, batch 1 being off the chain, it was
// resolved REINCLUDED and swept anew at once (coveredNeverPays read "not on the chain now" as
// "never"). The gas tank's cancel of batch 1 was signed, but the node mined batch 1's own
// bytes at its nonce instead (the cancel failed: nonce taken): batch 1 moved the 40 USDT to
// the bankroll again, and the deposit's new batch asked the address for 40 USDT it no longer
// held. The deposit stayed SWEEPING for good (fund entries DEPOSIT,REORG, 0 USDT available),
// the bankroll holding its 40 USDT (books over). A batch that carried, off the chain, now keeps
// its covered deposit REORGED until it is mined again (the deposit counts again as it was) or
// the gas tank's cancel has the depth (swept anew, credited back once); the deposit's job has
// the gas tank cancel it.
func TestCoveredDepositWhoseCarryingBatchIsMinedAgain(t *testing.T) {
	t.Parallel()
	const cancelSignedQ = `SELECT count(*) FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.ref = 'batch:1' AND a.cancel AND a.broadcast_at IS NOT NULL`
	for _, tc := range []struct {
		name string
		when func(e *env, next int64) bool
		drop bool // the cancel leaves the pool first
		fork bool // a reorg takes the cancel's block first
		same bool // a second reorg puts the batch back at its old height
	}{
		{"right after the rollback", func(e *env, next int64) bool { return e.deposit(next).Status == domain.DepositReorged }, false, false, false},
		{"right after the rollback, at its old height", func(e *env, next int64) bool {
			return e.deposit(next).Status == domain.DepositReorged
		}, false, false, true},
		{"after the cancel is signed", func(e *env, _ int64) bool { return e.count(cancelSignedQ) > 0 }, true, false, false},
		{"after the cancel is mined, short of its depth", func(e *env, _ int64) bool {
			return e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`) > 0
		}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			addr := e.tokenAddress("covered")
			pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
			parent := e.latestHeader()
			e.mine(e.resent(oldestPendingBatch)...)
			e.scan()
			next := e.findDeposit(again.Hash())
			e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
			if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batch_id IS NULL`,
				next); n != 1 {
				t.Fatal("the test needs the later deposit credited from the carry with no batch")
			}
			e.runBlocks(confirmations + 1)
			e.reconciled()
			bank0 := e.tokenBalance(e.bankroll)

			e.engine.RebroadcastAfter = 0
			oldHead := e.forkDropping(parent)
			fired := false
			fire := func() {
				if fired || !tc.when(e, next) {
					return
				}
				fired = true
				if tc.drop {
					e.dev.Rollback()
				}
				if tc.fork {
					at := int64(e.count(`SELECT mined_block FROM chain_txs WHERE ref = 'batch:1'`))
					parent, err := e.client.Header(e.ctx, big.NewInt(at-1))
					if err != nil {
						t.Fatal(err)
					}
					e.forkDropping(parent)
				}
				if tc.same {
					e.forkDropping(parent)
				}
				e.mine(e.resent(firstBatch)...)
				t.Logf("the old batch mined again at block %d; later deposit %s", e.latestHeader().Number, e.deposit(next).Status)
			}
			for range 6 * confirmations {
				e.dev.Commit()
				e.scan()
				fire()
				for _, id := range e.unsettled() {
					if _, err := e.svc.Settle(e.ctx, id); err != nil {
						t.Fatalf("settle %d: %v", id, err)
					}
					fire()
				}
				e.reconciled()
				if fired && e.latestHeader().Number.Uint64() > oldHead+confirmations && e.deposit(next).Status == domain.DepositCredited {
					break
				}
			}
			if !fired {
				t.Fatal("the old batch was never mined again: the race was not run")
			}
			e.runBlocks(confirmations + 2)
			e.reconciled()
			if got := e.deposit(next); got.Status != domain.DepositCredited || e.depositEvents(next) != 1 {
				t.Errorf("the later deposit is %s with fund entries %q and %d DEPOSIT events; want CREDITED, one", got.Status,
					e.fundKinds(next), e.depositEvents(next))
			}
			if got := e.tokenBalance(addr); got.Sign() != 0 {
				t.Errorf("the address keeps %v USDT units", got)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 0 {
				t.Errorf("the bankroll received %v USDT units since the fork, want 0 (the batch moved them once)", got)
			}
			if got := e.available("USDT"); got.Int64() != 40_000_000 {
				t.Errorf("%v USDT available, want the later deposit's once", got)
			}
			if got := e.fundKinds(next); got != "DEPOSIT,REORG,REINSTATE" {
				t.Errorf("the later deposit's fund entries are %q, want DEPOSIT,REORG,REINSTATE (counted again once)", got)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'mined'`); n != 1 {
				t.Errorf("the old batch is not mined in the books (%d): the race was not run", n)
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}
