package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: on an eip7702 chain a token deposit (40 USDT) was written off while its batch
// was signed and not mined (a reorg deeper than the depth took its payment). A later payment
// (40 USDT) reached the same address, and the old batch's public bytes were mined with it: the
// batch moved the later payment's 40 USDT to the bankroll in the written-off deposit's name,
// credited no one, and carried nothing. The later deposit's own batch asked the address for 40
// USDT it no longer held and skipped its sweep on every pass: never credited, the operator 40
// USDT short of what the bankroll held. A finished batch now carries what it moved for deposits
// it did not credit, and the address's next batch takes the carry: it asks the address only for
// what its deposits need beyond it (no batch at all when the carry covers them) and credits
// them in full, once. Native deposits to a token address are batched too, and carry the same.
func TestBatchOfAWrittenOffDepositMinedWithALaterPaymentCarriesIt(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee02")
	for _, tc := range []struct {
		name           string
		currency       string
		feeBps         int32
		feeAddress     bool
		lost, later    *big.Int
		wantBatchAfter bool // the later deposit needs a batch beyond the carry
	}{
		{"an equal payment", "USDT", 0, false, usdt(40), usdt(40), false},
		{"a bigger payment, with a deposit fee", "USDT", 250, false, usdt(40), usdt(80), true},
		{"an equal payment, with a fee address", "USDT", 250, true, usdt(40), usdt(40), false},
		{"a bigger payment, with a fee address", "USDT", 250, true, usdt(40), usdt(70), true},
		{"a smaller payment (the old batch skips the address)", "USDT", 0, false, usdt(40), usdt(25), true},
		{"ETH, a bigger payment", "ETH", 100, false, milliETH(20), milliETH(30), true},
		{"ETH, with a fee address", "ETH", 100, true, milliETH(20), milliETH(20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{feeBps: tc.feeBps, batched: true, network: func(n *chain.Network) {
				if tc.feeAddress {
					n.FeeAddress = feeAddress
				}
			}})
			addr := e.tokenAddress("carry")
			pay, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.lost)
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			tank0, bank0, fees0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll), e.holding(tc.currency, feeAddress)
			again, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.later)
			e.mine(again)
			e.mineMoving(oldestPendingBatch)
			moved := tc.lost
			if tc.later.Cmp(tc.lost) < 0 {
				moved = new(big.Int) // the batch skips the address: it holds less than the old amount
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(moved) > 0 {
				t.Fatalf("the old batch moved %v to the bankroll", got)
			}
			next := e.laterCredited(lost.ID, again)

			d := e.deposit(next)
			if l := e.deposit(lost.ID); l.Status != domain.DepositReorged || e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit is %s with fund entries %q; want REORGED, never credited", l.Status, e.fundKinds(lost.ID))
			}
			if e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 || d.GrossAmount.Cmp(tc.later) != 0 {
				t.Errorf("the later deposit has fund entries %q, %d DEPOSIT events, gross %v; want one DEPOSIT of %v", e.fundKinds(next),
					len(e.hooks.all()), d.GrossAmount, tc.later)
			}
			fee := new(big.Int).Div(new(big.Int).Mul(tc.later, big.NewInt(int64(tc.feeBps))), big.NewInt(10_000))
			if net := new(big.Int).Sub(tc.later, fee); d.Amount.Cmp(net) != 0 || e.available(tc.currency).Cmp(net) != 0 {
				t.Errorf("the later deposit is credited %v, %v available; want its net %v once", d.Amount, e.available(tc.currency), net)
			}
			// A batch pays the fee to the fee address, else it stays in the bankroll; nothing
			// stays at the address.
			wantBank, wantFees := tc.later, new(big.Int)
			if tc.feeAddress {
				wantBank, wantFees = d.Amount, fee
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(wantBank) != 0 {
				t.Errorf("the bankroll received %v, want %v", got, wantBank)
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, feeAddress), fees0); got.Cmp(wantFees) != 0 {
				t.Errorf("the fee address received %v, want %v", got, wantFees)
			}
			if left := e.holding(tc.currency, addr); left.Sign() != 0 {
				t.Errorf("the address keeps %v", left)
			}
			if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency
				HAVING sum(bankroll) <> 0 OR sum(fee) <> 0) x`); n != 0 {
				t.Errorf("%d carries not taken", n)
			}
			if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batched
				AND (s.batch_id IS NOT NULL) = $2`, next, tc.wantBatchAfter); n != 1 {
				t.Errorf("the later deposit is in %d batched sweeps with a batch = %v, want 1", n, tc.wantBatchAfter)
			}
			if n := e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE' OR NOT batched`); n != 0 {
				t.Errorf("%d sweeps open or not batched", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// The written-off deposit whose batch carried (above) has its payment mined again afterwards:
// written off again, its money is swept anew to the bankroll and never credited; reinstated, it
// is swept and credited once. Either way nothing stays at the address and the later deposit
// stays credited once.
func TestWrittenOffDepositOfABatchThatCarriedComesBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resolution string
		early      bool // the payment is back before the later deposit is swept
	}{{"WRITE_OFF", false}, {"REINSTATE", false}, {"WRITE_OFF", true}} {
		resolution := tc.resolution
		name := resolution
		if tc.early {
			name += ", back before the later deposit is swept"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			addr := e.tokenAddress("back")
			pay, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
			again, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(again)
			e.mine(e.resent(oldestPendingBatch)...)
			e.scan()
			next := e.findDeposit(again.Hash())
			if tc.early {
				e.backBeforeTheLaterDepositIsSwept(pay, lost.ID, next)
			} else {
				e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
				e.minedAgain(pay, lost.ID)
			}
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: resolution,
				Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			e.settleUntil(lost.ID, func() bool {
				e.reconciled()
				return e.tokenBalance(addr).Sign() == 0 && e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE'`) == 0
			})
			e.runBlocks(confirmations + 2)

			want, status, kinds := big.NewInt(40_000_000), domain.DepositReorged, ""
			if resolution == "REINSTATE" {
				want, status, kinds = big.NewInt(80_000_000), domain.DepositCredited, "DEPOSIT"
			}
			if d := e.deposit(lost.ID); d.Status != status || e.fundKinds(lost.ID) != kinds {
				t.Errorf("the deposit that came back is %s with fund entries %q; want %s, %q", d.Status, e.fundKinds(lost.ID), status, kinds)
			}
			if e.fundKinds(next) != "DEPOSIT" || e.available("USDT").Cmp(want) != 0 {
				t.Errorf("the later deposit has fund entries %q, %v USDT available; want one DEPOSIT, %v", e.fundKinds(next),
					e.available("USDT"), want)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 80_000_000 || e.tokenBalance(addr).Sign() != 0 {
				t.Errorf("the bankroll received %v USDT units and the address keeps %v; want both payments' 80000000, nothing", got,
					e.tokenBalance(addr))
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// backBeforeTheLaterDepositIsSwept settles written-off deposit id until its batch carried, then
// mines its payment again while the later deposit next is still unswept, and scans until the
// payment's new incident is open.
func (e *env) backBeforeTheLaterDepositIsSwept(pay *types.Transaction, id, next int64) {
	e.t.Helper()
	e.carriedUnscanned(id)
	if err := e.client.Send(e.ctx, pay); err != nil {
		e.t.Fatal(err)
	}
	e.mine(pay)
	for range confirmations {
		if e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, id) == 1 {
			break
		}
		e.scan()
		e.dev.Commit()
	}
	if d := e.deposit(next); d.SweepID != 0 || e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, id) != 1 {
		e.t.Fatalf("the test needs the payment back while the later deposit is unswept: it is %s in sweep %d", d.Status, d.SweepID)
	}
}

// carriedUnscanned settles written-off deposit id (its job) until its batch, mined with a later
// payment's money, has carried, scanning nothing meanwhile: such a batch is settled only once
// it has the confirmation depth (batchdepth.go), and a scan by then would confirm the later
// payment, mined before it, and have its sweep planned first.
func (e *env) carriedUnscanned(id int64) {
	e.t.Helper()
	for range 2 * confirmations {
		if e.count(`SELECT count(*) FROM sweep_carries WHERE kind = 'CARRIED'`) > 0 {
			return
		}
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			e.t.Fatal(err)
		}
		e.dev.Commit()
	}
	e.t.Fatal("the written-off deposit's batch carried nothing")
}
