package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a batched token deposit (40 USDT) was credited, then a reorg deeper than the
// depth took its payment and its batch away (gas-tank nonce 0) and an engineer wrote it off.
// The books kept the batch mined while the gas tank's nonce 0 was unused on the chain: the next
// batch, another address's 10 USDT, was signed at nonce 1 and stayed pending for good (its
// deposit SWEEPING), and every later batch of the chain with it. With the payment mined again
// and written off a second time, its 40 USDT also stayed at the deposit address for good (a
// batched sweep was left alone). The gas tank now cancels a done batch that left the chain at
// its own nonce once its deposits are all written off, and a deposit written off again is then
// swept to the bankroll, never credited; the gas tank pays gas only.
func TestDoneBatchThatLeftTheChainIsCancelledByTheGasTank(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		back bool // the written-off payment is mined again and written off a second time
		// batchFirst: the batch's bytes are mined again before the payment, skipping its address
		batchFirst bool
	}{
		{"written off once", false, false},
		{"written off again, the payment back", true, false},
		{"written off again, the batch mined again before the payment", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			lost, pay := e.batchLeftTheChainWrittenOff()
			tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
			if c.batchFirst {
				e.mine(e.resent(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
					WHERE t.ref = 'batch:1' ORDER BY a.id LIMIT 1`)...)
			}
			if c.back {
				e.minedAgain(pay, lost.ID)
				if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
					Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
					t.Fatal(err)
				}
				e.settleUntil(lost.ID, e.sweptAnew(lost)) // its job, queued by the write-off
			}
			later, _ := e.payment(e.newUser(), 0, e.tokenAddress("eve"), "USDT", big.NewInt(10_000_000))
			e.mine(later)
			e.scan()
			next := e.findDeposit(later.Hash())
			e.run(func() bool { return e.deposit(next).Status == domain.DepositCredited })
			e.runBlocks(confirmations + 2)

			owed := e.deposit(next).Amount
			if c.back {
				e.sweptNotCredited(lost, "USDT", bank0, owed, "DEPOSIT,REORG") // the write-off stands
			} else if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(owed) != 0 {
				t.Errorf("the bankroll received %v USDT units, want the later deposit's %v", got, owed)
			}
			if e.available("USDT").Cmp(owed) != 0 || len(e.hooks.all()) != 2 {
				t.Errorf("%v USDT available, %d DEPOSIT events; want the later deposit's %v, two events", e.available("USDT"),
					len(e.hooks.all()), owed)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 && !c.batchFirst {
				t.Errorf("the batch that left the chain is not cancelled (%d)", n)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 0 {
				t.Errorf("%d gas top-ups on a batched chain", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// batchLeftTheChainWrittenOff has a user pay 40 USDT to a token-deposit address; once its batch
// credited it, a reorg deeper than the depth takes the payment and the batch away (the node
// drops both), and an engineer writes the deposit off. It returns the deposit as credited and
// its payment.
func (e *env) batchLeftTheChainWrittenOff() (domain.Deposit, *types.Transaction) {
	e.t.Helper()
	payer := e.newUser()
	parent := e.latestHeader()
	pay, _ := e.payment(payer, 0, e.tokenAddress("dora"), "USDT", big.NewInt(40_000_000))
	e.mine(pay)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	lost := e.deposit(e.findDeposit(pay.Hash()))
	e.engine.RebroadcastAfter = 0
	e.deepReorg(parent, nil, func() { e.scan(); e.settleAll() }) // the node drops the payment and the batch
	if d := e.deposit(lost.ID); d.Status != domain.DepositReorged {
		e.t.Fatalf("after the reorg the deposit is %s, want REORGED", d.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "the payment left the chain", Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	e.runBlocks(2)
	return lost, pay
}
