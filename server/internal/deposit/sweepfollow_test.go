package deposit_test

import (
	"errors"
	"math/big"
	"strconv"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// creditedThenDropped credits payer's payment of amount of currency (ETH or a token) to addr
// at payer's nonce 0, then forks the chain below it with nothing mined again (the payment and
// its sweep are dropped, the payer's nonce 0 left free) past the confirmation depth, and has an
// engineer write the deposit off. It returns the payment (still valid: it may be mined again)
// and the deposit as it was credited.
func (e *env) creditedThenDropped(payer user, addr common.Address, currency string, amount *big.Int) (*types.Transaction, domain.Deposit) {
	e.t.Helper()
	hooks := len(e.hooks.all())
	parent := e.latestHeader()
	pay, _ := e.payment(payer, 0, addr, currency, amount)
	e.mine(pay)
	e.run(func() bool { return len(e.hooks.all()) == hooks+1 })
	credited := e.deposit(e.findDeposit(pay.Hash()))
	oldHead := e.forkDropping(parent) // what the fork put back in the pool
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		e.scan()
	}
	if _, err := e.client.Receipt(e.ctx, pay.Hash()); !errors.Is(err, ethereum.NotFound) {
		e.t.Fatalf("the payment is still on the chain: %v", err)
	}
	if got := e.deposit(credited.ID); got.Status != domain.DepositReorged {
		e.t.Fatalf("after the reorg the deposit is %s, want REORGED", got.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: credited.ID, Resolution: "WRITE_OFF",
		Note: writeOffNote, Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	e.reconciled()
	return pay, credited
}

// depositEvents counts the DEPOSIT events queued for a deposit.
func (e *env) depositEvents(id int64) int {
	e.t.Helper()
	n := 0
	for _, ev := range e.hooks.all() {
		if ev.GetDepositId() == id {
			n++
		}
	}
	return n
}

// cancelledThenMinedAgain is creditedThenDropped of lost (currency) at a new address, whose
// old sweep is then cancelled and retired once another user's payment of another is swept
// there at the next nonce; the written-off payment is then mined again and its new incident
// opened. It returns the written-off deposit as credited and the other deposit's id.
func (e *env) cancelledThenMinedAgain(currency string, lost, another *big.Int) (domain.Deposit, int64) {
	e.t.Helper()
	addr := e.address("again")
	pay, credited := e.creditedThenDropped(e.newUser(), addr, currency, lost)

	// Another user pays the address: its sweep, at the next nonce, has the old one cancelled.
	other, _ := e.payment(e.newUser(), 0, addr, currency, another)
	e.mine(other)
	e.scan()
	next := e.findDeposit(other.Hash())
	e.settleUntil(credited.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE $1 AND state = 'cancelled'`,
		"sweep:"+itoa(credited.SweepID)+":%:resolved:%"); n != 1 {
		e.t.Fatalf("%d cancelled and retired transfers of the old sweep, want its one", n)
	}
	e.reconciled()
	e.minedAgain(pay, credited.ID)
	e.reconciled()
	return credited, next
}

// minedAgain has written-off deposit id's payment mined again and confirmed: a new incident,
// for the engineer.
func (e *env) minedAgain(pay *types.Transaction, id int64) {
	e.t.Helper()
	if err := e.client.Send(e.ctx, pay); err != nil {
		e.t.Fatal(err)
	}
	e.mine(pay)
	e.run(func() bool {
		return e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, id) == 1
	})
}

// What was seen: a credited deposit (1 ETH, or 40 USDT) left the chain in a reorg deeper than
// the depth, with its sweep (nonce 0), and was written off; another user's payment to the same
// address was then swept at nonce 1, so the old sweep's transfer was cancelled at nonce 0
// (cancelLeftChain) and retired. When the written-off payment was mined again, its new incident
// could never be reinstated: REINSTATE was refused SWEEP_NOT_MINED for good (its sweep was
// cancelled: nothing will ever mine it), and the money sat at the deposit address unswept. Now
// REINSTATE of a deposit whose transfer is back while its sweep is cancelled at depth puts it
// back SWEEPING, out of the dead sweep: a new sweep moves its money and it is credited back
// then (a REINSTATE entry of its announced amount, no second DEPOSIT), the books holding at
// every step.
func TestReinstateAfterItsSweepWasCancelledSweepsItAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		currency      string
		lost, another *big.Int
	}{
		{"ETH", big.NewInt(1e18), big.NewInt(2e18)},
		{"USDT", big.NewInt(40_000_000), big.NewInt(80_000_000)},
	} {
		t.Run(c.currency, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			lost, next := e.cancelledThenMinedAgain(c.currency, c.lost, c.another)
			bank0 := e.holding(c.currency, e.bankroll)
			got, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
				Note: "the payment came back", Actor: "service-team:cli:eve"})
			if err != nil {
				t.Fatalf("REINSTATE once the old sweep is cancelled: %v", err)
			}
			if got.Deposit.Status != domain.DepositSweeping || got.Deposit.SweepID != 0 || e.available(c.currency).Cmp(e.deposit(next).Amount) != 0 {
				t.Fatalf("reinstated: %s in sweep %d, %v %s available; want SWEEPING in no sweep, credited back once swept",
					got.Deposit.Status, got.Deposit.SweepID, e.available(c.currency), c.currency)
			}
			e.reconciled()
			e.run(func() bool { return e.deposit(lost.ID).Status == domain.DepositCredited })
			e.runBlocks(confirmations + 2)

			d := e.deposit(lost.ID)
			if d.SweepID == lost.SweepID || d.Amount.Cmp(lost.Amount) != 0 || e.fundKinds(d.ID) != "DEPOSIT,REORG,REINSTATE" ||
				e.depositEvents(d.ID) != 1 {
				t.Errorf("credited back: sweep %d (the cancelled one was %d), amount %v (announced %v), fund entries %q, %d DEPOSIT "+
					"events; want a new sweep, the announced amount, one DEPOSIT", d.SweepID, lost.SweepID, d.Amount, lost.Amount,
					e.fundKinds(d.ID), e.depositEvents(d.ID))
			}
			want := new(big.Int).Add(e.deposit(next).Amount, lost.Amount)
			if e.available(c.currency).Cmp(want) != 0 {
				t.Errorf("%v %s available, want %v (both deposits once)", e.available(c.currency), c.currency, want)
			}
			if got := new(big.Int).Sub(e.holding(c.currency, e.bankroll), bank0); got.Sign() <= 0 {
				t.Errorf("the bankroll received %v %s from the new sweep, want the deposit's money", got, c.currency)
			}
			e.nothingPending()
			e.reconciled()
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// sweptTogether confirms two deposits' payments (mined) and sweeps them together, crediting
// both.
func (e *env) sweptTogether(kept, lost *types.Transaction) {
	e.t.Helper()
	hooks := len(e.hooks.all())
	for range confirmations + 1 { // both confirmed before either is swept
		e.dev.Commit()
		e.scan()
	}
	e.run(func() bool { return len(e.hooks.all()) == hooks+2 })
	a, b := e.deposit(e.findDeposit(kept.Hash())), e.deposit(e.findDeposit(lost.Hash()))
	if a.SweepID == 0 || a.SweepID != b.SweepID {
		e.t.Fatalf("the test needs both deposits in one sweep: sweeps %d and %d", a.SweepID, b.SweepID)
	}
}

// What was seen: two deposits at one address (1 ETH each) were swept together and credited; a
// reorg deeper than the depth took one deposit's transfer and the sweep away (the other
// deposit's block stayed), both REORGED, the lost one's incident left open. The scanner sent
// the old sweep again for the kept deposit (readyToReinstate: its own signed bytes, moving both
// deposits' value); refused while the address held the kept deposit only, it was mined as soon
// as another user paid the address (2 ETH), with that payment's money, and the gas tank made up
// the new deposit's sweep (0.99999 ETH). The old sweep now waits while a deposit of it is off
// the chain; once that one is written off it is cancelled at its nonce, the new deposit is
// swept once, and the kept deposit, resolved REINCLUDED, is swept again and credited back.
func TestKeptDepositsSweepNeverPaysWithALaterPayment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		currency string
		unit     int64
	}{{"ETH", 1e18}, {"USDT", 1e6}} {
		t.Run(c.currency, func(t *testing.T) {
			t.Parallel()
			keptDepositsSweep(t, c.currency, c.unit)
		})
	}
}

// keptDepositsSweep is TestKeptDepositsSweepNeverPaysWithALaterPayment in currency, each
// payment a number of units.
func keptDepositsSweep(t *testing.T, currency string, unit int64) {
	t.Helper()
	units := func(n int64) *big.Int { return big.NewInt(n * unit) }
	e := setup(t, 0)
	addr := e.address("kept")
	keptPayer, lostPayer := e.newUser(), e.newUser()
	keptPay, _ := e.payment(keptPayer, 0, addr, currency, units(1))
	e.mine(keptPay)
	fork := e.latestHeader() // the reorg keeps the kept payment's block
	lostPay, _ := e.payment(lostPayer, 0, addr, currency, units(1))
	e.mine(lostPay)
	e.sweptTogether(keptPay, lostPay)
	kept, lost := e.deposit(e.findDeposit(keptPay.Hash())), e.deposit(e.findDeposit(lostPay.Hash()))
	e.deepReorg(fork, &lostPayer, func() {
		e.scan()
		e.settleAll()
	})
	if k, l := e.deposit(kept.ID), e.deposit(lost.ID); k.Status != domain.DepositReorged || l.Status != domain.DepositReorged {
		t.Fatalf("after the reorg: kept %s, lost %s; want both REORGED", k.Status, l.Status)
	}
	e.reconciled()
	tank0, bank0 := e.balance(e.gasTank), e.holding(currency, e.bankroll)

	// Another user pays the address while the lost deposit's incident is open.
	other, _ := e.payment(e.newUser(), 0, addr, currency, units(2))
	e.mine(other)
	e.runBlocks(3 * confirmations)
	next := e.deposit(e.findDeposit(other.Hash()))
	received := new(big.Int).Sub(e.holding(currency, e.bankroll), bank0)
	// Whatever reached the bankroll came from the kept deposit and the new payment, never the
	// lost one's value taken out of the new payment (nor the gas tank's).
	if received.Cmp(units(3)) > 0 {
		t.Errorf("the bankroll received %v, more than the kept deposit and the new payment", received)
	}
	e.gasOnlySince(tank0)
	if bal := e.holding(currency, addr); next.Status != domain.DepositCredited && bal.Cmp(next.GrossAmount) < 0 {
		t.Errorf("the new deposit is %s and the address holds %v, less than its %v: another sweep took its money",
			next.Status, bal, next.GrossAmount)
	}
	if next.Status == domain.DepositCredited {
		if n := e.depositEvents(next.ID); n != 1 {
			t.Errorf("%d DEPOSIT events for the new deposit, want one", n)
		}
	}
	if e.fundKinds(lost.ID) != "DEPOSIT,REORG" {
		t.Errorf("the lost deposit's fund entries %q, want DEPOSIT,REORG (never counted again)", e.fundKinds(lost.ID))
	}
	e.reconciled()

	// The lost payment is written off: the old sweep can never pay and is cancelled at its
	// nonce; the new deposit is swept, and the kept one, reinstated, by a new sweep too.
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.run(func() bool { return e.deposit(next.ID).Status == domain.DepositCredited })
	e.reconciled()
	// The kept deposit's block stayed: once the cancel is retired the scanner resolves it
	// REINCLUDED, and a new sweep moves its money and credits it back.
	e.run(func() bool {
		e.reconciled()
		return e.deposit(kept.ID).Status == domain.DepositCredited
	})
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE $1 AND state = 'cancelled'`,
		"sweep:"+itoa(kept.SweepID)+":%:resolved:%"); n != 1 {
		t.Errorf("%d cancelled and retired transfers of the old sweep, want its one", n)
	}
	if got := e.reorgActions(kept.ID); got != "DETECTED/system,REINCLUDED/system" {
		t.Errorf("the kept deposit's audit: %s", got)
	}
	e.runBlocks(confirmations + 2)
	k, next := e.deposit(kept.ID), e.deposit(next.ID)
	if e.fundKinds(k.ID) != "DEPOSIT,REORG,REINSTATE" || e.depositEvents(k.ID) != 1 || e.fundKinds(lost.ID) != "DEPOSIT,REORG" ||
		e.fundKinds(next.ID) != "DEPOSIT" || e.depositEvents(next.ID) != 1 {
		t.Errorf("fund entries: kept %q, lost %q, new %q; DEPOSIT events: kept %d, new %d", e.fundKinds(k.ID), e.fundKinds(lost.ID),
			e.fundKinds(next.ID), e.depositEvents(k.ID), e.depositEvents(next.ID))
	}
	if want := new(big.Int).Add(k.Amount, next.Amount); e.available(currency).Cmp(want) != 0 {
		t.Errorf("%v %s available, want %v (the kept and new deposits once)", e.available(currency), currency, want)
	}
	e.gasOnlySince(tank0)
	if received := new(big.Int).Sub(e.holding(currency, e.bankroll), bank0); received.Cmp(units(3)) > 0 {
		t.Errorf("the bankroll received %v, more than the kept deposit and the new payment", received)
	}
	e.nothingPending()
	e.reconciled()
}

// What was seen: a credited token deposit's gas top-up left the chain with its block and was
// sent again with its own bytes (its nonce free: lostTopUp); the node then dropped it and the
// gas tank's nonce went to another transaction, mined at depth. The top-up stayed pending for
// good: fund waited on it at every pass (only an ERROR past Config.GasWaitAlert and a counter),
// the sweep never got its gas, and the deposit never counted again. A pending top-up whose nonce
// is used at depth by another transaction (none of its attempts mined) is now marked failed,
// and a new top-up is sent.
func TestResentGasTopUpWhoseNonceIsTakenIsReplaced(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	id, addr, transfer, lost, parent := e.creditedWithTopUp("gil")

	// The chain forks below the deposit; the user's transfer is mined again, the top-up is not.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Rollback()
	if err := e.client.Send(e.ctx, transfer); err != nil {
		t.Fatal(err)
	}
	e.mine(transfer)
	e.engine.RebroadcastAfter = 0 // what the node drops below is sent again at once
	resent := false
	for range 4 * confirmations {
		e.scan()
		e.settleAll()
		if resent = e.topUps(addr)[0].State == domain.ChainTxPending; resent {
			break
		}
		e.dev.Commit()
	}
	if !resent {
		t.Fatalf("the lost top-up was not sent again: %+v", e.topUps(addr))
	}
	// The node drops it, and the gas tank's nonce goes to another transaction, mined.
	e.dev.Rollback()
	e.mine(e.takeGasTankNonce(lost.Nonce))

	e.countsAgainOnce(id, "USDC", 40_000_000)
	now := e.topUps(addr)
	if len(now) != 2 || now[0].State != domain.ChainTxFailed || now[1].State != domain.ChainTxMined {
		t.Fatalf("top-ups %+v, want the first failed and one new one mined", now)
	}
	if n := e.depositEvents(id); n != 1 {
		t.Fatalf("%d DEPOSIT events, want the one", n)
	}
	e.reconciled()
}
