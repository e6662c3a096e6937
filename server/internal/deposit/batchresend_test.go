package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// How the sweep comes back in TestCreditedSweepThatLeftTheChainIsSentAgain.
const (
	coffersResend = "Coffer sends it again"
	nodeRaces     = "the node mines its own bytes first"
	paymentAgain  = "the payment is mined again too"
)

// What was seen: on a chain with EIP-7702 batches, a 40 USDT deposit was swept by a batch and
// credited; a reorg deeper than the depth then took the batch's block away while the payment
// stayed (it was mined before the fork). The node dropped the batch (the dev chain's rollback
// drops its pool) and Coffer never sent it again: the deposit stayed CREDITED, its 40 USDT
// back at its address, the books 40 USDT short of the bankroll for good (until the node
// happened to mine the batch again). An unbatched sweep was no different (0.03 ETH, 40 USDT
// short): nothing sent it again either. The rollback now reorgs the deposits of a sweep whose
// transaction it finds off the chain, their transfer noted back at once, so they stop counting
// while their money is at the address; the sweep is sent again (its stored bytes, the same
// nonce) and, once mined again at depth, they count again: one DEPOSIT, one net credit, the
// bankroll paid once, the books whole at every step.
func TestCreditedSweepThatLeftTheChainIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		batched  bool
		currency string
		amount   *big.Int
		how      string
	}{
		{"batched token", true, "USDT", big.NewInt(40_000_000), coffersResend},
		{"batched native", true, "ETH", milliETH(30), coffersResend},
		{"batched token, the node races", true, "USDT", big.NewInt(40_000_000), nodeRaces},
		{"batched native, the node races", true, "ETH", milliETH(30), nodeRaces},
		{"batched token, the payment mined again", true, "USDT", big.NewInt(40_000_000), paymentAgain},
		{"unbatched token", false, "USDT", big.NewInt(40_000_000), coffersResend},
		{"unbatched native", false, "ETH", milliETH(30), coffersResend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{batched: tc.batched})
			addr := e.paidAddress("ada", tc.batched)
			pay, _ := e.payment(e.newUser(), 0, addr, tc.currency, tc.amount)
			parent := e.latestHeader() // before the payment: a fork here takes it away too
			e.mine(pay)
			e.confirm()
			if tc.how != paymentAgain {
				parent = e.latestHeader() // the payment is confirmed; its sweep comes after
			}
			bank0 := e.holding(tc.currency, e.bankroll)
			e.run(func() bool { return len(e.hooks.all()) == 1 })
			id := e.findDeposit(pay.Hash())
			credited := e.deposit(id)
			sweepTxs := e.count(`SELECT count(*) FROM chain_txs WHERE purpose IN ('sweep', 'sweep-fee', 'sweep-batch')`)

			e.engine.RebroadcastAfter = 0
			oldHead := e.forkDropping(parent) // what the fork put back in the pool: dropped
			if tc.how == paymentAgain {
				e.mine(e.resent("", pay)...)
			}
			e.dev.Commit()
			e.scan() // rolls back
			if got := e.deposit(id); got.Status != domain.DepositReorged || e.available(tc.currency).Sign() != 0 {
				t.Fatalf("after the rollback the deposit is %s with %v %s available, want REORGED with none",
					got.Status, e.available(tc.currency), tc.currency)
			}
			e.reconciled() // its money is at its address, not in the bankroll: it does not count
			if tc.how == nodeRaces {
				e.mine(e.resent(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
					WHERE t.purpose = 'sweep-batch' ORDER BY a.id LIMIT 1`)...)
			}
			e.settledPast(oldHead)
			e.countsAgainOnce(id, tc.currency, credited.Amount.Int64())

			if got := e.reorgActions(id); got != "DETECTED/system,REINCLUDED/system" {
				t.Errorf("the deposit's audit: %s", got)
			}
			if n := e.depositEvents(id); n != 1 {
				t.Errorf("%d DEPOSIT events, want the one", n)
			}
			if got := e.holding(tc.currency, addr); got.Sign() != 0 && tc.currency == "USDT" {
				t.Errorf("the deposit address still holds %v %s", got, tc.currency)
			}
			// A native unbatched sweep paid its own gas out of the deposit: the bankroll got the
			// credited net; everything else got the gross.
			want := tc.amount
			if !tc.batched && tc.currency == "ETH" {
				want = credited.Amount
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(want) != 0 {
				t.Errorf("the bankroll received %v %s, want the deposit's %v once", got, tc.currency, want)
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose IN ('sweep', 'sweep-fee', 'sweep-batch')`); n != sweepTxs {
				t.Errorf("%d sweep transactions, want the %d sent again at their nonces", n, sweepTxs)
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}

// A batch of two addresses' deposits: carol's 10 USDT paid before the fork, dora's 40 USDT
// after it (and the same in ETH). A reorg deeper than the depth takes dora's payment and the
// batch away (the node drops both) and dora's deposit is written off. Carol's deposit stops
// counting while its money is back at its address, and once the batch is cancelled (it can
// never be sent again: it would move 40 USDT dora no longer has) its money reaches the
// bankroll once and it counts again, with no later deposit needed to move things along.
func TestBatchThatLeftTheChainCreditsTheKeptDepositBackOnItsOwn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		currency   string
		kept, lost *big.Int
	}{
		{"USDT", big.NewInt(10_000_000), big.NewInt(40_000_000)},
		{"ETH", milliETH(10), milliETH(40)},
	} {
		t.Run(tc.currency, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 0)
			carol := e.tokenAddress("carol")
			kept, _ := e.payment(e.newUser(), 0, carol, tc.currency, tc.kept)
			e.mine(kept)
			parent := e.latestHeader()
			pay, _ := e.payment(e.newUser(), 0, e.tokenAddress("dora"), tc.currency, tc.lost)
			e.mine(pay)
			for range confirmations + 1 { // both confirmed before either is swept: one batch
				e.dev.Commit()
				e.scan()
			}
			bank0 := e.holding(tc.currency, e.bankroll)
			e.run(func() bool { return len(e.hooks.all()) == 2 })
			k, lost := e.deposit(e.findDeposit(kept.Hash())), e.deposit(e.findDeposit(pay.Hash()))
			if n := e.count(`SELECT count(DISTINCT batch_id) FROM sweeps WHERE id IN ($1, $2)`, k.SweepID, lost.SweepID); n != 1 {
				t.Fatalf("the test needs both sweeps in one batch (%d batches)", n)
			}

			e.engine.RebroadcastAfter = 0
			oldHead := e.forkDropping(parent) // dora's payment and the batch the fork put back in the pool
			e.settledPast(oldHead)
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "the payment left the chain", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			for range 4 * confirmations {
				if e.deposit(k.ID).Status == domain.DepositCredited {
					break
				}
				e.runBlocks(1)
				e.reconciled()
			}
			e.runBlocks(confirmations + 2)

			if got := e.deposit(k.ID); got.Status != domain.DepositCredited || e.fundKinds(k.ID) != "DEPOSIT,REORG,REINSTATE" ||
				e.depositEvents(k.ID) != 1 {
				t.Errorf("carol's deposit is %s, fund entries %q, %d DEPOSIT events; want credited back once", got.Status,
					e.fundKinds(k.ID), e.depositEvents(k.ID))
			}
			if e.fundKinds(lost.ID) != "DEPOSIT,REORG" {
				t.Errorf("dora's written-off deposit: fund entries %q", e.fundKinds(lost.ID))
			}
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(tc.kept) != 0 {
				t.Errorf("the bankroll received %v, want carol's %v once", got, tc.kept)
			}
			if got := e.holding(tc.currency, carol); got.Sign() != 0 {
				t.Errorf("carol's address still holds %v", got)
			}
			if got := e.available(tc.currency); got.Cmp(tc.kept) != 0 {
				t.Errorf("%v %s available, want carol's %v", got, tc.currency, tc.kept)
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}
