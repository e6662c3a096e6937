package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: on an eip7702 chain a 40 USDT deposit was written off while its batch was
// signed. Two later payments reached the address (25 USDT confirmed, then 25 USDT one block
// later) and the old batch's public bytes were mined with them, moving 40 USDT: the old batch
// was settled at once and carried 40, and the first later deposit, confirmed, was credited
// 25 from the carry with no batch. A reorg shallower than the depth then took the second
// payment (its payer spent the nonce elsewhere) and the old batch away: the bankroll had
// received nothing, the operator was credited 25 USDT (the books short), and the first
// payment's 25 USDT stayed at the address for good. The same with an unbatched sweep whose
// retirement found its old transfer mined. What moves money for a written-off deposit moves a
// later payment's, which no confirmation stands behind: it is settled (and carries) only once
// its block has the depth; one that left the chain before is pending again, and cancelled.
func TestCarryOfATransferAShallowReorgTookCreditsNothing(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, tc := range []struct {
		name     string
		batched  bool
		old      string // the old transfer's signed bytes
		currency string
		amount   func(int64) *big.Int
	}{
		{"a batch", true, oldestPendingBatch, "USDT", usdt},
		{"a batch, ETH", true, oldestPendingBatch, "ETH", milliETH},
		{"an unbatched sweep", false, pendingSweeps, "USDT", usdt},
		{"an unbatched sweep, ETH", false, pendingSweeps, "ETH", milliETH},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{batched: tc.batched})
			addr := e.paidAddress("shallow", tc.batched)
			lost := e.writtenOff(addr, tc.currency, tc.amount(40), tc.batched)
			tank0, bank0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll)
			payer := e.newUser()
			first, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.amount(25))
			e.mine(first)
			parent := e.latestHeader() // the fork keeps the first payment
			second, _ := e.payment(payer, 0, addr, tc.currency, tc.amount(25))
			e.mine(second)
			e.mineMoving(tc.old)
			e.scan()
			for range 2 { // the first later deposit is confirmed, the second payment and the old transfer are not
				e.settleAll()
				e.reconciled()
			}

			oldHead := e.latestHeader().Number.Uint64()
			e.dev.Rollback()
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			e.dev.Rollback() // what the fork put back in the pool: the second payment and the old transfer
			e.mine(e.send(payer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c4"), testfactory.Ether(1), nil, 50))
			for e.latestHeader().Number.Uint64() <= oldHead {
				e.dev.Commit()
			}
			e.scan()
			e.reconciled()

			next := e.findDeposit(first.Hash())
			e.settleUntil(lost.ID, func() bool {
				e.reconciled()
				return e.deposit(next).Status == domain.DepositCredited && e.leftAt(addr, tc.currency).Sign() == 0
			})
			e.runBlocks(confirmations + 2)

			// A native sweep's gas comes off what it moves: the deposit is credited what reached the bankroll.
			d := e.deposit(next)
			if e.fundKinds(next) != "DEPOSIT" || d.Amount.Sign() <= 0 || d.Amount.Cmp(tc.amount(25)) > 0 ||
				(tc.currency == "USDT" && d.Amount.Cmp(tc.amount(25)) != 0) || e.available(tc.currency).Cmp(d.Amount) != 0 {
				t.Errorf("the later deposit is %s, credited %v with fund entries %q, %v available; want its 25 once", d.Status,
					d.Amount, e.fundKinds(next), e.available(tc.currency))
			}
			if e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit has fund entries %q", e.fundKinds(lost.ID))
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(d.Amount) != 0 ||
				e.leftAt(addr, tc.currency).Sign() != 0 {
				t.Errorf("the bankroll received %v and the address keeps %v of deposits; want the deposit's %v, nothing", got,
					e.leftAt(addr, tc.currency), d.Amount)
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

// writtenOff has a new user pay amount of currency to addr and an engineer write its deposit off
// while its sweep is signed: on a batched chain the payment dropped (the old batch left pending
// to be mined later), else spent elsewhere (the address's gas top-up mined again, so its old
// transfer can be).
func (e *env) writtenOff(addr common.Address, currency string, amount *big.Int, batched bool) domain.Deposit {
	e.t.Helper()
	if !batched {
		d, _ := e.writtenOffInSignedSweep(addr, currency, amount)
		return d
	}
	pay, _ := e.payment(e.newUser(), 0, addr, currency, amount)
	return e.writtenOffBeforeItsSweep(pay, nil)
}

// leftAt is what addr holds of currency beyond the gas tank's top-ups to it (what a retirement's
// cancel did not burn of its top-up stays there: gas, no deposit's money).
func (e *env) leftAt(addr common.Address, currency string) *big.Int {
	e.t.Helper()
	left := e.holding(currency, addr)
	if currency != "ETH" {
		return left
	}
	for _, v := range testfactory.Column[string](e.ctx, e.t, e.pool, `SELECT value::text FROM chain_txs
		WHERE purpose = 'gas' AND state = 'mined' AND to_address = $1`, addr.Hex()) {
		topUp, _ := new(big.Int).SetString(v, 10)
		left.Sub(left, topUp)
	}
	if left.Sign() < 0 {
		left.SetInt64(0)
	}
	return left
}
