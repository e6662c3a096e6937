package deposit_test

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// minedSweepRaw selects the signed bytes of the mined sweep transactions (what a node keeping
// them in its pool sends again after a reorg).
const minedSweepRaw = `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
	WHERE t.purpose IN ('sweep', 'sweep-fee', 'sweep-batch') AND t.state = 'mined' AND a.hash = t.mined_hash ORDER BY a.id`

// sweepOnChainAt is the block the chain has the mined sweep transaction in now.
func (e *env) sweepOnChainAt() uint64 {
	e.t.Helper()
	hashes := testfactory.Column[string](e.ctx, e.t, e.pool, `SELECT mined_hash FROM chain_txs
		WHERE purpose IN ('sweep', 'sweep-fee', 'sweep-batch') AND state = 'mined' ORDER BY id LIMIT 1`)
	r, err := e.client.Receipt(e.ctx, common.HexToHash(hashes[0]))
	if err != nil {
		e.t.Fatal(err)
	}
	return r.BlockNumber.Uint64()
}

// How the sweep's block leaves in TestSweepThatLeftAheadOfTheScannerIsSentAgain.
const (
	higherAfterRollback = "read by the scanner, mined again higher, then taken"
	higherAhead         = "credited ahead of the scanner, mined again higher, then taken"
	droppedAhead        = "credited ahead of the scanner, taken, dropped"
)

// What was seen: a sweep is credited once its transaction is mined, at any depth, and the
// rollback looked only for sweeps mined in the books after its fork. A credited deposit's
// sweep mined at block S was taken by a shallow reorg that took only the sweep's block; the
// node mined it again one block higher, but the books kept it at S. A second reorg then took
// that new block (the fork at S) and the node dropped the sweep: the rollback, or no rollback
// at all when the scanner had not read the new block yet, missed it. A reorg taking S itself
// before the scanner read it brought no rollback either. Each time the deposit stayed
// CREDITED while its 40 USDT were back at its address: the books 40 USDT short for good
// (batched and unbatched). Now the rollback records where the chain has the sweeps it reads,
// and each pass checks the sweeps the books have mined in the blocks it reads: one that left
// has its deposits reorged, is sent again and counts again at depth, once.
func TestSweepThatLeftAheadOfTheScannerIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, batched := range []bool{true, false} {
		for _, how := range []string{higherAfterRollback, higherAhead, droppedAhead} {
			t.Run(fmt.Sprintf("batched %v, %s", batched, how), func(t *testing.T) {
				t.Parallel()
				amount := big.NewInt(40_000_000)
				e := setupWith(t, options{batched: batched})
				addr := e.paidAddress("ada", batched)
				pay, _ := e.payment(e.newUser(), 0, addr, "USDT", amount)
				e.mine(pay)
				e.confirm()
				bank0 := e.holding("USDT", e.bankroll)
				if how == higherAfterRollback {
					e.run(func() bool { return len(e.hooks.all()) == 1 })
				} else {
					e.creditedAheadOfTheScanner()
				}
				id := e.findDeposit(pay.Hash())
				credited := e.deposit(id)
				e.engine.RebroadcastAfter = 0

				s := e.sweepBlock()
				if how == droppedAhead {
					e.forkAt(s-1, nil)
				} else {
					e.forkAt(s-1, func() { // the node mines the sweep again, one block higher
						e.dev.Commit()
						e.mine(e.resent(minedSweepRaw)...)
					})
					e.scan() // rolls back or reads the new branch: the sweep is on the chain
					e.reconciled()
					again := e.sweepOnChainAt()
					if again == s {
						t.Fatalf("the sweep was mined again at its old block %d", s)
					}
					e.forkAt(again-1, nil) // takes the sweep's new block only; the node drops it
				}
				for end := e.latestHeader().Number.Uint64() + 2*confirmations; e.latestHeader().Number.Uint64() <= end; {
					e.dev.Commit()
					e.scan()
					e.settleAll()
					e.reconciled()
				}
				if got := e.deposit(id); got.Status != domain.DepositCredited {
					t.Fatalf("the deposit is %s, want CREDITED", got.Status)
				}
				if got := e.available("USDT"); got.Cmp(credited.Amount) != 0 {
					t.Errorf("%v USDT available, want the deposit's %v once", got, credited.Amount)
				}
				if got := e.holding("USDT", addr); got.Sign() != 0 {
					t.Errorf("the deposit address still holds %v USDT", got)
				}
				if got := new(big.Int).Sub(e.holding("USDT", e.bankroll), bank0); got.Cmp(amount) != 0 {
					t.Errorf("the bankroll received %v USDT, want the deposit's %v once", got, amount)
				}
				if n := e.depositEvents(id); n != 1 {
					t.Errorf("%d DEPOSIT events, want the one", n)
				}
				e.nothingPending()
			})
		}
	}
}

// creditedAheadOfTheScanner settles the confirmed payment until its sweep is mined and
// credited, the scanner not having read the sweep's block.
func (e *env) creditedAheadOfTheScanner() {
	e.t.Helper()
	e.scan() // confirms
	for range 20 {
		e.settleAll()
		if len(e.hooks.all()) == 1 {
			break
		}
		e.dev.Commit()
		e.settleAll()
		if len(e.hooks.all()) == 1 {
			break
		}
		e.scan()
	}
	if len(e.hooks.all()) != 1 {
		e.t.Fatal("the deposit was not credited")
	}
	if next := uint64(e.count(`SELECT next_block FROM chain_cursors`)); next > e.sweepBlock() {
		e.t.Fatalf("the scanner read the sweep's block %d already (next %d)", e.sweepBlock(), next)
	}
}
