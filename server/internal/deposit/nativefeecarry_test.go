package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: with a 2.5% fee and a fee address, a written-off deposit's signed sweep (1 ETH:
// its net transfer at nonce 0, its fee transfer at nonce 1) was mined, both public bytes, with
// a later payment's money (2 ETH) before their cancels. The old sweep carried the net
// transfer's share to the later deposit's sweep, but not the fee the old fee transfer took from
// that payment: the later sweep asked the address for its whole fee (0.05 ETH) as well, and the
// gas tank made up the 0.025 ETH the old fee transfer had taken.
func TestOldNativeFeeTransferMinedWithALaterPaymentIsCarried(t *testing.T) {
	t.Parallel()
	feeTo := common.HexToAddress("0x00000000000000000000000000000000000fee05")
	e := setup(t, 250, func(n *chain.Network) { n.FeeAddress = feeTo })
	addr := e.address("fee-race")
	lost, payer := e.writtenOffInSignedSweep(addr, "ETH", testfactory.Ether(1))
	tank0, bank0, fees0 := e.balance(e.gasTank), e.balance(e.bankroll), e.balance(feeTo)
	again, _ := e.payment(payer, 1, addr, "ETH", testfactory.Ether(2))
	e.mine(again)
	if olds := e.mineMoving(pendingNetAndFee); len(olds) != 2 {
		t.Fatalf("the test needs the old net and fee transfers signed and mined: %d", len(olds))
	}
	e.scan()
	next := e.findDeposit(again.Hash())
	e.settleUntil(lost.ID, func() bool { return e.deposit(next).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	d := e.deposit(next)
	if got := e.deposit(lost.ID); got.Status != domain.DepositReorged || e.fundKinds(lost.ID) != "" {
		t.Errorf("the written-off deposit is %s with fund entries %q, want REORGED, never credited", got.Status, e.fundKinds(lost.ID))
	}
	if len(e.hooks.all()) != 1 || e.available("ETH").Cmp(d.Amount) != 0 || e.fundKinds(next) != "DEPOSIT" {
		t.Errorf("%d DEPOSIT events, %v ETH available, fund entries %q; want the later deposit's %v once", len(e.hooks.all()),
			e.available("ETH"), e.fundKinds(next), d.Amount)
	}
	// The bankroll and the fee address hold at most the one payment that counts.
	received := new(big.Int).Sub(e.balance(e.bankroll), bank0)
	received.Add(received, new(big.Int).Sub(e.balance(feeTo), fees0))
	if received.Cmp(testfactory.Ether(2)) > 0 || new(big.Int).Sub(e.balance(e.bankroll), bank0).Cmp(d.Amount) < 0 {
		t.Errorf("the bankroll and the fee address received %v wei for a 2 ETH payment credited %v", received, d.Amount)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// What was seen: a written-off deposit's signed sweep (1 ETH) was mined, public bytes, with a
// later payment's money (2 ETH), and a token payment (40 USDT) came to the same address before
// the later ETH deposit was swept. The token deposit's gas prefund (fund, as a sweep's funding)
// asked the address to hold every native deposit at it, the 2 ETH whole, though the old
// transfer had taken 1 ETH of it to the bankroll (carried to its sweep): the gas tank topped the
// address up by about 1 ETH, which the later sweep, sending only its net beyond the carry, left
// at the deposit address for good.
func TestATopUpLeavesOutWhatTheNativeCarryStandsFor(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("carry-topup")
	lost, payer := e.writtenOffInSignedSweep(addr, "ETH", testfactory.Ether(1))
	tank0 := e.balance(e.gasTank)
	again, _ := e.payment(payer, 1, addr, "ETH", testfactory.Ether(2))
	e.mine(again)
	e.mineMoving(oldestPendingSweep)
	tok, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(tok)
	e.scan()
	next, token := e.findDeposit(again.Hash()), e.findDeposit(tok.Hash())
	e.settleUntil(lost.ID, func() bool {
		return e.deposit(next).Status == domain.DepositCredited && e.deposit(token).Status == domain.DepositCredited
	})
	e.runBlocks(confirmations + 2)

	if left := e.balance(addr); left.Cmp(big.NewInt(1e16)) > 0 {
		t.Errorf("%v wei left at the deposit address", left)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
