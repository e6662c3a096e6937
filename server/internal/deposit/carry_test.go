package deposit_test

import (
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a token sweep of 40 USDT (nonce 0) was signed; a reorg deeper than the depth
// took the 40 USDT payment away for good and an engineer wrote the deposit off; the same user
// paid the address 80 USDT, and the old signed transfer (its bytes are public) was mined before
// its cancel, moving 40 USDT of the new payment. The sweep was finished as mined (the
// written-off deposit not credited): the bankroll held 40 USDT credited to no one, 40 USDT
// stayed at the address, and the 80 USDT deposit's sweep failed its gas estimate on every pass
// ("does 0x… hold 80.000000?"), SWEEPING for good. What the old transfer moved is now carried
// to the bankroll for the address's next sweep of the asset, which sends only the remainder
// and credits the later deposit in full, once.
func TestRetiredTokenSweepMinedBeforeItsCancelCarriesToTheNextSweep(t *testing.T) {
	t.Parallel()
	usdt := func(units int64) *big.Int { return big.NewInt(units * 1_000_000) }
	for _, tc := range []struct {
		name       string
		feeBps     int32
		feeAddress bool // the fee goes to a fee address (else it stays at the deposit address)
		another    *big.Int
		workers    int // settle jobs at once, each step
	}{
		{"a bigger payment", 0, false, usdt(80), 1},
		{"an equal payment", 0, false, usdt(40), 1},
		{"a bigger payment, with a deposit fee", 250, false, usdt(80), 1},
		{"an equal payment, with a deposit fee", 250, false, usdt(40), 1},
		{"a bigger payment, with a fee address", 250, true, usdt(80), 1},
		{"an equal payment, with a fee address", 250, true, usdt(40), 1},
		{"two settle jobs at once", 0, false, usdt(80), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee01")
			e := setup(t, tc.feeBps, func(n *chain.Network) {
				if tc.feeAddress {
					n.FeeAddress = feeAddress
				}
			})
			addr := e.address("carry")
			lost, payer := e.writtenOffInSignedSweep(addr, "USDT", usdt(40))
			bank0, fees0 := e.tokenBalance(e.bankroll), e.tokenBalance(feeAddress)
			again, _ := e.payment(payer, 1, addr, "USDT", tc.another)
			e.mine(again)
			e.mineMoving(`SELECT a.raw FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
				WHERE t.purpose IN ('sweep', 'sweep-fee') AND t.state = 'pending' ORDER BY t.nonce, a.id`)
			e.scan()
			next := e.findDeposit(again.Hash())
			e.run(func() bool {
				var wg sync.WaitGroup
				for range tc.workers {
					wg.Go(func() {
						for _, id := range []int64{lost.ID, next} {
							if _, err := e.svc.Settle(e.ctx, id); err != nil {
								t.Errorf("settle %d: %v", id, err)
							}
						}
					})
				}
				wg.Wait()
				e.reconciled() // at every step
				return e.deposit(next).Status == domain.DepositCredited
			})

			d := e.deposit(next)
			if e.fundKinds(lost.ID) != "" || e.fundKinds(next) != "DEPOSIT" || len(e.hooks.all()) != 1 {
				t.Errorf("fund entries %q (written off) and %q (later), %d DEPOSIT events; want none, one DEPOSIT, one event",
					e.fundKinds(lost.ID), e.fundKinds(next), len(e.hooks.all()))
			}
			if d.GrossAmount.Cmp(tc.another) != 0 || e.available("USDT").Cmp(d.Amount) != 0 {
				t.Errorf("the later deposit is credited %v of gross %v, %v available; want its net of %v once", d.Amount,
					d.GrossAmount, e.available("USDT"), tc.another)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(d.Amount) != 0 {
				t.Errorf("the bankroll received %v USDT units, want the later deposit's net %v", got, d.Amount)
			}
			// Without a fee address the fee stays at the deposit address.
			wantLeft, wantFees := d.FeeAmount, new(big.Int)
			if tc.feeAddress {
				wantLeft, wantFees = wantFees, wantLeft
			}
			if left, fees := e.tokenBalance(addr), new(big.Int).Sub(e.tokenBalance(feeAddress), fees0); left.Cmp(wantLeft) != 0 ||
				fees.Cmp(wantFees) != 0 {
				t.Errorf("%v USDT units left at the address and %v at the fee address, want %v and %v", left, fees, wantLeft, wantFees)
			}
			e.nothingPending()
			// The old sweep carried its transfer's net for the later deposit's sweep, which took it.
			if n := e.count(`SELECT count(*) FROM sweep_carries GROUP BY address, currency
				HAVING sum(bankroll) = 0 AND sum(fee) = 0 AND count(*) FILTER (WHERE kind = 'CARRIED' AND sweep_id = $1) = 1
				AND count(*) FILTER (WHERE kind = 'TAKEN' AND sweep_id = $2) = 1`, lost.SweepID, d.SweepID); n != 2 {
				t.Errorf("the carries of the address hold %d rows with a zero balance, want the old sweep's carried and the later "+
					"sweep's taken", n)
			}
			e.reconciled()
		})
	}
}

// A carry bigger than the next sweep's need is taken in part, the rest left for the address's
// next deposit: the old 40 USDT transfer was mined with two later payments (20 and 30 USDT);
// the 20 USDT deposit, confirmed first, is swept alone and credited from the carry (no
// transfer), and the 30 USDT deposit's sweep sends 10 USDT. Each is credited in full, once.
func TestCarryBiggerThanTheNextSweepIsTakenInPart(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("carry-part")
	lost, payer := e.writtenOffInSignedSweep(addr, "USDT", big.NewInt(40_000_000))
	bank0 := e.tokenBalance(e.bankroll)
	firstPay, _ := e.payment(payer, 1, addr, "USDT", big.NewInt(20_000_000))
	e.mine(firstPay)
	e.confirm()
	secondPay, _ := e.payment(payer, 2, addr, "USDT", big.NewInt(30_000_000))
	e.mine(secondPay)
	e.mine(e.resent(pendingSweeps)...)
	e.scan()
	first, second := e.findDeposit(firstPay.Hash()), e.findDeposit(secondPay.Hash())
	if e.deposit(first).Status != domain.DepositSweeping || e.deposit(second).Status != domain.DepositConfirming {
		t.Fatalf("the test needs the 20 USDT deposit confirmed and the 30 USDT one confirming: %s, %s",
			e.deposit(first).Status, e.deposit(second).Status)
	}
	for range 3 {
		for _, id := range []int64{lost.ID, first} {
			if _, err := e.svc.Settle(e.ctx, id); err != nil {
				t.Fatalf("settle %d: %v", id, err)
			}
		}
		if e.deposit(first).Status == domain.DepositCredited {
			break
		}
		e.reconciled()
		e.dev.Commit()
	}
	if d := e.deposit(first); d.Status != domain.DepositCredited || e.deposit(second).SweepID != 0 {
		t.Fatalf("the test needs the 20 USDT deposit credited alone: %s, the 30 USDT one in sweep %d", d.Status,
			e.deposit(second).SweepID)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref LIKE $1`, fmt.Sprintf("sweep:%d:%%", e.deposit(first).SweepID)); n != 0 {
		t.Errorf("the 20 USDT deposit's sweep sent %d transfers, want none (the carry covers it)", n)
	}
	e.reconciled()
	e.run(func() bool { return e.deposit(second).Status == domain.DepositCredited })

	for _, id := range []int64{first, second} {
		if d := e.deposit(id); e.fundKinds(id) != "DEPOSIT" || d.Amount.Cmp(d.GrossAmount) != 0 {
			t.Errorf("deposit %d: fund entries %q, credited %v of %v; want its whole amount once", id, e.fundKinds(id), d.Amount,
				d.GrossAmount)
		}
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(big.NewInt(50_000_000)) != 0 ||
		e.available("USDT").Cmp(big.NewInt(50_000_000)) != 0 || e.tokenBalance(addr).Sign() != 0 {
		t.Errorf("the bankroll received %v, %v available, %v left at the address; want 50 USDT, 50 USDT, none", got,
			e.available("USDT"), e.tokenBalance(addr))
	}
	if n := e.count(`SELECT count(*) FROM sweep_carries HAVING sum(bankroll) = 0 AND sum(fee) = 0`); n != 3 {
		t.Errorf("%d carry rows with a zero balance, want three (carried, taken in part, taken)", n)
	}
	e.reconciled()
}

// What was seen: the old 40 USDT sweep's transfer was mined with a later payment's tokens (80
// USDT, another payer's) and the sweep finished as mined, its written-off deposit not
// credited; then the written-off payment itself was mined again (its payer had not spent the
// nonce) and an engineer reinstated it. REINSTATE was accepted (its sweep is mined at depth)
// and put the deposit back to SWEEPING in its done sweep, where nothing sweeps: 40 USDT stayed
// at the address and the deposit was never credited. A finished sweep's written-off deposits
// now leave it in the transaction that credits the others, so a reinstated one is swept again
// by a new sweep and credited once; what the old sweep moved in its name stays with the later
// deposit (the carry).
func TestWrittenOffDepositOfAFinishedSweepReinstatedIsSweptAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("back-again")
	payer, other := e.newUser(), e.newUser()
	e.dev.Commit()
	pay, _ := e.payment(payer, 0, addr, "USDT", big.NewInt(40_000_000))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	bank0 := e.tokenBalance(e.bankroll)
	again, _ := e.payment(other, 0, addr, "USDT", big.NewInt(80_000_000))
	e.mine(again)
	e.mine(e.send(other, 1, addr, big.NewInt(1e16), nil, 2)) // gas for the old transfer (the reorg took its top-up)
	e.mine(e.resent(pendingSweeps)...)
	e.scan()
	next := e.findDeposit(again.Hash())
	e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	if d := e.deposit(lost.ID); d.SweepID != 0 {
		t.Errorf("the written-off deposit is still in its finished sweep %d", d.SweepID)
	}

	// The written-off payment is mined again; an engineer reinstates it.
	if err := e.client.Send(e.ctx, pay); err != nil {
		t.Fatal(err)
	}
	e.mine(pay)
	e.run(func() bool {
		return e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, lost.ID) == 1
	})
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
		Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.settleUntil(lost.ID, func() bool {
		e.reconciled()
		return e.deposit(lost.ID).Status == domain.DepositCredited
	})

	if e.fundKinds(lost.ID) != "DEPOSIT" || e.fundKinds(next) != "DEPOSIT" {
		t.Errorf("fund entries %q (reinstated) and %q (later), want one DEPOSIT each", e.fundKinds(lost.ID), e.fundKinds(next))
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(big.NewInt(120_000_000)) != 0 ||
		e.available("USDT").Cmp(big.NewInt(120_000_000)) != 0 || e.tokenBalance(addr).Sign() != 0 {
		t.Errorf("the bankroll received %v, %v available, %v left at the address; want 120 USDT, 120 USDT, none", got,
			e.available("USDT"), e.tokenBalance(addr))
	}
	e.nothingPending()
	e.reconciled()
}
