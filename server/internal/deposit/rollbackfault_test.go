package deposit_test

import (
	"encoding/json"
	"math/big"
	"sync/atomic"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// failingReceipts is a JSON-RPC proxy in front of a node that, while on, answers every receipt
// request with an error (a node timing out, a provider's outage).
func failingReceipts(t *testing.T, on *atomic.Bool) func(*chain.Network) {
	t.Helper()
	return func(n *chain.Network) {
		proxy := testfactory.NewNodeProxy(t, n.RPCURLs[0])
		proxy.Rewrite(func(call testfactory.NodeCall, answer []byte) []byte {
			if !on.Load() || call.Method != "eth_getTransactionReceipt" {
				return answer
			}
			var msg map[string]any
			if json.Unmarshal(answer, &msg) == nil {
				delete(msg, "result")
				msg["error"] = map[string]any{"code": -32603, "message": "internal error: upstream timeout"}
				answer, _ = json.Marshal(msg)
			}
			return answer
		})
		n.RPCURLs = []string{proxy.URL}
	}
}

// Guard: a rollback whose sweep's block left the chain reads the sweep's receipt before it
// commits. While the node cannot answer receipts the pass fails and commits nothing (the
// cursor stays, the deposit stays CREDITED: no wrong picture of a sweep it could not read);
// the next pass, the node answering again, rolls back, the sweep is sent again and the deposit
// counts again once, the books holding at every step.
func TestRollbackWhileReceiptsFailCommitsNothingAndIsRetried(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	e := setupWith(t, options{batched: true, network: failingReceipts(t, &failing)})
	addr := e.paidAddress("ada", true)
	amount := big.NewInt(40_000_000)
	pay, _ := e.payment(e.newUser(), 0, addr, "USDT", amount)
	e.mine(pay)
	e.confirm()
	bank0 := e.holding("USDT", e.bankroll)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	id := e.findDeposit(pay.Hash())
	credited := e.deposit(id)
	e.engine.RebroadcastAfter = 0
	next := e.count(`SELECT next_block FROM chain_cursors`)

	e.forkAt(e.sweepBlock()-1, nil) // takes the sweep's block; the node drops it
	failing.Store(true)
	if err := e.svc.Scan(e.ctx, e.dev.ChainID()); err == nil {
		t.Fatal("the rollback committed without reading the sweep's receipt")
	}
	if got := e.deposit(id); got.Status != domain.DepositCredited || e.count(`SELECT next_block FROM chain_cursors`) != next ||
		e.count(`SELECT count(*) FROM deposit_reorgs`) != 0 {
		t.Fatalf("after the failed pass: the deposit is %s, the cursor %d (was %d), %d reorgs; want nothing changed",
			got.Status, e.count(`SELECT next_block FROM chain_cursors`), next, e.count(`SELECT count(*) FROM deposit_reorgs`))
	}
	failing.Store(false)
	e.scan() // rolls back
	if got := e.deposit(id); got.Status != domain.DepositReorged {
		t.Fatalf("after the rollback the deposit is %s, want REORGED", got.Status)
	}
	e.reconciled()
	for end := e.latestHeader().Number.Uint64() + 2*confirmations; e.latestHeader().Number.Uint64() <= end; {
		e.dev.Commit()
		e.scan()
		e.settleAll()
		e.reconciled()
	}
	e.countsAgainOnce(id, "USDT", credited.Amount.Int64())
	if got := new(big.Int).Sub(e.holding("USDT", e.bankroll), bank0); got.Cmp(amount) != 0 {
		t.Errorf("the bankroll received %v USDT, want the deposit's %v once", got, amount)
	}
	if got := e.holding("USDT", addr); got.Sign() != 0 {
		t.Errorf("the deposit address still holds %v USDT", got)
	}
	e.nothingPending()
}
