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
	k := e.keptWithLostUSDT("fee-left", kept)
	holding, payKept, payUSDT, sweeps := k.holding, k.payKept, k.payUSDT, k.sweeps
	withFee := feeTo != (common.Address{})
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep-fee' AND state = 'pending'`); withFee && n != 2 {
		t.Fatalf("the test needs both fee transfers signed: %d", n)
	}

	// The chain forks above the ETH payment: the USDT payer spends its nonce elsewhere, and only
	// the ETH net transfer is mined again on the new branch.
	oldHead := k.forkAway()
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

	stayed = k.creditedOnce(stayed.ID, lost.ID)
	if withFee {
		k.feeReached(feeTo, fees0, stayed)
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
			k := e.keptWithLostUSDT("fee-again", kept)
			holding, payKept, payUSDT, sweeps := k.holding, k.payKept, k.payUSDT, k.sweeps

			// The USDT payment leaves the chain for good; nothing of the sweep is mined again.
			oldHead := k.forkAway()
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

			k.feeReached(feeTo, fees0, k.creditedOnce(stayed.ID, lost.ID))
			e.gasOnlySince(tank0)
			e.nothingPending()
			e.reconciled()
		})
	}
}

// keptAndLost is a sweep of two deposits at one address signed together: a kept one (1 ETH or
// 40 USDC) whose payment stays on the chain, and 40 USDT whose payment a reorg can take away.
type keptAndLost struct {
	e                *env
	kept             string // ETH or USDC
	lostPayer        user
	payKept, payUSDT *types.Transaction
	parent           *types.Header // the block below the USDT payment
	sweeps           []*types.Transaction
	holding          func(owner common.Address) *big.Int // of the kept asset
}

// keptWithLostUSDT pays both deposits to the address named name, confirms them and signs their
// sweep.
func (e *env) keptWithLostUSDT(name, kept string) keptAndLost {
	e.t.Helper()
	addr := e.address(name)
	stays := e.newUser()
	k := keptAndLost{e: e, kept: kept, lostPayer: e.newUser()}
	usdc, _ := e.dev.Token("USDC")
	k.holding = func(owner common.Address) *big.Int {
		if kept == "USDC" {
			return testfactory.TokenBalance(e.ctx, e.t, e.client, usdc.Address, owner)
		}
		return e.balance(owner)
	}
	if kept == "USDC" {
		e.mint("USDC", stays.addr, 40_000_000)
		k.payKept = e.send(stays, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	} else {
		k.payKept, _ = e.payment(stays, 0, addr, "ETH", testfactory.Ether(1))
	}
	e.mine(k.payKept)
	k.parent = e.latestHeader()
	k.payUSDT, _ = e.payment(k.lostPayer, 0, addr, "USDT", big.NewInt(40_000_000))
	e.mine(k.payUSDT)
	e.confirm()
	k.sweeps = e.signedTogether(k.payKept, k.payUSDT)
	return k
}

// forkAway forks the chain below the USDT payment, whose payer spends its nonce elsewhere on
// the new branch, and returns the old head's number.
func (k keptAndLost) forkAway() uint64 {
	e := k.e
	e.t.Helper()
	oldHead := e.latestHeader().Number.Uint64()
	e.dev.Rollback()
	if err := e.dev.Fork(k.parent.Hash()); err != nil {
		e.t.Fatal(err)
	}
	e.mine(e.send(k.lostPayer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c3"), testfactory.Ether(1), nil, 50))
	return oldHead
}

// creditedOnce checks the kept deposit is credited once and the written-off one never, and
// returns the kept deposit as it stands.
func (k keptAndLost) creditedOnce(stayedID, lostID int64) domain.Deposit {
	e := k.e
	e.t.Helper()
	stayed := e.deposit(stayedID)
	if e.fundKinds(stayed.ID) != "DEPOSIT" || e.available(k.kept).Cmp(stayed.Amount) != 0 || e.fundKinds(lostID) != "" {
		e.t.Errorf("fund entries %q (%s) and %q (written off), %v %s available; want the kept deposit's %v once",
			e.fundKinds(stayed.ID), k.kept, e.fundKinds(lostID), e.available(k.kept), k.kept, stayed.Amount)
	}
	return stayed
}

// feeReached checks the fee address received the kept deposit's fee since it held fees0: a
// native fee transfer pays its gas out of the fee, a token one sends it whole.
func (k keptAndLost) feeReached(feeTo common.Address, fees0 *big.Int, stayed domain.Deposit) {
	k.e.t.Helper()
	fee := new(big.Int).Sub(k.holding(feeTo), fees0)
	if fee.Sign() <= 0 || fee.Cmp(stayed.FeeAmount) > 0 || (k.kept != "ETH" && fee.Cmp(stayed.FeeAmount) != 0) {
		k.e.t.Errorf("the fee address received %v of the kept deposit's %v %s fee, want it", fee, stayed.FeeAmount, k.kept)
	}
}
