package deposit_test

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a batched deposit written off again (40 USDT), its payment back at its address,
// was swept anew. A new 10 USDT payment to the same address was scanned (CONFIRMING), then a
// shallow reorg the scanner had not read yet took it away, and the sweep was checked
// (dropUnbackedWrittenOff) in that window: the address's balance at the latest block (40) was
// read against the sweep's 40 plus that unconfirmed 10, so the written-off deposit left its
// sweep for good (REORGED, swept_uncredited, never swept anew): its 40 USDT stayed at the
// address for good. The check now reads the balance and counts deposits at the confirmed tip.
func TestWrittenOffAgainNeverDroppedForAPaymentAShallowReorgTook(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	lost, pay := e.batchLeftTheChainWrittenOff()
	e.laterBatchCredited()
	e.minedAgain(pay, lost.ID)
	e.runBlocks(2)
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: lost.ID, Resolution: "WRITE_OFF",
		Note: "settled with the operator by hand", Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	// A new 10 USDT payment to the same address is scanned (CONFIRMING), then a shallow reorg,
	// which the scanner has not read yet, takes it away before the sweep is checked.
	parent := e.latestHeader()
	gone, _ := e.payment(e.newUser(), 0, common.HexToAddress(lost.Address), "USDT", big.NewInt(10_000_000))
	e.mine(gone)
	e.scan()
	e.dev.Rollback()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Rollback() // the payment the fork put back in the pool
	for range 5 {
		if _, err := e.svc.Settle(e.ctx, lost.ID); err != nil {
			t.Fatal(err)
		}
	}
	if d := e.deposit(lost.ID); d.Status != domain.DepositSweeping || d.SweepID == 0 {
		t.Errorf("the deposit written off again, its 40 USDT at its address, is %s in sweep %d; want SWEEPING in a sweep", d.Status,
			d.SweepID)
	}
	e.dev.Commit()
	e.dev.Commit() // the new branch outgrows the old
	e.run(func() bool { return e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE'`) == 0 })
	e.runBlocks(confirmations + 2)
	e.sweptNotCredited(lost, "USDT", bank0, big.NewInt(0), "DEPOSIT,REORG")
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
