package deposit_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: a credited deposit (1 ETH, or 40 USDT) taken by a reorg deeper than the depth
// with its sweep and written off; another user's payment to the address had the old sweep
// cancelled at its nonce, and the cancel was sent but dropped by the node. The written-off
// payment was then mined again, its new incident opened, and an engineer wrote it off again
// before the cancel was mined: the write-off saw a sweep not cancelled yet, so nothing swept the
// deposit, and once the cancel reached its depth the money stayed at the deposit address for
// good. The same with no other payment (nothing cancels the old sweep) when the second
// write-off came before the scanner sent the old sweep again. As when the cancel had its depth
// before the second write-off (TestWrittenOffAgainAfterItsSweepWasCancelledIsSweptNotCredited),
// it is swept to the bankroll once, never credited, the gas tank paying gas only.
func TestWrittenOffAgainBeforeItsSweepsCancelIsRetiredIsSwept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, currency string
		// another is another user's payment to the address (its sweep has the old one
		// cancelled), or nil: none.
		lost, another *big.Int
	}{
		{"ETH, cancel in flight", "ETH", testfactory.Ether(1), testfactory.Ether(2)},
		{"USDT, cancel in flight", "USDT", big.NewInt(40_000_000), big.NewInt(80_000_000)},
		{"ETH, no cancel yet", "ETH", testfactory.Ether(1), nil},
		{"USDT, no cancel yet", "USDT", big.NewInt(40_000_000), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			lost, next := e.writtenOffAgainWhileCancelling(c.currency, c.lost, c.another)
			if got := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE $1 AND ref LIKE '%:resolved:%'`,
				"sweep:"+itoa(lost.SweepID)+":%"); got != 0 {
				t.Fatalf("the old sweep's cancel is retired already (%d): the test needs it in flight", got)
			}
			tank0, bank0 := e.balance(e.gasTank), e.holding(c.currency, e.bankroll)
			e.settleUntil(lost.ID, e.sweptAnew(lost)) // its job, queued by the write-off
			e.runBlocks(confirmations + 2)

			// The other deposit's sweep, which waited behind the cancel, is mined meanwhile too.
			owed := new(big.Int)
			if next != 0 {
				owed = e.deposit(next).Amount
			}
			e.sweptNotCredited(lost, c.currency, bank0, owed, "DEPOSIT,REORG") // the write-off stands
			if next != 0 && e.deposit(next).Status != domain.DepositCredited {
				t.Errorf("the other deposit is %s, want it credited", e.deposit(next).Status)
			}
			if e.available(c.currency).Cmp(owed) != 0 {
				t.Errorf("%v %s available, want the other deposit's %v only", e.available(c.currency), c.currency, owed)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// writtenOffAgainWhileCancelling is cancelledThenMinedAgain with the old sweep's cancel in
// flight: sent, then dropped by the node before it is mined, while the written-off payment is
// mined again and confirmed (scans only, no settle step sends the cancel again); then an
// engineer writes the deposit off a second time, as soon as its incident opens (before the
// scanner sends the old sweep again). With no other payment (another nil) nothing cancels the
// old sweep. It returns the deposit as credited and the other deposit's id (0: none).
func (e *env) writtenOffAgainWhileCancelling(currency string, lost, another *big.Int) (domain.Deposit, int64) {
	e.t.Helper()
	addr := e.address("again")
	pay, credited := e.creditedThenDropped(e.newUser(), addr, currency, lost)
	var next int64
	if another != nil {
		other, _ := e.payment(e.newUser(), 0, addr, currency, another)
		e.mine(other)
		e.scan()
		next = e.findDeposit(other.Hash())
		e.settleUntil(credited.ID, func() bool {
			return e.count(`SELECT count(*) FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
				WHERE t.ref LIKE $1 AND a.cancel AND a.broadcast_at IS NOT NULL`, "sweep:"+itoa(credited.SweepID)+":%") == 1
		})
		e.dev.Rollback() // the node drops the cancel
		e.engine.RebroadcastAfter = 0
	}
	if err := e.client.Send(e.ctx, pay); err != nil {
		e.t.Fatal(err)
	}
	e.mine(pay)
	for i := 0; e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, credited.ID) == 0; i++ {
		if i > 2*confirmations {
			e.t.Fatal("no new incident for the written-off payment mined again")
		}
		e.dev.Commit()
		e.scan()
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: credited.ID, Resolution: "WRITE_OFF",
		Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	e.reconciled()
	return credited, next
}

// What was seen: a deposit (1 ETH, or 40 USDT) written off in its signed sweep (its payment
// dropped by a reorg deeper than the depth), whose sweep was then retired (cancelled at its
// nonce, moving nothing), was mined again (its money back at the address, a new incident) and
// written off a second time: it had left the retired sweep, and a written-off deposit in no
// sweep was left alone, so the money stayed at the deposit address for good. It is swept to the
// bankroll once now, never credited, the gas tank paying gas only.
func TestWrittenOffAgainAfterItsSweepWasRetiredIsSwept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		currency string
		lost     *big.Int
	}{
		{"ETH", testfactory.Ether(1)},
		{"USDT", big.NewInt(40_000_000)},
	} {
		t.Run(c.currency, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			lost := e.retiredThenMinedAgain(c.currency, c.lost)
			tank0, bank0 := e.balance(e.gasTank), e.holding(c.currency, e.bankroll)
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			e.settleUntil(lost.ID, e.sweptAnew(lost)) // its job, queued by the write-off
			e.runBlocks(confirmations + 2)

			e.sweptNotCredited(lost, c.currency, bank0, new(big.Int), "") // never credited
			if e.available(c.currency).Sign() != 0 || e.count(`SELECT count(*) FROM sweep_carries`) != 0 {
				t.Errorf("%v %s available, %d carries; want none", e.available(c.currency), c.currency, e.count(`SELECT count(*) FROM sweep_carries`))
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// What was seen (the ETH public-bytes race): a native deposit (1 ETH) written off in its
// signed sweep (its payment dropped by a reorg deeper than the depth) was mined again, and the
// old sweep's signed transfer (its bytes are public) was mined with that money before its
// cancel. Reinstated by an engineer, the deposit was swept by a new sweep, for which the gas
// tank topped the empty address up by about 1 ETH: the bankroll received the deposit's value
// twice, once from the gas tank. The gas tank pays gas only; the bankroll receives the money
// once; the deposit is credited once.
func TestWrittenOffEtherMinedAgainAndSweptByItsOldBytesIsReinstatedOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		feeBps int32
		feeTo  common.Address // the fee address (none: the fee stays at the address)
	}{
		{"no fee", 0, common.Address{}},
		{"a fee address", 250, common.HexToAddress("0x00000000000000000000000000000000000fee03")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			writtenOffEtherSweptByItsOldBytes(t, c.feeBps, c.feeTo)
		})
	}
}

// writtenOffEtherSweptByItsOldBytes is TestWrittenOffEtherMinedAgainAndSweptByItsOldBytesIsReinstatedOnce
// with a deposit fee of feeBps sent to feeTo (none: kept at the address).
func writtenOffEtherSweptByItsOldBytes(t *testing.T, feeBps int32, feeTo common.Address) {
	t.Helper()
	e := setup(t, feeBps, func(n *chain.Network) { n.FeeAddress = feeTo })
	pay, _ := e.payment(e.newUser(), 0, e.address("race"), "ETH", testfactory.Ether(1))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	tank0, bank0 := e.balance(e.gasTank), e.balance(e.bankroll)
	e.mine(e.resent("", pay)...)
	olds := e.resent(oldestPendingSweep)
	e.mine(olds...)
	for _, tx := range append(olds, pay) {
		if r, err := e.client.Receipt(e.ctx, tx.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("the test needs the payment and the old transfer mined: %v, %v", r, err)
		}
	}
	// The old sweep is finished once its transfer has the depth (settledepth.go): here before the
	// scanner reads the payment's block at its depth (its new incident holds the sweep).
	e.confirm()
	if _, err := e.svc.Settle(e.ctx, lost.ID); err != nil {
		t.Fatal(err)
	}
	e.settleUntil(lost.ID, func() bool {
		return e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, lost.ID) == 1
	})
	e.settleUntil(lost.ID, func() bool {
		_, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
			Note: "the payment came back", Actor: "service-team:cli:eve"})
		return err == nil
	})
	e.settleUntil(lost.ID, func() bool { return e.deposit(lost.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	d := e.deposit(lost.ID)
	if e.depositEvents(d.ID) != 1 || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Errorf("%d DEPOSIT events, %v ETH available; want the deposit's %v once", e.depositEvents(d.ID), e.available("ETH"), d.Amount)
	}
	if got := new(big.Int).Sub(e.balance(e.bankroll), bank0); got.Cmp(d.Amount) < 0 || got.Cmp(lost.GrossAmount) > 0 {
		t.Errorf("the bankroll received %v wei, want the deposit's value once (%v credited, %v paid)", got, d.Amount, lost.GrossAmount)
	}
	// What the old transfer moved for no deposit (when it finished before the reinstatement:
	// with no fee transfer left to cancel) was carried to the new sweep, which took it all.
	if n := e.count(`SELECT count(*) FROM sweep_carries WHERE kind = 'CARRIED'`); feeBps == 0 && n != 1 {
		t.Errorf("%d carries, want the old transfer's value carried once", n)
	}
	if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency HAVING sum(bankroll) <> 0) x`); n != 0 {
		t.Errorf("carries not taken: %v", testfactory.Column[string](e.ctx, t, e.pool,
			`SELECT kind || ' ' || bankroll::text || ' sweep ' || sweep_id FROM sweep_carries ORDER BY id`))
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// A written-off deposit (1 ETH) whose old sweep's signed bytes were mined with a later
// payment's money (the sweep finished without crediting it; what it moved is carried to the
// later deposit's sweep), then mined again (its own money back at the address) and written off
// a second time: its money is swept to the bankroll once, never credited; the later deposit is
// credited once; the gas tank pays gas only. (Before the native carry it was left at the
// address: its new sweep would have had the gas tank make up what the old bytes took.)
func TestWrittenOffAgainAfterItsOldBytesMovedALaterPaymentIsSwept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		currency      string
		lost, another *big.Int
	}{
		{"ETH", testfactory.Ether(1), testfactory.Ether(2)},
		{"ETH", testfactory.Ether(1), testfactory.Ether(1)},
	} {
		t.Run(c.another.String(), func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			addr := e.address("race")
			pay, _ := e.payment(e.newUser(), 0, addr, c.currency, c.lost)
			lost := e.writtenOffBeforeItsSweep(pay, nil)
			tank0, bank0 := e.balance(e.gasTank), e.holding(c.currency, e.bankroll)
			again, _ := e.payment(e.newUser(), 0, addr, c.currency, c.another)
			e.mine(again)
			e.mineMoving(oldestPendingSweep)
			e.scan()
			next := e.findDeposit(again.Hash())
			e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
			if d := e.deposit(lost.ID); d.SweepID != 0 {
				t.Fatalf("the written-off deposit is still in sweep %d: the test needs its old sweep finished without it", d.SweepID)
			}
			e.minedAgain(pay, lost.ID)
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			e.settleUntil(lost.ID, e.sweptAnew(lost))
			e.runBlocks(confirmations + 2)

			d := e.deposit(next)
			if e.fundKinds(lost.ID) != "" || e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 || e.available(c.currency).Cmp(d.Amount) != 0 {
				t.Errorf("fund entries %q (written off) and %q (later), %d DEPOSIT events, %v available; want none, one DEPOSIT "+
					"of the later deposit's %v", e.fundKinds(lost.ID), e.fundKinds(next), len(e.hooks.all()), e.available(c.currency), d.Amount)
			}
			// The bankroll holds both payments (less gas for ETH): the later one credited, the
			// written-off one as surplus.
			received := new(big.Int).Sub(e.holding(c.currency, e.bankroll), bank0)
			paid := new(big.Int).Add(c.lost, c.another)
			if received.Cmp(paid) > 0 || (c.currency == "USDT" && received.Cmp(paid) != 0) ||
				received.Cmp(new(big.Int).Add(d.Amount, new(big.Int).Div(c.lost, big.NewInt(2)))) < 0 {
				t.Errorf("the bankroll received %v %s, want both payments' %v (less gas for ETH)", received, c.currency, paid)
			}
			if left := e.holding(c.currency, addr); c.currency == "USDT" && left.Sign() != 0 {
				t.Errorf("%v USDT left at the address", left)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// sweptAnew: the written-off deposit lost is in a new sweep (not the one it was read in), done.
func (e *env) sweptAnew(lost domain.Deposit) func() bool {
	return func() bool {
		d := e.deposit(lost.ID)
		return d.Status == domain.DepositReorged && d.SweepID != 0 && d.SweepID != lost.SweepID &&
			e.count(`SELECT count(*) FROM sweeps WHERE id = $1 AND status = 'DONE'`, d.SweepID) == 1
	}
}

// sweptNotCredited checks the written-off deposit lost's money reached the bankroll (what it
// received since bank0 beyond owed, other deposits' credits: at most the payment, less its
// sweep's gas for ETH) and left the address, and that lost stays REORGED with the fund entries
// kinds (and a DEPOSIT event for each DEPOSIT among them).
func (e *env) sweptNotCredited(lost domain.Deposit, currency string, bank0, owed *big.Int, kinds string) {
	e.t.Helper()
	received := new(big.Int).Sub(e.holding(currency, e.bankroll), bank0)
	received.Sub(received, owed)
	if received.Sign() <= 0 || received.Cmp(lost.GrossAmount) > 0 {
		e.t.Errorf("the bankroll received %v %s (beyond %v owed to other deposits), want the written-off payment's %v (less its "+
			"sweep's gas for ETH)", received, currency, owed, lost.GrossAmount)
	}
	if left := e.holding(currency, common.HexToAddress(lost.Address)); currency == "USDT" && left.Sign() != 0 {
		e.t.Errorf("%v USDT left at the address", left)
	}
	events := strings.Count(kinds, "DEPOSIT")
	if d := e.deposit(lost.ID); d.Status != domain.DepositReorged || e.fundKinds(d.ID) != kinds || e.depositEvents(d.ID) != events {
		e.t.Errorf("the deposit is %s, fund entries %q, %d DEPOSIT events; want REORGED, %q, %d", d.Status,
			e.fundKinds(d.ID), e.depositEvents(d.ID), kinds, events)
	}
}
