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
		name    string
		batched bool
		old     string // the old transfer's signed bytes
	}{
		{"a batch", true, oldestPendingBatch},
		{"an unbatched sweep", false, pendingSweeps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{batched: tc.batched})
			addr := e.paidAddress("shallow", tc.batched)
			lost := e.writtenOff(addr, usdt(40), tc.batched)
			tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
			payer := e.newUser()
			first, _ := e.payment(e.newUser(), 0, addr, "USDT", usdt(25))
			e.mine(first)
			parent := e.latestHeader() // the fork keeps the first payment
			second, _ := e.payment(payer, 0, addr, "USDT", usdt(25))
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
				return e.deposit(next).Status == domain.DepositCredited && e.tokenBalance(addr).Sign() == 0
			})
			e.runBlocks(confirmations + 2)

			if d := e.deposit(next); e.fundKinds(next) != "DEPOSIT" || d.Amount.Cmp(usdt(25)) != 0 || e.available("USDT").Cmp(usdt(25)) != 0 {
				t.Errorf("the later deposit is %s, credited %v with fund entries %q, %v available; want 25 USDT once", d.Status,
					d.Amount, e.fundKinds(next), e.available("USDT"))
			}
			if e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit has fund entries %q", e.fundKinds(lost.ID))
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(usdt(25)) != 0 || e.tokenBalance(addr).Sign() != 0 {
				t.Errorf("the bankroll received %v and the address keeps %v; want the first payment's 25 USDT, nothing", got,
					e.tokenBalance(addr))
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

// writtenOff has a new user pay amount of USDT to addr and an engineer write its deposit off
// while its sweep is signed: on a batched chain the payment dropped (the old batch left pending
// to be mined later), else spent elsewhere (the address's gas top-up mined again, so its old
// transfer can be).
func (e *env) writtenOff(addr common.Address, amount *big.Int, batched bool) domain.Deposit {
	e.t.Helper()
	if !batched {
		d, _ := e.writtenOffInSignedSweep(addr, "USDT", amount)
		return d
	}
	pay, _ := e.payment(e.newUser(), 0, addr, "USDT", amount)
	return e.writtenOffBeforeItsSweep(pay, nil)
}
