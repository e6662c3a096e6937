package deposit_test

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: a deposit (1 ETH, or 40 USDT) was confirmed and its sweep (nonce 0) signed
// and broadcast; a reorg deeper than the depth then took the deposit's transfer away for good
// (its payer spent the nonce elsewhere) and an engineer wrote it off. The sweep could never
// pay and stayed pending for good, holding the address's nonce. When the same user paid the
// address again, the old sweep was advanced first:
//
//   - native (a payment of 0.5, 1 or 2 ETH): the gas tank, asked to keep the new deposit at
//     the address, topped it up with 1 ETH (the lost deposit's whole value, sweep:1#1), and the
//     old sweep moved that to the bankroll for no one: the service lost 1 ETH of its gas tank;
//   - token: the old transfer was mined with the new payment's tokens (80 or 40 USDT), or
//     reverted (20 USDT), and the new deposit's sweep then failed its gas estimate on every
//     pass ("does it hold 80 USDT?"), never credited.
//
// A signed sweep with a written-off deposit is now retired: each transfer is cancelled at its
// nonce (the gas tank pays 21,000 gas), and once the cancels have the depth the sweep closes,
// moving nothing, and its deposits are swept again.
func TestSweepOfAWrittenOffDepositIsRetired(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, tc := range []struct {
		name          string
		currency      string
		lost, another *big.Int // the lost payment and the same user's next one (nil: none)
	}{
		{"native, no further payment", "ETH", testfactory.Ether(1), nil},
		{"native, a bigger payment", "ETH", testfactory.Ether(1), testfactory.Ether(2)},
		{"native, an equal payment", "ETH", testfactory.Ether(1), testfactory.Ether(1)},
		{"native, a smaller payment", "ETH", testfactory.Ether(1), big.NewInt(5e17)},
		{"token, no further payment", "USDT", usdt(40), nil},
		{"token, a bigger payment", "USDT", usdt(40), usdt(80)},
		{"token, an equal payment", "USDT", usdt(40), usdt(40)},
		{"token, a smaller payment", "USDT", usdt(40), usdt(20)},
		{"batched token, no further payment", "USDT", usdt(40), nil},
		{"batched token, a bigger payment", "USDT", usdt(40), usdt(80)},
		{"batched token, an equal payment", "USDT", usdt(40), usdt(40)},
		{"batched token, a smaller payment", "USDT", usdt(40), usdt(20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			batched := strings.HasPrefix(tc.name, "batched")
			e := setupWith(t, options{batched: batched})
			addr := e.paidAddress("stuck", batched)
			lost, payer := e.writtenOffInSignedSweep(addr, tc.currency, tc.lost)
			tank0, bank0 := e.balance(e.gasTank), e.holding(tc.currency, e.bankroll)

			var next domain.Deposit
			if tc.another != nil {
				tx, _ := e.payment(payer, 1, addr, tc.currency, tc.another)
				e.mine(tx)
				e.scan()
				next.ID = e.findDeposit(tx.Hash())
			}
			e.settleUntil(lost.ID, func() bool {
				return e.count(`SELECT count(*) FROM sweeps WHERE id = $1 AND status = 'DONE'`, lost.SweepID) == 1 &&
					(next.ID == 0 || e.deposit(next.ID).Status == domain.DepositCredited)
			})

			if got := e.deposit(lost.ID); got.Status != domain.DepositReorged || got.SweepID != 0 || e.fundKinds(lost.ID) != "" {
				t.Errorf("the written-off deposit is %s in sweep %d with fund entries %q, want REORGED in none, never credited",
					got.Status, got.SweepID, e.fundKinds(lost.ID))
			}
			// Its transfer (a batch's: the batch) is cancelled; a sweep's leaves its ref.
			cancelled := fmt.Sprintf("sweep:%d:%%:resolved:%%", lost.SweepID)
			if batched {
				cancelled = "batch:%"
			}
			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE $1 AND state = 'cancelled'`, cancelled); n != 1 {
				t.Errorf("%d cancelled transfers of the old sweep, want its one", n)
			}
			e.nothingPending()
			// The gas tank paid gas only (the cancel's, a token sweep's), never a deposit's value.
			e.gasOnlySince(tank0)
			want := new(big.Int)
			if next.ID != 0 {
				next = e.deposit(next.ID)
				want = next.Amount
				if n := len(e.hooks.all()); n != 1 {
					t.Errorf("%d DEPOSIT events, want the new payment's", n)
				}
			}
			if received := new(big.Int).Sub(e.holding(tc.currency, e.bankroll), bank0); received.Cmp(want) != 0 {
				t.Errorf("the bankroll received %v %s, want %v (the new deposit's net amount)", received, tc.currency, want)
			}
			if got := e.available(tc.currency); got.Cmp(want) != 0 {
				t.Errorf("%v %s available, want %v", got, tc.currency, want)
			}
			e.reconciled()
		})
	}
}

// payment is payer's transfer of amount of currency (ETH or USDT) to addr at nonce, sent.
func (e *env) payment(payer user, nonce uint64, addr common.Address, currency string, amount *big.Int) (*types.Transaction, user) {
	e.t.Helper()
	if currency == "ETH" {
		return e.send(payer, nonce, addr, amount, nil, 2), payer
	}
	return e.send(payer, nonce, e.usdt.Address, nil, erc20Transfer(addr, amount.Int64()), 2), payer
}

// holding is what owner holds of currency (ETH or USDT).
func (e *env) holding(currency string, owner common.Address) *big.Int {
	e.t.Helper()
	if currency == "ETH" {
		return e.balance(owner)
	}
	return e.tokenBalance(owner)
}

// writtenOffInSignedSweep has a new user pay amount of currency to addr (its nonce 0), mines
// the payment in the next block, confirms it and signs and broadcasts its sweep without mining
// it; then a reorg deeper than the depth replaces the payment with a transfer elsewhere at the
// same nonce, and an engineer writes the deposit off. It returns the deposit and the payer.
func (e *env) writtenOffInSignedSweep(addr common.Address, currency string, amount *big.Int) (domain.Deposit, user) {
	e.t.Helper()
	payer := e.newUser()
	pay, _ := e.payment(payer, 0, addr, currency, amount)
	return e.writtenOffBeforeItsSweep(pay, &payer), payer
}

// writtenOffBeforeItsSweep is writtenOffInSignedSweep; with no payer (nil) the reorg drops the
// payment without spending its nonce elsewhere, so the same signed transfer may be mined again.
func (e *env) writtenOffBeforeItsSweep(pay *types.Transaction, payer *user) domain.Deposit {
	e.t.Helper()
	parent := e.latestHeader()
	e.mine(pay)
	var d domain.Deposit
	for range 4 * confirmations { // a token sweep waits for its gas top-up
		e.scan()
		e.settleAll()
		if d = e.deposit(e.findDeposit(pay.Hash())); d.SweepID != 0 {
			break
		}
		e.dev.Commit()
	}
	if d.SweepID == 0 || e.count(`SELECT count(*) FROM chain_txs WHERE purpose IN ('sweep', 'sweep-batch') AND state = 'pending'`) != 1 {
		e.t.Fatalf("the test needs the deposit's sweep signed and not mined: deposit %s in sweep %d", d.Status, d.SweepID)
	}
	e.engine.RebroadcastAfter = 0 // the rollback drops the pooled sweep; the engine may send it again at once
	e.deepReorg(parent, payer, e.scan)
	if got := e.deposit(d.ID); got.Status != domain.DepositReorged {
		e.t.Fatalf("after the reorg the deposit is %s, want REORGED", got.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: d.ID, Resolution: "WRITE_OFF",
		Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	if !slices.Contains(e.queuedSettles(), d.ID) {
		e.t.Fatalf("no settle job queued for the written-off deposit of a signed sweep")
	}
	e.reconciled()
	return d
}

// deepReorg replaces the chain after parent, what the pool held dropped, with a branch that
// outgrows the old head by the confirmation depth, calling each after every new block. With
// a payer its nonce 0 goes to a transfer elsewhere on the new branch (its payment can never
// come back); with none (nil) the payments the fork put back in the pool are dropped too.
func (e *env) deepReorg(parent *types.Header, payer *user, each func()) {
	e.t.Helper()
	oldHead := e.latestHeader().Number.Uint64()
	e.dev.Rollback()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		e.t.Fatal(err)
	}
	if payer != nil {
		e.mine(e.send(*payer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50))
	} else {
		e.dev.Rollback() // the payment the fork put back in the pool
	}
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		each()
	}
}

// forkDropping forks the chain at parent and drops what the fork put back in the node's pool
// (the dev chain's rollback does; a real node may too). It returns the old head's number.
func (e *env) forkDropping(parent *types.Header) uint64 {
	e.t.Helper()
	oldHead := e.latestHeader().Number.Uint64()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		e.t.Fatal(err)
	}
	e.dev.Rollback()
	return oldHead
}

// settledPast runs the scanner and every settle job block by block, the books checked at each,
// until the chain is past oldHead's confirmation depth.
func (e *env) settledPast(oldHead uint64) {
	e.t.Helper()
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		e.scan()
		e.settleAll()
		e.reconciled()
	}
}

// sweptAndCredited runs block by block (the books checked at each), for at most six depths,
// until deposit id is credited and addr holds no USDT, then past the depth.
func (e *env) sweptAndCredited(id int64, addr common.Address) {
	e.t.Helper()
	for range 6 * confirmations {
		if e.deposit(id).Status == domain.DepositCredited && e.tokenBalance(addr).Sign() == 0 {
			break
		}
		e.runBlocks(1)
		e.reconciled()
	}
	e.runBlocks(confirmations + 2)
}

// settleUntil runs the settle of deposit id (its queued job, as a worker runs it), with what
// else the service does meanwhile, until done.
func (e *env) settleUntil(id int64, done func() bool) {
	e.t.Helper()
	e.run(func() bool {
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			e.t.Fatal(err)
		}
		return done()
	})
}

// A written-off deposit whose sweep was retired, then mined again and reinstated by an
// engineer, is swept by a new sweep and credited once: the retired sweep's cancel is never
// read as its sweep, and the bankroll receives the deposit once.
func TestRetiredSweepsDepositReinstatedIsSweptOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	lost := e.retiredThenMinedAgain("ETH", testfactory.Ether(1))
	bank0 := e.balance(e.bankroll)
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
		Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.run(func() bool { return e.deposit(lost.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)
	d := e.deposit(lost.ID)
	if d.SweepID == lost.SweepID || e.fundKinds(d.ID) != "DEPOSIT" || len(e.hooks.all()) != 1 {
		t.Errorf("reinstated: sweep %d (the retired one was %d), fund entries %q, %d DEPOSIT events; want a new sweep, one "+
			"DEPOSIT", d.SweepID, lost.SweepID, e.fundKinds(d.ID), len(e.hooks.all()))
	}
	if got := new(big.Int).Sub(e.balance(e.bankroll), bank0); got.Cmp(d.Amount) != 0 || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Errorf("the bankroll received %v wei and %v is available, want the deposit's %v once", got, e.available("ETH"), d.Amount)
	}
	e.reconciled()
}

// retiredThenMinedAgain has a new user pay amount of currency to a new address; its deposit is
// written off in its signed sweep (writtenOffBeforeItsSweep, the payment dropped), which is
// retired; then the same signed payment is mined again and confirmed: a new incident, for the
// engineer. It returns the deposit as written off.
func (e *env) retiredThenMinedAgain(currency string, amount *big.Int) domain.Deposit {
	e.t.Helper()
	pay, _ := e.payment(e.newUser(), 0, e.address("back"), currency, amount)
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	e.settleUntil(lost.ID, func() bool {
		return e.count(`SELECT count(*) FROM sweeps WHERE id = $1 AND status = 'DONE'`, lost.SweepID) == 1
	})
	e.minedAgain(pay, lost.ID)
	return lost
}

// The retired sweep's signed transfer is public: anyone may send it again. When it is mined,
// with a later payment's money, before its cancel, the sweep is finished as a mined one: the
// written-off deposit is never credited, what it moved is carried to the later deposit's sweep
// (carry.go; the gas tank used to make up that sweep's shortfall, about 1 ETH), the later
// deposit is credited once, the gas tank pays gas only, and the books hold.
func TestRetiredSweepMinedBeforeItsCancelCreditsNothingTwice(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("race")
	lost, payer := e.writtenOffInSignedSweep(addr, "ETH", testfactory.Ether(1))
	tank0 := e.balance(e.gasTank)
	again, _ := e.payment(payer, 1, addr, "ETH", testfactory.Ether(2))
	e.mine(again)
	var raw []byte
	if err := e.pool.QueryRow(e.ctx, `SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep' ORDER BY a.id LIMIT 1`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var old types.Transaction
	if err := old.UnmarshalBinary(raw); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Send(e.ctx, &old); err != nil {
		t.Fatal(err)
	}
	e.mine(&old)
	e.scan()
	next := e.findDeposit(again.Hash())
	e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	if got := e.deposit(lost.ID); got.Status != domain.DepositReorged || e.fundKinds(lost.ID) != "" {
		t.Errorf("the written-off deposit is %s with fund entries %q, want REORGED, never credited", got.Status, e.fundKinds(lost.ID))
	}
	if d := e.deposit(next); len(e.hooks.all()) != 1 || e.available("ETH").Cmp(d.Amount) != 0 || e.fundKinds(next) != "DEPOSIT" {
		t.Errorf("%d DEPOSIT events, %v ETH available, fund entries %q; want the later deposit's %v once", len(e.hooks.all()),
			e.available("ETH"), e.fundKinds(next), d.Amount)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// What was seen: a native deposit (1 ETH) was swept (nonce 0) and credited; a reorg deeper
// than the depth then took its transfer away for good (its payer spent the nonce elsewhere),
// and its sweep with it, and an engineer wrote it off. The books kept the sweep's transaction
// mined while the address's nonce 0 was unused on the chain: the same user's next payment
// (2 ETH) was swept at nonce 1, which waited behind it for good (the deposit stayed SWEEPING);
// and the old sweep's bytes, sent again by anyone, would have moved 1 ETH of the new payment.
// The transfer is now found off the chain once a later sweep waits behind its nonce, and
// cancelled at it, every deposit of its sweep being written off.
//
// The token variant (40 USDT, then 80, 40 or 20): the old token transfer, sent again by anyone,
// would move the later payment's tokens; its cancel's gas comes from the gas tank.
func TestDoneSweepThatLeftTheChainWithItsWrittenOffDepositIsCancelled(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, c := range []struct {
		currency      string
		lost, another *big.Int
	}{
		{"ETH", testfactory.Ether(1), testfactory.Ether(2)},
		{"ETH", testfactory.Ether(1), testfactory.Ether(1)},
		{"ETH", testfactory.Ether(1), big.NewInt(5e17)},
		{"USDT", usdt(40), usdt(80)},
		{"USDT", usdt(40), usdt(40)},
		{"USDT", usdt(40), usdt(20)},
	} {
		another := c.another
		t.Run(fmt.Sprintf("then %v %s", another, c.currency), func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			addr := e.address("gone")
			payer := e.newUser()
			parent := e.latestHeader()
			pay, _ := e.payment(payer, 0, addr, c.currency, c.lost)
			e.mine(pay)
			e.run(func() bool { return len(e.hooks.all()) == 1 })
			lost := e.deposit(e.findDeposit(pay.Hash()))
			e.deepReorg(parent, &payer, e.scan)
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			tank0, bank0 := e.balance(e.gasTank), e.holding(c.currency, e.bankroll)
			tx, _ := e.payment(payer, 1, addr, c.currency, another)
			e.mine(tx)
			e.scan()
			next := e.findDeposit(tx.Hash())
			e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })

			if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE 'sweep:1:%:resolved:%' AND state = 'cancelled'`); n != 1 {
				t.Errorf("%d cancelled and retired transfers of the old sweep, want its one", n)
			}
			e.nothingPending()
			e.gasOnlySince(tank0)
			want := e.deposit(next).Amount
			if got := new(big.Int).Sub(e.holding(c.currency, e.bankroll), bank0); got.Cmp(want) != 0 || e.available(c.currency).Cmp(want) != 0 {
				t.Errorf("the bankroll received %v and %v is available, want %v", got, e.available(c.currency), want)
			}
			if e.fundKinds(lost.ID) != "DEPOSIT,REORG" {
				t.Errorf("the written-off deposit's fund entries %q, want DEPOSIT,REORG", e.fundKinds(lost.ID))
			}
			e.reconciled()
		})
	}
}

// gasOnlySince fails the test when the gas tank spent more than gas (1e16 wei) since it held
// tank0: it never pays a deposit's value.
func (e *env) gasOnlySince(tank0 *big.Int) {
	e.t.Helper()
	if spent := new(big.Int).Sub(tank0, e.balance(e.gasTank)); spent.Cmp(big.NewInt(1e16)) > 0 {
		e.t.Errorf("the gas tank spent %v wei, want gas only", spent)
	}
}

// nothingPending fails the test while a transaction Coffer signed is still pending.
func (e *env) nothingPending() {
	e.t.Helper()
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE state = 'pending'`); n != 0 {
		e.t.Errorf("%d transactions still pending", n)
	}
}
