package deposit_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a batched token deposit (40 USDC) was credited, then a reorg deeper than the
// depth took its payment and its batch away (neither mined again), and an engineer wrote it
// off; its payment was then mined again and written off a second time. Its settle job took the
// done batched sweep for an address's own sweep (settleWrittenOffAgain, cancelLeftChain): it
// reopened the chain's batch transaction (the gas tank's nonce) and, to cancel it, asked the gas
// tank to top the deposit address up, a top-up queued behind the batch's own nonce, which only
// the cancel waiting for that top-up could fill: both stayed pending for good, and with them
// every later transaction of the gas tank on the chain. A batch is the gas tank's transaction,
// shared by other addresses' sweeps: a written-off deposit's job never has its address cancel
// it; the gas tank cancels it itself at its nonce, with no top-up
// (TestDoneBatchThatLeftTheChainIsCancelledByTheGasTank).
func TestWrittenOffAgainInADoneBatchNeverWedgesTheGasTank(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	addr := e.tokenAddress("dora")
	payer := e.newUser()
	e.mint("USDC", payer.addr, 50_000_000)
	usdc, _ := e.dev.Token("USDC")
	parent := e.latestHeader()
	pay := e.send(payer, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	e.mine(pay)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	id := e.findDeposit(pay.Hash())
	e.engine.RebroadcastAfter = 0
	e.deepReorg(parent, nil, func() { e.scan(); e.settleAll() })
	if d := e.deposit(id); d.Status != domain.DepositReorged {
		t.Fatalf("after the reorg the deposit is %s, want REORGED", d.Status)
	}
	for _, note := range []string{"the payment left the chain", "settled with the operator by hand"} {
		if note != "the payment left the chain" {
			e.minedAgain(pay, id)
		}
		if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: id, Resolution: "WRITE_OFF", Note: note,
			Actor: "service-team:cli:eve"}); err != nil {
			t.Fatal(err)
		}
		e.runBlocks(2)
	}
	for range confirmations + 4 {
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			t.Fatal(err)
		}
		e.runBlocks(1)
	}

	if d := e.deposit(id); d.Status != domain.DepositReorged || e.available("USDC").Sign() != 0 {
		t.Errorf("the written-off deposit is %s, %v USDC available; want REORGED, never credited", d.Status, e.available("USDC"))
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas' OR (purpose = 'sweep-batch' AND state NOT IN ('mined', 'cancelled'))`); n != 0 {
		t.Errorf("%d gas top-ups, or batch transactions left neither mined nor cancelled, by a written-off deposit's job", n)
	}
	e.nothingPending()
	e.reconciled()
}
