package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
)

// What was seen: on an eip7702 chain with a fee address, a 40 USDT deposit was written off
// while its batch was signed (fee 2.5%: 39 USDT to the bankroll, 1 to the fee address). The
// operator then changed its deposit fee, and a later 40 USDT payment reached the address; the
// old batch's bytes were mined with it and carried 39 + 1. The later deposit's fee differs, so
// one side of its need exceeded the carry's side while the other was over-covered: its batch
// asked the empty address for the difference and was skipped on every pass, the deposit never
// credited while the bankroll held its money. The carry is taken as a whole, as the money off
// the address it is: what its bankroll side holds beyond the net covers the fee (kept in the
// bankroll), and what its fee side holds beyond the fee is a fee (at the fee address, never
// in the bankroll, so never credited); the batch asks the address only for what the whole
// carry leaves out.
func TestBatchCarryTakenWhenTheOperatorsFeeChanged(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee03")
	for _, tc := range []struct {
		name           string
		currency       string
		before, after  int32
		lost, later    *big.Int
		wantCredit     *big.Int // never more than reached the bankroll for it
		wantBatchAfter bool
	}{
		// The carry holds 39 + 1; the deposit's fee is 4, the bankroll keeps the 3 beyond 36.
		{"the fee raised, an equal payment", "USDT", 250, 1000, usdt(40), usdt(40), usdt(36), false},
		// The carry holds 36 + 4: 4 of the payment is at the fee address, never in the bankroll.
		{"the fee dropped, an equal payment", "USDT", 1000, 250, usdt(40), usdt(40), usdt(36), false},
		{"the fee dropped to none, an equal payment", "USDT", 250, 0, usdt(40), usdt(40), usdt(39), false},
		{"the fee raised, a bigger payment", "USDT", 0, 1000, usdt(40), usdt(50), usdt(45), true},
		// The native currency at a token address is batched and carried the same way.
		{"ETH, the fee raised, an equal payment", "ETH", 250, 1000, milliETH(40), milliETH(40), milliETH(36), false},
		{"ETH, the fee dropped, an equal payment", "ETH", 1000, 250, milliETH(40), milliETH(40), milliETH(36), false},
		{"ETH, the fee raised, a bigger payment", "ETH", 0, 1000, milliETH(40), milliETH(50), milliETH(45), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{feeBps: tc.before, batched: true, network: func(n *chain.Network) { n.FeeAddress = feeAddress }})
			addr := e.tokenAddress("carryfee")
			pay, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.lost)
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			if _, err := e.pool.Exec(e.ctx, `UPDATE operators SET deposit_fee_bps = $1 WHERE id = $2`, tc.after, e.op.ID); err != nil {
				t.Fatal(err)
			}
			tank0, bank0, fees0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll), e.holding(tc.currency, feeAddress)
			again, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.later)
			e.mine(again)
			e.mineMoving(oldestPendingBatch)
			next := e.laterCredited(lost.ID, again)

			d := e.deposit(next)
			if e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 {
				t.Errorf("the later deposit is %s with fund entries %q, %d DEPOSIT events; want credited once", d.Status,
					e.fundKinds(next), len(e.hooks.all()))
			}
			if e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit has fund entries %q", e.fundKinds(lost.ID))
			}
			if d.Amount.Cmp(tc.wantCredit) != 0 || e.available(tc.currency).Cmp(tc.wantCredit) != 0 {
				t.Errorf("the later deposit is credited %v, %v available; want %v once", d.Amount, e.available(tc.currency), tc.wantCredit)
			}
			// Whatever side each part reached, the bankroll and the fee address together hold
			// the later payment, and the bankroll at least what was credited.
			bank := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0)
			fees := new(big.Int).Sub(e.holding(tc.currency, feeAddress), fees0)
			if total := new(big.Int).Add(bank, fees); total.Cmp(tc.later) != 0 || bank.Cmp(d.Amount) < 0 {
				t.Errorf("the bankroll received %v and the fee address %v; want %v in all, the bankroll at least %v", bank, fees,
					tc.later, d.Amount)
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
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}
