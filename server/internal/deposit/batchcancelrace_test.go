package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// The gas tank's cancel of a done batch that left the chain races the batch's own bytes: once
// the cancel is signed and sent, the old batch (public bytes, nonce 0) is mined instead (it
// skips the written-off deposit's address: its payment is gone). Nothing is credited twice or
// lost, the later batch is mined, the gas tank pays gas only and the books hold.
func TestCancelOfALeftBatchLosesToItsOwnBytes(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	lost, _ := e.batchLeftTheChainWrittenOff()
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	later, _ := e.payment(e.newUser(), 0, e.tokenAddress("eve"), "USDT", big.NewInt(10_000_000))
	e.mine(later)
	cancelSent := func() bool {
		return e.count(`SELECT count(*) FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
			WHERE t.ref = 'batch:1' AND a.cancel AND a.broadcast_at IS NOT NULL`) > 0
	}
	for range 20 {
		e.scan()
		e.settleAll()
		if cancelSent() {
			break
		}
		e.dev.Commit()
	}
	if !cancelSent() {
		t.Fatal("the gas tank never sent the cancel of the batch that left the chain")
	}
	e.dev.Rollback() // the cancel (and what waits behind it) leaves the pool
	e.mine(e.resent(firstBatch)...)
	next := e.findDeposit(later.Hash())
	e.run(func() bool { return e.deposit(next).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	owed := e.deposit(next).Amount
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Cmp(owed) != 0 {
		t.Errorf("the bankroll received %v USDT units, want the later deposit's %v", got, owed)
	}
	if d := e.deposit(lost.ID); d.Status != domain.DepositReorged || e.fundKinds(d.ID) != "DEPOSIT,REORG" {
		t.Errorf("the written-off deposit is %s, fund entries %q; want REORGED, DEPOSIT,REORG", d.Status, e.fundKinds(d.ID))
	}
	if e.available("USDT").Cmp(owed) != 0 || len(e.hooks.all()) != 2 {
		t.Errorf("%v USDT available, %d DEPOSIT events; want %v, two", e.available("USDT"), len(e.hooks.all()), owed)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'mined'`); n != 1 {
		t.Errorf("the old batch is not mined in the books (%d): the race was not run", n)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
