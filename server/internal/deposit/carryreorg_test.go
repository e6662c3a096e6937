package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a 40 USDT deposit credited from its address's carry with no batch
// (creditCovered: a written-off deposit's batch had moved the payment's money) was taken by a
// reorg deeper than the depth, with the batch that carried, and written off; its payment was
// mined again and it was written off a second time. Its settle job then failed with "not
// found" on every run (it looked for the transaction of batch 0), the 40 USDT left at the
// address for good. And the batch that carried, off the chain with no deposit left in it (the
// written-off one had left its finished sweep), was never taken for decided: never cancelled,
// so the gas tank's next batch waited behind its nonce for good, and with it every later batch
// of the chain. A covered sweep is now taken as gone once its deposit is written off again
// (nothing moved money in its name) and a batch's sweep left without deposits as written off:
// the batch is cancelled, the money swept anew once to the bankroll, never credited; or, on a
// REINSTATE, credited back once (coveredNeverPays).
func TestCoveredDepositTakenByADeepReorgComesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resolution string
		status     domain.DepositStatus
		kinds      string
	}{
		{"WRITE_OFF", domain.DepositReorged, "DEPOSIT,REORG"},
		// REINSTATE credited it back at once while its money was at the address (the batch
		// that carried left the chain): books 40 USDT short. It is swept anew and credited back.
		{"REINSTATE", domain.DepositCredited, "DEPOSIT,REORG,REINSTATE"},
	} {
		t.Run(tc.resolution, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			addr := e.tokenAddress("covered")
			pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
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

			// A reorg deeper than the depth takes the later payment away, and the batch that
			// carried with it; the node drops both.
			parent, err := e.client.Header(e.ctx, new(big.Int).SetUint64(e.deposit(next).BlockNumber-1))
			if err != nil {
				t.Fatal(err)
			}
			oldHead := e.forkDropping(parent)
			settle := func() {
				e.dev.Commit()
				e.scan()
				for _, id := range []int64{lost.ID, next} {
					if _, err := e.svc.Settle(e.ctx, id); err != nil {
						t.Fatalf("settle %d: %v", id, err)
					}
				}
				e.reconciled()
			}
			for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
				settle()
			}
			if got := e.deposit(next); got.Status != domain.DepositReorged {
				t.Fatalf("after the reorg the later deposit is %s, want REORGED", got.Status)
			}
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: next, Resolution: "WRITE_OFF",
				Note: "the payment left the chain", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			bank0 := e.tokenBalance(e.bankroll)
			e.mine(e.resent("", again)...) // the payment comes back: its money at the address
			for e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, next) == 0 {
				settle()
			}
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: next, Resolution: tc.resolution,
				Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			for range 6 * confirmations {
				settle()
				if e.tokenBalance(addr).Sign() == 0 && e.deposit(next).Status == tc.status {
					break
				}
			}
			e.runBlocks(confirmations + 2)

			if got := e.deposit(next); got.Status != tc.status || e.fundKinds(next) != tc.kinds || e.depositEvents(next) != 1 {
				t.Errorf("the later deposit is %s with fund entries %q and %d DEPOSIT events; want %s, %q, one", got.Status,
					e.fundKinds(next), e.depositEvents(next), tc.status, tc.kinds)
			}
			if got := e.tokenBalance(addr); got.Sign() != 0 {
				t.Errorf("the address keeps %v USDT units", got)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 40_000_000 {
				t.Errorf("the bankroll received %v USDT units since the payment came back, want its 40000000 once", got)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 {
				t.Errorf("the batch that carried, off the chain, is not cancelled")
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}
