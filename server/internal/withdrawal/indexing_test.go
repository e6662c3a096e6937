package withdrawal_test

import (
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// indexing makes node answer receipts as geth does while it indexes transactions after a
// restart: not "unknown", but "transaction indexing is in progress" (on false, as the node).
func indexing(node *testfactory.NodeProxy, on bool) {
	if !on {
		node.Answer(nil)
		return
	}
	node.Answer(func(call testfactory.NodeCall) (string, bool) {
		return `"error":{"code":-32000,"message":"transaction indexing is in progress"}`, call.Method == "eth_getTransactionReceipt"
	})
}

// TestFailRefusedWhileTheNodeIndexes: a payout mined at depth but not yet recorded as mined,
// marked failed while the node answers its receipt "transaction indexing is in progress".
// Before, that answer counted as "not mined": with its nonce used at depth, the payout was
// marked failed, its funds released and the withdrawal opened again, to be paid a second
// time. The node cannot tell, so neither can the service: refused, nothing changes, and the
// payout completes once the node answers.
func TestFailRefusedWhileTheNodeIndexes(t *testing.T) {
	t.Parallel()
	var node *testfactory.NodeProxy
	e := setupChainVia(t, withdrawal.Config{}, testdb.New(t), func(rpcURL string) string {
		node = testfactory.NewNodeProxy(t, rpcURL)
		return node.URL
	})
	op := e.operator(domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-indexing", "6.00")
	e.payOnce(w.ID) // stored and broadcast
	for range confirmations + 1 {
		e.dev.Commit() // mined, at depth; the worker has not looked yet
	}
	tx := e.payoutTx(w.ID)
	indexing(node, true)
	_, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "looks stuck")
	if f := faultOf(err); f == nil || f.Code != fault.Unavailable || !strings.Contains(err.Error(), "indexing") {
		t.Fatalf("fail while the node indexes: %v, want UNAVAILABLE saying the node is indexing", err)
	}
	if got := e.payoutTx(w.ID); got.State != tx.State {
		t.Fatalf("payout %s → %s: a refused fail changed it", tx.State, got.State)
	}
	if f := e.funds(op, "USDT"); f.Reserved.Int64() != 6_000_000 {
		t.Fatalf("reserved %s, want the payout's 6 USDT still reserved", f.Reserved)
	}
	indexing(node, false)
	e.payAll()
	e.paidOnce(w, 6_000_000)
}
