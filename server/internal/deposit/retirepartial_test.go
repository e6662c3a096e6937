package deposit_test

import (
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: one sweep moved two deposits of one address, 1 ETH (nonce 0, a user's
// payment that stayed on the chain) and 40 USDT (nonce 1). A reorg deeper than the depth took
// the USDT payment away for good (its payer spent the nonce elsewhere); the sweep's two signed
// transfers, still in the nodes' pools, were mined on the new branch: the ETH one moved the
// 1 ETH, the USDT one reverted (no USDT at the address). An engineer wrote the USDT deposit
// off. retireSweep read the mined ETH transfer as "the sweep was mined before the write-off"
// and left the sweep to finish as mined; sendSweep then sent the reverted USDT transfer of the
// written-off deposit again (resendReverted): with no further payment its estimate failed on
// every pass, so the ETH deposit, whose money the bankroll had received, was never credited;
// with a later 80 USDT payment it moved 40 USDT of that payment to the bankroll for no one,
// and the later deposit's own sweep then failed its estimate for good.
//
// A sweep with a written-off deposit now never sends a transfer of it again: its pending
// transfers are cancelled and its reverted ones failed at their depth; the deposits whose
// transfers were mined are credited, the others leave the sweep to be swept again.
func TestRetiredSweepWithAMinedTransferCreditsWhatItMoved(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, tc := range []struct {
		name    string
		another *big.Int // the USDT payer's next payment to the address (nil: none)
		workers bool     // both deposits' settle jobs run at once, each step
	}{
		{"no further payment", nil, false},
		{"a later 80 USDT payment", usdt(80), false},
		{"two workers at once", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			addr := e.address("mixed")
			stays, lostPayer := e.newUser(), e.newUser()
			payETH, _ := e.payment(stays, 0, addr, "ETH", testfactory.Ether(1))
			e.mine(payETH)
			parent := e.latestHeader()
			payUSDT, _ := e.payment(lostPayer, 0, addr, "USDT", usdt(40))
			e.mine(payUSDT)
			e.confirm()
			sweeps := e.signedTogether(payETH, payUSDT)

			// The chain forks above the ETH payment: the USDT payer spends its nonce elsewhere, and
			// the sweep's pooled transfers are mined on the new branch.
			oldHead := e.latestHeader().Number.Uint64()
			e.dev.Rollback()
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			elsewhere := e.send(lostPayer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50)
			e.mine(append(e.resent(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
				WHERE t.purpose = 'gas' ORDER BY a.id`), elsewhere)...) // the sweep's gas top-up, back from the pool
			e.mine(e.resent("", sweeps...)...)
			if r, err := e.client.Receipt(e.ctx, sweeps[1].Hash()); err != nil || r.Status != types.ReceiptStatusFailed {
				t.Fatalf("the test needs the USDT transfer reverted on the new branch: %v, %v", r, err)
			}
			for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
				e.dev.Commit()
				e.scan()
			}
			stayed, lost := e.deposit(e.findDeposit(payETH.Hash())), e.deposit(e.findDeposit(payUSDT.Hash()))
			if lost.Status != domain.DepositReorged || stayed.Status != domain.DepositSweeping {
				t.Fatalf("after the reorg: USDT deposit %s, ETH deposit %s; want REORGED, SWEEPING", lost.Status, stayed.Status)
			}
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			tank0, bankUSDT0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
			var next int64
			if tc.another != nil {
				tx, _ := e.payment(lostPayer, 1, addr, "USDT", tc.another)
				e.mine(tx)
				e.scan()
				next = e.findDeposit(tx.Hash())
			}

			e.run(func() bool {
				jobs := []int64{lost.ID} // its queued job, as a worker runs it
				if tc.workers {
					jobs = append(jobs, stayed.ID) // and the other deposit's, on another worker
				}
				var wg sync.WaitGroup
				for _, id := range jobs {
					wg.Go(func() {
						if _, err := e.svc.Settle(e.ctx, id); err != nil {
							t.Errorf("settle %d: %v", id, err)
						}
					})
				}
				wg.Wait()
				return e.deposit(stayed.ID).Status == domain.DepositCredited &&
					(next == 0 || e.deposit(next).Status == domain.DepositCredited)
			})

			if got := e.deposit(lost.ID); got.Status != domain.DepositReorged || e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit is %s with fund entries %q, want REORGED, never credited", got.Status, e.fundKinds(lost.ID))
			}
			stayed = e.deposit(stayed.ID)
			if e.fundKinds(stayed.ID) != "DEPOSIT" || e.available("ETH").Cmp(stayed.Amount) != 0 {
				t.Errorf("the ETH deposit: fund entries %q, %v ETH available; want its %v once", e.fundKinds(stayed.ID),
					e.available("ETH"), stayed.Amount)
			}
			wantUSDT := new(big.Int)
			if next != 0 {
				wantUSDT = e.deposit(next).Amount
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankUSDT0); got.Cmp(wantUSDT) != 0 || e.available("USDT").Cmp(wantUSDT) != 0 {
				t.Errorf("the bankroll received %v USDT units and %v are available, want %v (the later payment's)", got,
					e.available("USDT"), wantUSDT)
			}
			e.nothingPending()
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'failed' AND ref LIKE '%:resolved:%'`); n != 1 ||
				e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE '%:resolved:%:resolved:%'`) != 0 {
				t.Errorf("%d failed USDT transfers, or one freed twice; want the reverted one failed once", n)
			}
			e.gasOnlySince(tank0)
			e.reconciled()
		})
	}
}

// signedTogether scans and settles until the deposits of the given payments are in one sweep
// whose transfers are signed and broadcast, not mined, and returns those transfers, lowest
// nonce first.
func (e *env) signedTogether(pays ...*types.Transaction) []*types.Transaction {
	e.t.Helper()
	for range 4 * confirmations {
		e.scan()
		e.settleAll()
		if e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'pending'`) == len(pays) {
			break
		}
		e.dev.Commit()
	}
	sweep := e.deposit(e.findDeposit(pays[0].Hash())).SweepID
	for _, p := range pays {
		if d := e.deposit(e.findDeposit(p.Hash())); d.SweepID != sweep || sweep == 0 {
			e.t.Fatalf("the test needs the deposits in one sweep: deposit %d is in sweep %d, not %d", d.ID, d.SweepID, sweep)
		}
	}
	raws := testfactory.Column[[]byte](e.ctx, e.t, e.pool, `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep' AND t.state = 'pending' ORDER BY t.nonce, a.id`)
	if len(raws) != len(pays) {
		e.t.Fatalf("the test needs %d sweep transfers signed and not mined, one attempt each: %d", len(pays), len(raws))
	}
	out := make([]*types.Transaction, len(raws))
	for i, raw := range raws {
		out[i] = new(types.Transaction)
		if err := out[i].UnmarshalBinary(raw); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// What the tests send again of the service's signed transactions (their bytes were public once
// broadcast: anyone can send them, a node can keep them through a reorg).
const (
	oldestPendingBatch = `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep-batch' AND t.state = 'pending' ORDER BY a.id LIMIT 1`
	oldestPendingSweep = `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep' AND t.state = 'pending' ORDER BY a.id LIMIT 1`
	pendingSweeps = `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep' AND t.state = 'pending' ORDER BY a.id`
	pendingNetAndFee = `SELECT DISTINCT ON (t.id) a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose IN ('sweep', 'sweep-fee') AND t.state = 'pending' ORDER BY t.id, a.id`
	firstBatch = `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.ref = 'batch:1' ORDER BY a.id LIMIT 1`
)

// mineMoving sends again and mines the signed transactions query selects, and fails the test
// unless each succeeds: an old transfer moving what its address holds now (a later payment's
// money). It returns them.
func (e *env) mineMoving(query string) []*types.Transaction {
	e.t.Helper()
	olds := e.resent(query)
	e.mine(olds...)
	for _, old := range olds {
		if r, err := e.client.Receipt(e.ctx, old.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
			e.t.Fatalf("the test needs the old transfer mined with what its address holds now: %v, %v", r, err)
		}
	}
	return olds
}

// laterCredited finds the later payment again's deposit and settles the written-off deposit
// lostID (its job, as a worker runs it) until the later one is credited, the books holding at
// every step; then it runs the chain past the depth. It returns the later deposit's id.
func (e *env) laterCredited(lostID int64, again *types.Transaction) int64 {
	e.t.Helper()
	e.scan()
	next := e.findDeposit(again.Hash())
	e.settleUntil(lostID, func() bool {
		e.reconciled()
		return e.deposit(next).Status == domain.DepositCredited
	})
	e.runBlocks(confirmations + 2)
	return next
}

// resent sends again the signed transactions whose raw bytes query selects, and txs, as a node
// keeping them in its pool would after a reorg (one already pooled is taken as sent).
func (e *env) resent(query string, txs ...*types.Transaction) []*types.Transaction {
	e.t.Helper()
	if query != "" {
		for _, raw := range testfactory.Column[[]byte](e.ctx, e.t, e.pool, query) {
			tx := new(types.Transaction)
			if err := tx.UnmarshalBinary(raw); err != nil {
				e.t.Fatal(err)
			}
			txs = append(txs, tx)
		}
	}
	for _, tx := range txs {
		if err := e.client.Send(e.ctx, tx); err != nil && !strings.Contains(err.Error(), "already known") {
			e.t.Fatal(err)
		}
	}
	return txs
}

// What was seen: a written-off deposit's sweep (1 ETH, nonce 0) was being retired; its cancel
// (a 0-value self-send at nonce 0) was mined, then a reorg took the cancel's block away before
// the confirmation depth and nothing mined it again (the node dropped it). allDeep read the
// cancel's block from the books, not the chain: once the chain was that many blocks longer the
// sweep was retired, the cancel's ref freed, and nonce 0 left unused on the chain. The same
// user's next payment (2 ETH) was swept at nonce 1, which waited behind the gap for good
// (never credited), and the old sweep's public bytes could still be mined at nonce 0 with
// that payment's money. The same held for a batch cancelled for its written-off deposit (40
// USDT): advanceBatch settled it as soon as its cancel was mined, so the gas tank's nonce was
// left unused when the cancel left the chain, and every later gas tank transaction (the next
// payment's batch) waited behind it for good. A cancel is now read from the chain at its
// depth before anything is settled on it, and one whose block left the chain is put back to
// pending and sent again.
func TestRetiringSweepsCancelThatLeftTheChainIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, currency, purpose string
		lost, another           *big.Int
	}{
		{"sweep", "ETH", "sweep", testfactory.Ether(1), testfactory.Ether(2)},
		{"batch", "USDT", "sweep-batch", big.NewInt(40_000_000), big.NewInt(80_000_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			batched := tc.purpose == "sweep-batch"
			e := setupWith(t, options{batched: batched})
			addr := e.paidAddress("cancel-gone", batched)
			lost, payer := e.writtenOffInSignedSweep(addr, tc.currency, tc.lost)
			e.settleUntil(lost.ID, func() bool {
				return e.count(`SELECT count(*) FROM chain_txs WHERE purpose = $1 AND state = 'cancelled'`, tc.purpose) == 1
			})
			var minedBlock int64
			if err := e.pool.QueryRow(e.ctx, `SELECT mined_block FROM chain_txs WHERE purpose = $1 AND state = 'cancelled'`,
				tc.purpose).Scan(&minedBlock); err != nil {
				t.Fatal(err)
			}
			parent, err := e.client.Header(e.ctx, big.NewInt(minedBlock-1))
			if err != nil {
				t.Fatal(err)
			}
			oldHead := e.forkDropping(parent) // the cancel the fork put back in the pool: dropped
			for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
				e.dev.Commit()
				e.scan()
			}
			tank0, bank0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll)
			again, _ := e.payment(payer, 1, addr, tc.currency, tc.another)
			e.mine(again)
			e.scan()
			next := e.findDeposit(again.Hash())
			e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })

			want := e.deposit(next).Amount
			if got := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); got.Cmp(want) != 0 || e.available(tc.currency).Cmp(want) != 0 {
				t.Errorf("the bankroll received %v and %v is available, want the new deposit's %v", got, e.available(tc.currency), want)
			}
			if e.fundKinds(lost.ID) != "" || len(e.hooks.all()) != 1 {
				t.Errorf("the written-off deposit's fund entries %q, %d DEPOSIT events; want none, the new payment's",
					e.fundKinds(lost.ID), len(e.hooks.all()))
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// A retirement survives a crash at each of its steps (the settle job retried, as River does):
// the gas tank's top-up for the cancel stored or broadcast but not recorded, the cancel
// broadcast but not recorded, the cancel mined but its receipt not read, the later deposit's
// credit. After the restart the sweep is retired with one cancel, the same user's later
// payment is credited once, the gas tank pays gas only and the books hold.
func TestRetirementSurvivesACrashAtEachStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, step string
		when       func(e *env, addr common.Address) bool // at step, whether to crash now
	}{
		{"top-up stored", chaintx.StepStored, func(*env, common.Address) bool { return true }},
		{"top-up broadcast", chaintx.StepBroadcast, func(*env, common.Address) bool { return true }},
		{"cancel broadcast", chaintx.StepBroadcast, func(e *env, _ common.Address) bool {
			return e.count(`SELECT count(*) FROM chain_tx_attempts WHERE cancel AND broadcast_at IS NULL`) > 0
		}},
		{"cancel mined, its receipt not read", chaintx.StepReceipt, func(e *env, addr common.Address) bool {
			used, err := e.client.Nonce(e.ctx, addr, false)
			return err == nil && used > 0 && e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'pending'`) == 1
		}},
		{"the later deposit's credit", deposit.StepSweepCrediting, func(*env, common.Address) bool { return true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			addr := e.address("crash")
			lost, payer := e.writtenOffInSignedSweep(addr, "ETH", testfactory.Ether(1))
			again, _ := e.payment(payer, 1, addr, "ETH", testfactory.Ether(2))
			e.mine(again)
			e.scan()
			next := e.findDeposit(again.Hash())
			tank0, bank0 := e.balance(e.gasTank), e.balance(e.bankroll)

			crashed := e.crashOnce(20, func(step string) bool { return step == tc.step && tc.when(e, addr) }, func() {
				e.scan()
				if _, err := e.svc.Settle(e.ctx, lost.ID); err != nil {
					t.Errorf("settle %d: %v", lost.ID, err)
				}
				e.settleAll()
			})
			if !crashed {
				t.Fatal("never crashed")
			}

			// The restart.
			e.settleUntil(lost.ID, func() bool {
				return e.deposit(next).Status == domain.DepositCredited &&
					e.count(`SELECT count(*) FROM sweeps WHERE id = $1 AND status = 'DONE'`, lost.SweepID) == 1
			})
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'cancelled'`); n != 1 {
				t.Errorf("%d cancelled transfers, want the old sweep's one", n)
			}
			want := e.deposit(next).Amount
			if got := new(big.Int).Sub(e.balance(e.bankroll), bank0); got.Cmp(want) != 0 || e.available("ETH").Cmp(want) != 0 ||
				e.fundKinds(next) != "DEPOSIT" || e.fundKinds(lost.ID) != "" || len(e.hooks.all()) != 1 {
				t.Errorf("the bankroll received %v wei, %v available, fund entries %q and %q, %d DEPOSIT events; want the later "+
					"deposit's %v once", got, e.available("ETH"), e.fundKinds(next), e.fundKinds(lost.ID), len(e.hooks.all()), want)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}
