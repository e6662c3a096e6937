package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: one sweep moved two deposits of one address, 1 ETH (a payment that stayed on
// the chain) and 40 USDT, in two transfers: the ETH net (nonce 0) and the USDT net (1). A reorg
// deeper than the depth took the USDT payment away for good, and only the ETH net transfer was
// mined again on the new branch; an engineer wrote the USDT deposit off. The retirement
// cancelled the pending USDT transfer, and the cancel's top-up kept the ETH deposit's whole
// value at the address although its net transfer had moved it: the gas tank sent 0.99996 ETH
// to the deposit address, where it stayed. A top-up now keeps at the address only the native
// deposits still there.
func TestRetiringASweepWhoseETHTransferWasMined(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		feeBps int32
		feeTo  common.Address // the fee address (none: the fee stays at the address)
	}{
		{"no fee", 0, common.Address{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			retiredWithItsETHNetMined(t, tc.feeBps, tc.feeTo)
		})
	}
}

// retiredWithItsETHNetMined is TestRetiringASweepWhoseETHTransferWasMined with a deposit fee
// of feeBps sent to feeTo (none: kept at the address).
func retiredWithItsETHNetMined(t *testing.T, feeBps int32, feeTo common.Address) {
	t.Helper()
	e := setup(t, feeBps, func(n *chain.Network) { n.FeeAddress = feeTo })
	addr := e.address("fee-left")
	stays, lostPayer := e.newUser(), e.newUser()
	payETH, _ := e.payment(stays, 0, addr, "ETH", testfactory.Ether(1))
	e.mine(payETH)
	parent := e.latestHeader()
	payUSDT, _ := e.payment(lostPayer, 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(payUSDT)
	e.confirm()
	sweeps := e.signedTogether(payETH, payUSDT)
	withFee := feeTo != (common.Address{})
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep-fee' AND state = 'pending'`); withFee && n != 2 {
		t.Fatalf("the test needs both fee transfers signed: %d", n)
	}

	// The chain forks above the ETH payment: the USDT payer spends its nonce elsewhere, and only
	// the ETH net transfer is mined again on the new branch.
	oldHead := e.latestHeader().Number.Uint64()
	e.dev.Rollback()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.mine(e.send(lostPayer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50))
	e.mine(e.resent("", sweeps[0])...)
	if r, err := e.client.Receipt(e.ctx, sweeps[0].Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("the test needs the ETH net transfer mined on the new branch: %v, %v", r, err)
	}
	e.engine.RebroadcastAfter = 0 // the rollback dropped the pooled transfers
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
	tank0, fees0 := e.balance(e.gasTank), e.balance(feeTo)
	e.settleUntil(lost.ID, func() bool { return e.deposit(stayed.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	stayed = e.deposit(stayed.ID)
	if e.fundKinds(stayed.ID) != "DEPOSIT" || e.available("ETH").Cmp(stayed.Amount) != 0 || e.fundKinds(lost.ID) != "" {
		t.Errorf("fund entries %q (ETH) and %q (written off), %v ETH available; want the ETH deposit's %v once",
			e.fundKinds(stayed.ID), e.fundKinds(lost.ID), e.available("ETH"), stayed.Amount)
	}
	if withFee {
		fee := new(big.Int).Sub(e.balance(feeTo), fees0)
		if fee.Sign() <= 0 || fee.Cmp(stayed.FeeAmount) > 0 {
			t.Errorf("the fee address received %v wei of the ETH deposit's %v fee, want it (less its transfer's gas)", fee, stayed.FeeAmount)
		}
		if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep-fee' AND ref LIKE '%:ETH' AND state = 'mined'`); n != 1 {
			t.Errorf("%d ETH fee transfers mined, want it", n)
		}
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
