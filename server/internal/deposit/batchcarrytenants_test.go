package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// A batch carry stays with its address's operator: operator A's user's written-off deposit's
// batch is mined with a later payment to that address, while its sub-operator's user (the same
// externalUserId) pays its own address in the same block. The carry covers A's later deposit
// only; the sub-operator's deposit is swept by a batch from its own address and credited to the
// sub-operator, at its own fee, from its own payment; no operator is credited another's money.
func TestBatchCarryNeverCoversAnotherOperatorsDeposit(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 100) // A: 1%
	box, _ := secret.NewBox(secret.Random(32))
	name, hook, fee := "sub", "https://sub.example/hook", int32(250)
	sub, _, err := operator.New(e.pool, box).Create(e.ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook,
		DepositFeeBps: &fee, ParentID: &e.op.ID})
	if err != nil {
		t.Fatal(err)
	}
	addrA := e.tokenAddress("same-user")
	addrSub, err := e.svc.TokenAddressFor(e.ctx, sub.ID, "same-user")
	if err != nil {
		t.Fatal(err)
	}
	pay, _ := e.payment(e.newUser(), 0, addrA, "USDT", big.NewInt(40_000_000))
	lost := e.writtenOffBeforeItsSweep(pay, nil)
	bank0 := e.tokenBalance(e.bankroll)
	againA, _ := e.payment(e.newUser(), 0, addrA, "USDT", big.NewInt(40_000_000))
	paySub, _ := e.payment(e.newUser(), 0, addrSub, "USDT", big.NewInt(40_000_000))
	e.mine(againA, paySub)
	e.mineMoving(oldestPendingBatch)
	e.scan()
	nextA, nextSub := e.findDeposit(againA.Hash()), e.findDeposit(paySub.Hash())
	e.settleUntil(lost.ID, func() bool {
		e.reconciled()
		return e.deposit(nextA).Status == domain.DepositCredited && e.deposit(nextSub).Status == domain.DepositCredited
	})
	e.runBlocks(confirmations + 2)

	subFunds, err := store.New(e.pool).GetFunds(e.ctx, sub.ID, e.dev.ChainID(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	if a, s := e.deposit(nextA), e.deposit(nextSub); a.OperatorID != e.op.ID || s.OperatorID != sub.ID ||
		a.Amount.Int64() != 39_600_000 || s.Amount.Int64() != 39_000_000 || e.available("USDT").Int64() != 39_600_000 ||
		subFunds.Available.Int64() != 39_000_000 {
		t.Errorf("A's deposit (operator %s) credited %v, %v available; the sub-operator's (%s) %v, %v available; want 39.6 "+
			"and 39 USDT each to its own", a.OperatorID, a.Amount, e.available("USDT"), s.OperatorID, s.Amount, subFunds.Available)
	}
	if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batch_id IS NULL`,
		nextA); n != 1 {
		t.Errorf("A's later deposit is not covered by its address's carry")
	}
	if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.id = $1 AND s.batch_id IS NOT NULL`,
		nextSub); n != 1 || e.count(`SELECT count(*) FROM sweep_carries WHERE address = $1`, addrSub.Hex()) != 0 {
		t.Errorf("the sub-operator's deposit is not swept by a batch from its own address, or its address has carry rows")
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 80_000_000 || e.tokenBalance(addrA).Sign() != 0 ||
		e.tokenBalance(addrSub).Sign() != 0 {
		t.Errorf("the bankroll received %v, the addresses keep %v and %v; want both later payments' 80 USDT, nothing",
			got, e.tokenBalance(addrA), e.tokenBalance(addrSub))
	}
	e.nothingPending()
	e.reconciled()
}
