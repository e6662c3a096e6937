package deposit_test

import (
	"math/big"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: on a chain sweeping with top-ups (no batches), a written-off 40 USDT deposit's
// retired sweep (sweep 1) had its token transfer mined with a later 40 USDT payment's money
// (carry 40); the later deposit's sweep (sweep 2) was covered by the carry, credited with no
// transaction. A reorg then took only the old transfer away and the node dropped it: the later
// deposit stayed CREDITED (fund entries DEPOSIT) while its 40 USDT were back at its address,
// reconciliation "USDT holdings 0, owed 40 (short 40)" at every step, for good. The rollback
// reorged only batched covered sweeps (SweepsCoveredBy: y.batched), and readyToReinstate would
// have credited an unbatched sweep with no transaction back at once (allCancelled needs one
// transaction at least). Now the covered deposit is reorged and waits, REORGED, while the old
// transfer may still be mined at the address's nonce: mined again, it counts again as it was
// (REINCLUDED); else the nonce is cancelled and, at the cancel's depth, the deposit is swept
// anew and credited back once.
func TestCoveredByATransferThatLeftTheChain(t *testing.T) {
	t.Parallel()
	const (
		cancelSignedQ = `SELECT count(*) FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
			WHERE t.purpose = 'sweep' AND t.ref LIKE 'sweep:1:%' AND a.cancel AND a.broadcast_at IS NOT NULL AND a.id > $1`
		cancelMinedQ = `SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND ref LIKE 'sweep:1:%' AND state = 'cancelled'`
		oldMinedQ    = `SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND ref = 'sweep:1:USDT' AND state = 'mined'`
	)
	reorged := func(e *env, next int64) bool { return e.deposit(next).Status == domain.DepositReorged }
	var forkAttempt int // the newest attempt when the fork comes: the retirement's cancel came before
	for _, tc := range []struct {
		name  string
		drops bool                          // the node drops the old transfer at the fork
		when  func(e *env, next int64) bool // when the old transfer is mined again (nil: never)
		drop  bool                          // the cancel leaves the pool first
		fork  bool                          // a reorg takes the cancel's block first
	}{
		{"dropped", true, nil, false, false},
		{"mined again at once", false, nil, false, false},
		{"dropped, then mined again right after the rollback", true, reorged, false, false},
		{"dropped, then mined again after the cancel is signed", true, func(e *env, _ int64) bool {
			return e.count(cancelSignedQ, forkAttempt) > 0
		}, true, false},
		{"dropped, then mined again after the cancel is mined, short of its depth", true, func(e *env, _ int64) bool {
			return e.count(cancelMinedQ) > 0
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			addr := e.address("carry")
			lost, payer := e.writtenOffInSignedSweep(addr, "USDT", big.NewInt(40_000_000))
			again, _ := e.payment(payer, 1, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
			parent := e.latestHeader()
			olds := e.mineMoving(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
				WHERE t.purpose IN ('sweep', 'sweep-fee') AND t.state = 'pending' ORDER BY t.nonce, a.id`)
			next := e.laterCredited(lost.ID, again)
			covered := e.deposit(next).SweepID
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE 'sweep:' || $1::bigint || ':%'`, covered); n != 0 || covered == 0 {
				t.Fatalf("the test needs the later deposit credited from the carry with no transfer: sweep %d, %d transfers", covered, n)
			}
			e.reconciled()
			bank0 := e.tokenBalance(e.bankroll)
			e.engine.RebroadcastAfter = 0
			oldHead := e.latestHeader().Number.Uint64()
			forkAttempt = e.count(`SELECT coalesce(max(id), 0) FROM chain_tx_attempts`)
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			if tc.drops {
				e.dev.Rollback()
			}
			e.dev.Commit()
			fired, queued := false, false
			fire := func() {
				if fired || tc.when == nil || !tc.when(e, next) {
					return
				}
				fired = true
				t.Logf("at block %d: sweep 1's transfer cancelled in the books %d, its cancels signed since the fork %d",
					e.latestHeader().Number, e.count(cancelMinedQ), e.count(cancelSignedQ, forkAttempt))
				if tc.drop {
					e.dev.Rollback()
				}
				if tc.fork {
					at := int64(e.count(`SELECT mined_block FROM chain_txs WHERE purpose = 'sweep' AND ref LIKE 'sweep:1:%'`))
					parent, err := e.client.Header(e.ctx, big.NewInt(at-1))
					if err != nil {
						t.Fatal(err)
					}
					e.forkDropping(parent)
				}
				e.mine(e.resent("", olds...)...)
				t.Logf("the old transfer mined again at block %d; later deposit %s", e.latestHeader().Number, e.deposit(next).Status)
			}
			for range 8 * confirmations {
				e.dev.Commit()
				e.scan()
				fire()
				if reorged(e, next) {
					queued = queued || slices.Contains(e.queuedSettles(), next)
					if _, err := e.svc.Settle(e.ctx, next); err != nil { // its job, as a worker runs it
						t.Fatalf("settle %d: %v", next, err)
					}
					fire()
				}
				e.settleAll()
				e.reconciled()
				if e.latestHeader().Number.Uint64() > oldHead+confirmations && e.deposit(next).Status == domain.DepositCredited &&
					e.tokenBalance(addr).Sign() == 0 && (fired || tc.when == nil) {
					break
				}
			}
			if tc.when != nil && !fired {
				t.Fatal("the old transfer was never mined again: the race was not run")
			}
			e.runBlocks(confirmations + 2)
			e.reconciled()
			got := e.deposit(next)
			t.Logf("later deposit %s in sweep %d, fund entries %q, address %v, DEPOSIT events %d", got.Status, got.SweepID,
				e.fundKinds(next), e.tokenBalance(addr), e.depositEvents(next))
			if got.Status != domain.DepositCredited || e.depositEvents(next) != 1 {
				t.Errorf("the later deposit is %s with %d DEPOSIT events; want CREDITED, one", got.Status, e.depositEvents(next))
			}
			if b := e.tokenBalance(addr); b.Sign() != 0 {
				t.Errorf("the address keeps %v USDT units", b)
			}
			if d := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); d.Sign() != 0 {
				t.Errorf("the bankroll holds %v USDT units more than before the fork, want 0 (the 40 USDT moved once)", d)
			}
			if a := e.available("USDT"); a.Int64() != 40_000_000 {
				t.Errorf("%v USDT available, want the later deposit's once", a)
			}
			want, sweep, oldMined := "DEPOSIT,REORG,REINSTATE", covered, 1
			switch {
			case !tc.drops:
				want = "DEPOSIT" // never off the chain
			case tc.when == nil:
				oldMined = 0 // cancelled at its nonce: the later deposit is swept anew
			}
			if k := e.fundKinds(next); k != want {
				t.Errorf("the later deposit's fund entries are %q, want %q", k, want)
			}
			if n := e.count(oldMinedQ); n != oldMined {
				t.Errorf("the old transfer is mined in the books %d times, want %d", n, oldMined)
			}
			if oldMined == 1 && got.SweepID != sweep {
				t.Errorf("the later deposit is in sweep %d, want %d (counted again as it was)", got.SweepID, sweep)
			}
			if oldMined == 0 && (got.SweepID == sweep || e.count(cancelMinedQ) != 1) {
				t.Errorf("the later deposit is in sweep %d (covered by %d), %d cancels mined; want a new sweep after the cancel",
					got.SweepID, sweep, e.count(cancelMinedQ))
			}
			if tc.drops && !queued {
				t.Errorf("the rollback queued no settle job for the covered deposit")
			}
			e.nothingPending()
		})
	}
}
