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
//
// With a 2.5% fee and a fee address the sweep had four transfers: the kept deposit's net
// (nonce 0) and fee (1), the USDT net (2) and fee (3). The retirement cancelled the kept
// deposit's fee transfer too: that deposit was credited from its mined net transfer, and its
// fee (0.025 ETH, or 1 USDC) stayed at the deposit address for good, never reaching the fee
// address. A fee transfer whose net transfer was mined, of an asset none of whose deposits in
// the sweep is written off, moves money that is at the address: it is sent, not cancelled.
func TestRetiringASweepWhoseKeptTransferWasMined(t *testing.T) {
	t.Parallel()
	feeTo := common.HexToAddress("0x00000000000000000000000000000000000fee02")
	for _, tc := range []struct {
		name, kept string // kept: the asset of the deposit that stays (ETH or USDC)
		feeBps     int32
		feeTo      common.Address // the fee address (none: the fee stays at the address)
	}{
		{"ETH, no fee", "ETH", 0, common.Address{}},
		{"ETH, a fee address", "ETH", 250, feeTo},
		{"USDC, a fee address", "USDC", 250, feeTo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			retiredWithItsNetMined(t, tc.kept, tc.feeBps, tc.feeTo)
		})
	}
}

// retiredWithItsNetMined is TestRetiringASweepWhoseKeptTransferWasMined with the kept deposit
// in kept (ETH or USDC: swept first), a deposit fee of feeBps sent to feeTo (none: kept at the
// address).
func retiredWithItsNetMined(t *testing.T, kept string, feeBps int32, feeTo common.Address) {
	t.Helper()
	e := setup(t, feeBps, func(n *chain.Network) { n.FeeAddress = feeTo })
	addr := e.address("fee-left")
	stays, lostPayer := e.newUser(), e.newUser()
	usdc, _ := e.dev.Token("USDC")
	holding := func(owner common.Address) *big.Int {
		if kept == "USDC" {
			return testfactory.TokenBalance(e.ctx, e.t, e.client, usdc.Address, owner)
		}
		return e.balance(owner)
	}
	var payKept *types.Transaction
	if kept == "USDC" {
		e.mint("USDC", stays.addr, 40_000_000)
		payKept = e.send(stays, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	} else {
		payKept, _ = e.payment(stays, 0, addr, "ETH", testfactory.Ether(1))
	}
	e.mine(payKept)
	parent := e.latestHeader()
	payUSDT, _ := e.payment(lostPayer, 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(payUSDT)
	e.confirm()
	sweeps := e.signedTogether(payKept, payUSDT)
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
		t.Fatalf("the test needs the %s net transfer mined on the new branch: %v, %v", kept, r, err)
	}
	e.engine.RebroadcastAfter = 0 // the rollback dropped the pooled transfers
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		e.scan()
	}
	stayed, lost := e.deposit(e.findDeposit(payKept.Hash())), e.deposit(e.findDeposit(payUSDT.Hash()))
	if lost.Status != domain.DepositReorged || stayed.Status != domain.DepositSweeping {
		t.Fatalf("after the reorg: USDT deposit %s, %s deposit %s; want REORGED, SWEEPING", lost.Status, kept, stayed.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	tank0, fees0 := e.balance(e.gasTank), holding(feeTo)
	e.settleUntil(lost.ID, func() bool { return e.deposit(stayed.ID).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	stayed = e.deposit(stayed.ID)
	if e.fundKinds(stayed.ID) != "DEPOSIT" || e.available(kept).Cmp(stayed.Amount) != 0 || e.fundKinds(lost.ID) != "" {
		t.Errorf("fund entries %q (%s) and %q (written off), %v %s available; want the kept deposit's %v once",
			e.fundKinds(stayed.ID), kept, e.fundKinds(lost.ID), e.available(kept), kept, stayed.Amount)
	}
	if withFee {
		// A native fee transfer pays its gas out of the fee; a token one sends it whole.
		fee := new(big.Int).Sub(holding(feeTo), fees0)
		if fee.Sign() <= 0 || fee.Cmp(stayed.FeeAmount) > 0 || (kept != "ETH" && fee.Cmp(stayed.FeeAmount) != 0) {
			t.Errorf("the fee address received %v of the kept deposit's %v %s fee, want it", fee, stayed.FeeAmount, kept)
		}
		if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep-fee' AND ref LIKE $1 AND state = 'mined'`,
			"%:"+kept); n != 1 {
			t.Errorf("%d %s fee transfers mined, want it", n, kept)
		}
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// What was seen: a sweep of a kept deposit (1 ETH, or 40 USDC; a 2.5% fee sent to a fee
// address) and a USDT deposit that a reorg deeper than the depth took away for good was
// retired once the USDT deposit was written off: a cancel was sent at each nonce, the kept
// deposit's fee transfer's among them. The node dropped the cancels, and the kept deposit's net
// transfer (its signed bytes are public) was mined instead of its cancel: the kept deposit was
// credited from it, but its fee transfer's cancel was mined, so its fee (0.025 ETH, or 1 USDC)
// stayed at the deposit address for good, never reaching the fee address. A fee transfer of a
// moved asset that a retirement cancelled is now signed again at the address's next nonce.
func TestRetiredSweepsNetMinedBeforeItsCancelSendsItsFeeAgain(t *testing.T) {
	t.Parallel()
	feeTo := common.HexToAddress("0x00000000000000000000000000000000000fee04")
	for _, kept := range []string{"ETH", "USDC"} {
		t.Run(kept, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 250, func(n *chain.Network) { n.FeeAddress = feeTo })
			addr := e.address("fee-again")
			stays, lostPayer := e.newUser(), e.newUser()
			usdc, _ := e.dev.Token("USDC")
			holding := func(owner common.Address) *big.Int {
				if kept == "USDC" {
					return testfactory.TokenBalance(e.ctx, e.t, e.client, usdc.Address, owner)
				}
				return e.balance(owner)
			}
			var payKept *types.Transaction
			if kept == "USDC" {
				e.mint("USDC", stays.addr, 40_000_000)
				payKept = e.send(stays, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
			} else {
				payKept, _ = e.payment(stays, 0, addr, "ETH", testfactory.Ether(1))
			}
			e.mine(payKept)
			parent := e.latestHeader()
			payUSDT, _ := e.payment(lostPayer, 0, addr, "USDT", big.NewInt(40_000_000))
			e.mine(payUSDT)
			e.confirm()
			sweeps := e.signedTogether(payKept, payUSDT)

			// The USDT payment leaves the chain for good; nothing of the sweep is mined again.
			oldHead := e.latestHeader().Number.Uint64()
			e.dev.Rollback()
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			e.mine(e.send(lostPayer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50))
			e.engine.RebroadcastAfter = 0
			for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
				e.dev.Commit()
				e.scan()
			}
			stayed, lost := e.deposit(e.findDeposit(payKept.Hash())), e.deposit(e.findDeposit(payUSDT.Hash()))
			if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
				Note: "the payer spent it elsewhere", Actor: "service-team:cli:eve"}); err != nil {
				t.Fatal(err)
			}
			tank0, fees0 := e.balance(e.gasTank), holding(feeTo)
			e.settleUntil(lost.ID, func() bool {
				return e.count(`SELECT count(*) FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
					WHERE t.purpose = 'sweep-fee' AND t.ref LIKE $1 AND a.cancel AND a.broadcast_at IS NOT NULL`, "%:"+kept) == 1
			})
			e.dev.Rollback() // the node drops the cancels; the kept deposit's net transfer is mined instead of its cancel
			e.mine(e.resent("", sweeps[0])...)
			if r, err := e.client.Receipt(e.ctx, sweeps[0].Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
				t.Fatalf("the test needs the %s net transfer mined: %v, %v", kept, r, err)
			}
			e.settleUntil(lost.ID, func() bool { return e.deposit(stayed.ID).Status == domain.DepositCredited })
			e.runBlocks(confirmations + 2)

			stayed = e.deposit(stayed.ID)
			if e.fundKinds(stayed.ID) != "DEPOSIT" || e.available(kept).Cmp(stayed.Amount) != 0 || e.fundKinds(lost.ID) != "" {
				t.Errorf("fund entries %q (%s) and %q (written off), %v %s available; want the kept deposit's %v once",
					e.fundKinds(stayed.ID), kept, e.fundKinds(lost.ID), e.available(kept), kept, stayed.Amount)
			}
			// A native fee transfer pays its gas out of the fee; a token one sends it whole.
			fee := new(big.Int).Sub(holding(feeTo), fees0)
			if fee.Sign() <= 0 || fee.Cmp(stayed.FeeAmount) > 0 || (kept != "ETH" && fee.Cmp(stayed.FeeAmount) != 0) {
				t.Errorf("the fee address received %v of the kept deposit's %v %s fee, want it", fee, stayed.FeeAmount, kept)
			}
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}
