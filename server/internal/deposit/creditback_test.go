package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: a native deposit (1 ETH) credited and announced, taken by a reorg deeper than
// the depth with its sweep, written off, its sweep cancelled, then mined again and reinstated,
// was credited back its announced amount (the first sweep's net) while its new sweep, signed
// after the base fee had risen, paid its own gas at the new fee out of the value it sent: the
// bankroll received less than the operator was credited back, and the books were short by the
// difference. A credited-back native deposit's sweep now sends its whole net, its gas paid by
// the gas tank (a top-up of the address), so the bankroll receives at least what was announced.
func TestCreditedBackNativeDepositsSweepPaysNoMoreGasThanItsFirst(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	burner := e.newGasBurner()
	lost, next := e.cancelledThenMinedAgain("ETH", testfactory.Ether(1), testfactory.Ether(2))
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
		Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	// The first sweep's gas was planned at its fee cap: the new one's is above it.
	burner.raiseBaseFee(e.firstSweepFeeCap(lost.SweepID))
	tank0, bank0 := e.balance(e.gasTank), e.balance(e.bankroll)
	e.run(func() bool { return e.deposit(lost.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	d := e.deposit(lost.ID)
	if d.Amount.Cmp(lost.Amount) != 0 || e.fundKinds(d.ID) != "DEPOSIT,REORG,REINSTATE" || e.depositEvents(d.ID) != 1 {
		t.Errorf("credited back %v (announced %v), fund entries %q, %d DEPOSIT events; want the announced amount, one DEPOSIT",
			d.Amount, lost.Amount, e.fundKinds(d.ID), e.depositEvents(d.ID))
	}
	if got := new(big.Int).Sub(e.balance(e.bankroll), bank0); got.Cmp(lost.Amount) < 0 {
		t.Errorf("the bankroll received %v wei from the new sweep, less than the %v credited back", got, lost.Amount)
	}
	if want := new(big.Int).Add(e.deposit(next).Amount, lost.Amount); e.available("ETH").Cmp(want) != 0 {
		t.Errorf("%v ETH available, want %v (both deposits once)", e.available("ETH"), want)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// blockLeavesAndComesBack forks the chain below deposit id's block, its payment mined again
// on the new branch, and scans until the scanner has reorged the deposit and resolved it
// REINCLUDED.
func (e *env) blockLeavesAndComesBack(id int64) {
	e.t.Helper()
	parent, err := e.client.Header(e.ctx, new(big.Int).SetUint64(e.deposit(id).BlockNumber-1))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.dev.Fork(parent.Hash()); err != nil {
		e.t.Fatal(err)
	}
	e.dev.Commit()
	e.scan()
	if got := e.deposit(id); got.Status != domain.DepositReorged {
		e.t.Fatalf("after the fork the deposit is %s, want REORGED", got.Status)
	}
	for range 4 * confirmations {
		if e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution = 'REINCLUDED'`, id) == 1 {
			return
		}
		e.dev.Commit()
		e.scan()
	}
	e.t.Fatal("the deposit was not resolved REINCLUDED")
}

// firstSweepFeeCap is the fee cap the native transfer of sweep id was first signed with.
func (e *env) firstSweepFeeCap(id int64) *big.Int {
	e.t.Helper()
	var feeCap string
	if err := e.pool.QueryRow(e.ctx, `SELECT a.gas_fee_cap::text FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.ref LIKE $1 ORDER BY a.id LIMIT 1`, "sweep:"+itoa(id)+":ETH%").Scan(&feeCap); err != nil {
		e.t.Fatal(err)
	}
	v, ok := new(big.Int).SetString(feeCap, 10)
	if !ok {
		e.t.Fatalf("fee cap %q", feeCap)
	}
	return v
}

// What was seen: a credited deposit (1 ETH, or 40 USDT) taken by a reorg deeper than the depth
// with its sweep, written off, its sweep cancelled at its nonce once another payment's sweep
// waited behind it, then mined again (its money back at the address, a new incident) and written
// off again by an engineer: the money stayed at the deposit address for good (1 ETH, 40 USDT),
// nothing sweeping it, while a written-off deposit whose sweep is not cancelled has that sweep
// sent again and its money reaches the bankroll. Now a new sweep moves it to the bankroll, and
// it is never credited: the write-off stands (REORGED, its fund entries unchanged, no DEPOSIT),
// the bankroll holds it as surplus, and nothing is carried to the address's later deposits.
func TestWrittenOffAgainAfterItsSweepWasCancelledIsSweptNotCredited(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, currency string
		lost, another  *big.Int
		// blockBack: before it is swept, its block leaves the chain and its payment is mined
		// again, which the scanner resolves REINCLUDED: that is no engineer's REINSTATE.
		blockBack bool
	}{
		{"ETH", "ETH", testfactory.Ether(1), testfactory.Ether(2), false},
		{"USDT", "USDT", big.NewInt(40_000_000), big.NewInt(80_000_000), false},
		{"ETH, its block back", "ETH", testfactory.Ether(1), testfactory.Ether(2), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			lost, next := e.cancelledThenMinedAgain(c.currency, c.lost, c.another)
			tank0, bank0 := e.balance(e.gasTank), e.holding(c.currency, e.bankroll)
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			e.reconciled()
			if c.blockBack {
				e.blockLeavesAndComesBack(lost.ID)
			}
			e.run(e.sweptAnew(lost))
			e.runBlocks(confirmations + 2)

			e.sweptNotCredited(lost, c.currency, bank0, new(big.Int), "DEPOSIT,REORG") // the write-off stands
			if owed := e.deposit(next).Amount; e.available(c.currency).Cmp(owed) != 0 {
				t.Errorf("%v %s available, want the other deposit's %v only", e.available(c.currency), c.currency, owed)
			}
			if n := e.count(`SELECT count(*) FROM sweep_carries`); n != 0 {
				t.Errorf("%d carries: the sweep moved the deposit's own money, none is owed to later deposits", n)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// What was seen: a credited-back native deposit (1 ETH, swept first at a 0 fee) swept again
// with a new payment to its address (1 ETH) charged the operator's new fee (50%): the sweep
// sent 1.5 ETH (both grosses less the new payment's 0.5 ETH fee), and its value was split
// across the two by gross, 0.75 ETH each. The credited-back deposit was credited its
// announced 0.99998 ETH anyway and the new one 0.75 ETH (its fee of 0.5 ETH, not 0.5 ETH net):
// 1.74998 ETH credited for 1.5 ETH received, the books short by 0.25 ETH. Each deposit of a
// native group now nets its own fee, and only the transfer's gas is shared (by what each put in).
func TestCreditedBackDepositSweptWithAPaymentAtAnotherFee(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	lost, _ := e.cancelledThenMinedAgain("ETH", testfactory.Ether(1), testfactory.Ether(2))
	if _, err := e.pool.Exec(e.ctx, `UPDATE operators SET deposit_fee_bps = 5000 WHERE id = $1`, e.op.ID); err != nil {
		t.Fatal(err)
	}
	// A new payment to the address, confirmed but not swept yet: the new sweep takes both.
	pay, _ := e.payment(e.newUser(), 0, common.HexToAddress(lost.Address), "ETH", testfactory.Ether(1))
	e.mine(pay)
	for range confirmations + 1 {
		e.scan()
		e.dev.Commit()
	}
	fresh := e.findDeposit(pay.Hash())
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "REINSTATE",
		Note: "the payment came back", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	bank0 := e.balance(e.bankroll)
	e.run(func() bool {
		return e.deposit(lost.ID).Status == domain.DepositCredited && e.deposit(fresh).Status == domain.DepositCredited
	})
	if a, b := e.deposit(lost.ID), e.deposit(fresh); a.SweepID != b.SweepID {
		t.Fatalf("swept by sweeps %d and %d, want one sweep of both", a.SweepID, b.SweepID)
	}
	e.runBlocks(confirmations + 2)

	if d := e.deposit(fresh); d.Amount.Cmp(testfactory.Ether(1)) >= 0 || d.FeeAmount.Cmp(new(big.Int).Div(testfactory.Ether(1), big.NewInt(2))) < 0 {
		t.Errorf("the new payment was credited %v with a fee of %v; want at most 0.5 ETH, its fee 0.5 ETH", d.Amount, d.FeeAmount)
	}
	credited := new(big.Int).Add(e.deposit(lost.ID).Amount, e.deposit(fresh).Amount)
	if got := new(big.Int).Sub(e.balance(e.bankroll), bank0); got.Cmp(credited) < 0 {
		t.Errorf("the bankroll received %v wei from the sweep, less than the %v credited", got, credited)
	}
	e.nothingPending()
	e.reconciled()
}
