package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// A crash between a carrying batch's outcome and its credit, in the credit of the written-off
// deposit's sweep (it carries), or in the credit of the later deposit the carry covers (no
// batch), then a restart: the later deposit is credited once, the carry is recorded once and
// taken once, the books hold at every step.
func TestBatchCarrySurvivesACrashAtEachStep(t *testing.T) {
	t.Parallel()
	carried := func(e *env) bool { return e.count(`SELECT count(*) FROM sweep_carries WHERE kind = 'CARRIED'`) > 0 }
	for _, tc := range []struct {
		name string
		step string
		when func(e *env) bool
	}{
		{"the old batch settled, not credited", deposit.StepBatchSettled, func(e *env) bool { return !carried(e) }},
		{"crediting the written-off deposit's sweep", deposit.StepSweepCrediting, func(e *env) bool { return !carried(e) }},
		{"crediting the deposit the carry covers", deposit.StepSweepCrediting, carried},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 250)
			addr := e.tokenAddress("crash")
			pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			bank0 := e.tokenBalance(e.bankroll)
			again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
			e.mineMoving(oldestPendingBatch)
			e.scan()
			next := e.findDeposit(again.Hash())
			crashed := e.crashOnce(20, func(step string) bool { return step == tc.step && tc.when(e) }, func() {
				e.scan()
				for _, id := range []int64{lost.ID, next} {
					if _, err := e.svc.Settle(e.ctx, id); err != nil {
						t.Errorf("settle %d: %v", id, err)
					}
				}
			})
			if !crashed {
				t.Fatalf("no crash at %s", tc.step)
			}
			e.reconciled()
			e.settleUntil(lost.ID, func() bool {
				e.reconciled()
				return e.deposit(next).Status == domain.DepositCredited
			})
			e.runBlocks(confirmations + 2)

			d := e.deposit(next)
			if e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 || d.Amount.Int64() != 39_000_000 ||
				e.available("USDT").Int64() != 39_000_000 {
				t.Errorf("the later deposit: fund entries %q, %d DEPOSIT events, credited %v, %v available; want 39 USDT once",
					e.fundKinds(next), len(e.hooks.all()), d.Amount, e.available("USDT"))
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 40_000_000 || e.tokenBalance(addr).Sign() != 0 {
				t.Errorf("the bankroll received %v, the address keeps %v; want 40 USDT, nothing", got, e.tokenBalance(addr))
			}
			if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency
				HAVING sum(bankroll) = 0 AND sum(fee) = 0 AND count(*) FILTER (WHERE kind = 'CARRIED') = 1
				AND count(*) FILTER (WHERE kind = 'TAKEN') = 1) x`); n != 1 || e.count(`SELECT count(*) FROM sweep_carries`) != 2 {
				t.Errorf("want the carry recorded once and taken once, to nothing: %v", testfactory.Column[string](e.ctx, t, e.pool,
					`SELECT kind || ' ' || bankroll::text || ' ' || fee::text || ' sweep ' || sweep_id FROM sweep_carries ORDER BY id`))
			}
			if e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit has fund entries %q", e.fundKinds(lost.ID))
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}
