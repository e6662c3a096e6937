package deposit_test

import (
	"math/big"
	"testing"

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
