package deposit_test

import (
	"math/big"
	"sync"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// A written-off deposit's batch mined with two later payments at its address, one in each asset
// (ETH and USDT): the old batch moves the written-off deposit's asset from the later payment of
// that asset, which the carry covers; the later deposit of the other asset goes in a batch.
// Two processes settling at once change nothing. Each later deposit is credited once, in full, from what reached the bankroll; nothing stays at
// the address; the gas tank pays gas only.
func TestBatchCarryWithLaterDepositsOfBothAssets(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, tc := range []struct {
		name     string
		lost     string // the written-off deposit's asset
		lostPaid *big.Int
		services int // processes settling the deposits at once, each step
	}{
		{"USDT written off", "USDT", usdt(40), 1},
		{"ETH written off", "ETH", milliETH(20), 1},
		{"USDT written off, two processes at once", "USDT", usdt(40), 2},
		{"ETH written off, two processes at once", "ETH", milliETH(20), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 100)
			addr := e.tokenAddress("mixed")
			pay, _ := e.payment(e.newUser(), 0, addr, tc.lost, tc.lostPaid)
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			tank0 := e.balance(e.gasTank)
			bank0 := map[string]*big.Int{"ETH": e.holding("ETH", e.bankroll), "USDT": e.holding("USDT", e.bankroll)}
			later := map[string]*big.Int{"ETH": milliETH(20), "USDT": usdt(40)}
			ethPay, _ := e.payment(e.newUser(), 0, addr, "ETH", later["ETH"])
			usdtPay, _ := e.payment(e.newUser(), 0, addr, "USDT", later["USDT"])
			e.mine(ethPay, usdtPay)
			e.mineMoving(oldestPendingBatch)
			e.scan()
			ids := map[string]int64{"ETH": e.findDeposit(ethPay.Hash()), "USDT": e.findDeposit(usdtPay.Hash())}
			services := []*deposit.Service{e.svc, e.serviceOn(func(*chain.Network) {})}[:tc.services]
			e.run(func() bool {
				var wg sync.WaitGroup
				for _, svc := range services {
					wg.Go(func() {
						for _, id := range []int64{lost.ID, ids["ETH"], ids["USDT"]} {
							if _, err := svc.Settle(e.ctx, id); err != nil {
								t.Errorf("settle %d: %v", id, err)
							}
						}
					})
				}
				wg.Wait()
				e.reconciled() // at every step
				return e.deposit(ids["ETH"]).Status == domain.DepositCredited && e.deposit(ids["USDT"]).Status == domain.DepositCredited
			})
			e.runBlocks(confirmations + 2)

			for currency, id := range ids {
				d := e.deposit(id)
				fee := new(big.Int).Div(later[currency], big.NewInt(100))
				if net := new(big.Int).Sub(later[currency], fee); e.fundKinds(id) != "DEPOSIT" || d.Amount.Cmp(net) != 0 ||
					e.available(currency).Cmp(net) != 0 {
					t.Errorf("the later %s deposit: fund entries %q, credited %v, %v available; want its net %v once", currency,
						e.fundKinds(id), d.Amount, e.available(currency), net)
				}
				if got := new(big.Int).Sub(e.holding(currency, e.bankroll), bank0[currency]); got.Cmp(later[currency]) != 0 {
					t.Errorf("the bankroll received %v %s, want the later payment's %v (the fee stays in it)", got, currency,
						later[currency])
				}
				if left := e.holding(currency, addr); left.Sign() != 0 {
					t.Errorf("the address keeps %v %s", left, currency)
				}
			}
			if e.fundKinds(lost.ID) != "" || len(e.hooks.all()) != 2 {
				t.Errorf("the written-off deposit has fund entries %q; %d DEPOSIT events, want 2", e.fundKinds(lost.ID), len(e.hooks.all()))
			}
			if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency
				HAVING sum(bankroll) <> 0 OR sum(fee) <> 0) x`); n != 0 {
				t.Errorf("%d carries stand", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}
