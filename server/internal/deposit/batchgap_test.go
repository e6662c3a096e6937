package deposit_test

import (
	"math/big"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: on an eip7702 chain a done batch (gas-tank nonce 0) left the chain with its
// deposit, written off. A USDT payment then reached a plain deposit address (its sweep needs a
// gas top-up from the gas tank): the top-up was signed at nonce 1 and waited behind the batch's
// unused nonce, which only a batch in flight had the gas tank cancel (cancelBatchGapBefore, from
// advanceBatch); with no token-deposit address paid, no batch formed and the deposit stayed
// unswept. A pending top-up now has the gap below it cancelled too; the deposit is credited
// once, the gas tank pays gas only.
func TestTopUpBehindABatchThatLeftTheChainIsSent(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	e.batchLeftTheChainWrittenOff()
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	pay, _ := e.payment(e.newUser(), 0, e.address("plain"), "USDT", big.NewInt(10_000_000))
	e.mine(pay)
	e.scan()
	next := e.findDeposit(pay.Hash())
	e.run(func() bool { return e.deposit(next).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)

	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 10_000_000 || e.available("USDT").Int64() != 10_000_000 {
		t.Errorf("the bankroll received %v USDT units, %v available; want 10000000 each", got, e.available("USDT"))
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE ref = 'batch:1' AND state = 'cancelled'`); n != 1 {
		t.Errorf("the batch that left the chain is not cancelled (%d)", n)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}
