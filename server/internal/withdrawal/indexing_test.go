package withdrawal_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// indexingNode stands in front of the simulated chain as an endpoint that, while indexing is
// set, answers receipts as geth does while it indexes transactions after a restart: not
// "unknown", but "transaction indexing is in progress".
type indexingNode struct {
	target   string
	indexing atomic.Bool
}

func (n *indexingNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var call struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if n.indexing.Load() && json.Unmarshal(body, &call) == nil && call.Method == "eth_getTransactionReceipt" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + //nolint:errcheck
			`,"error":{"code":-32000,"message":"transaction indexing is in progress"}}`))
		return
	}
	res, err := http.Post(n.target, "application/json", bytes.NewReader(body)) //nolint:noctx // the test's own proxy
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	io.Copy(w, res.Body) //nolint:errcheck
}

// TestFailRefusedWhileTheNodeIndexes: a payout mined at depth but not yet recorded as mined,
// marked failed while the node answers its receipt "transaction indexing is in progress".
// Before, that answer counted as "not mined": with its nonce used at depth, the payout was
// marked failed, its funds released and the withdrawal opened again, to be paid a second
// time. The node cannot tell, so neither can the service: refused, nothing changes, and the
// payout completes once the node answers.
func TestFailRefusedWhileTheNodeIndexes(t *testing.T) {
	t.Parallel()
	node := &indexingNode{}
	proxy := httptest.NewServer(node)
	t.Cleanup(proxy.Close)
	e := setupChainVia(t, withdrawal.Config{}, testdb.New(t), func(rpcURL string) string {
		node.target = rpcURL
		return proxy.URL
	})
	op := e.operator(domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-indexing", "6.00")
	e.payOnce(w.ID) // stored and broadcast
	for range confirmations + 1 {
		e.dev.Commit() // mined, at depth; the worker has not looked yet
	}
	tx := e.payoutTx(w.ID)
	node.indexing.Store(true)
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
	node.indexing.Store(false)
	e.payAll()
	e.paidOnce(w, 6_000_000)
}
