package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen (unbatched sweeps, a fee address): a written-off deposit's signed sweep (its net
// and fee transfers) was mined, public bytes, with a later equal payment's money after the
// operator changed deposit_fee_bps, so the carry's sides differ from the later deposit's net and
// fee. 40 USDT at 2.5% then 10%: carry 39 + 1, need 36 + 4, the sweep asked the emptied address
// for a 3 USDT fee transfer and failed its gas estimate on every pass, never credited while the
// bankroll held 39 (the same at 10% then 2.5%, 3 asked of the bankroll side, and at 2.5% then
// none, 1). 1 ETH at 10% then 2.5%: the gas tank made up the 0.075 ETH net the carry's fee side
// held (0.025 ETH at 2.5% then none); at 2.5% then 10%, 0.075 ETH of the carry was never taken.
// The carry is taken as a whole, as for a batch (TestBatchCarryTakenWhenTheOperatorsFeeChanged):
// the later deposit is credited once, never more than the bankroll received for it (what is at
// the fee address is a fee), nothing left at the address, the carry taken, the gas tank paying
// gas only.
func TestUnbatchedCarryTakenWhenTheOperatorsFeeChanged(t *testing.T) {
	t.Parallel()
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee06")
	for _, tc := range []struct {
		name          string
		currency      string
		before, after int32
		amount        *big.Int
		wantCredit    *big.Int // USDT (ETH: what reached the bankroll, less gas)
	}{
		{"USDT, the fee raised", "USDT", 250, 1000, big.NewInt(40_000_000), big.NewInt(36_000_000)},
		{"USDT, the fee dropped", "USDT", 1000, 250, big.NewInt(40_000_000), big.NewInt(36_000_000)},
		{"USDT, the fee dropped to none", "USDT", 250, 0, big.NewInt(40_000_000), big.NewInt(39_000_000)},
		{"ETH, the fee raised", "ETH", 250, 1000, testfactory.Ether(1), nil},
		{"ETH, the fee dropped", "ETH", 1000, 250, testfactory.Ether(1), nil},
		{"ETH, the fee dropped to none", "ETH", 250, 0, testfactory.Ether(1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, tc.before, func(n *chain.Network) { n.FeeAddress = feeAddress })
			addr := e.address("feecarry")
			lost, payer := e.writtenOffInSignedSweep(addr, tc.currency, tc.amount)
			if _, err := e.pool.Exec(e.ctx, `UPDATE operators SET deposit_fee_bps = $1 WHERE id = $2`, tc.after, e.op.ID); err != nil {
				t.Fatal(err)
			}
			tank0, bank0, fees0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll), e.holding(tc.currency, feeAddress)
			again, _ := e.payment(payer, 1, addr, tc.currency, tc.amount)
			e.mine(again)
			if olds := e.mineMoving(pendingNetAndFee); len(olds) != 2 {
				t.Fatalf("the test needs the old net and fee transfers signed and mined: %d", len(olds))
			}
			next := e.laterCredited(lost.ID, again)

			d := e.deposit(next)
			if e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 || e.fundKinds(lost.ID) != "" {
				t.Errorf("the later deposit is %s with fund entries %q (written off: %q), %d DEPOSIT events; want credited once",
					d.Status, e.fundKinds(next), e.fundKinds(lost.ID), len(e.hooks.all()))
			}
			bank := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0)
			fees := new(big.Int).Sub(e.holding(tc.currency, feeAddress), fees0)
			if e.available(tc.currency).Cmp(d.Amount) != 0 || bank.Cmp(d.Amount) < 0 ||
				(tc.wantCredit != nil && d.Amount.Cmp(tc.wantCredit) != 0) {
				t.Errorf("the later deposit is credited %v, %v available; the bankroll received %v for it", d.Amount,
					e.available(tc.currency), bank)
			}
			if total := new(big.Int).Add(bank, fees); total.Cmp(tc.amount) > 0 ||
				(tc.currency == "USDT" && total.Cmp(tc.amount) != 0) {
				t.Errorf("the bankroll received %v and the fee address %v; want the later payment's %v in all (less gas for ETH)",
					bank, fees, tc.amount)
			}
			if left := e.holding(tc.currency, addr); (tc.currency == "USDT" && left.Sign() != 0) || left.Cmp(big.NewInt(1e16)) > 0 {
				t.Errorf("the address keeps %v", left)
			}
			if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency
				HAVING sum(bankroll) <> 0 OR sum(fee) <> 0) x`); n != 0 {
				t.Errorf("%d carries not taken", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}
