package deposit_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// movedReceipts is a JSON-RPC proxy in front of a node that, while on, answers receipts from a
// block the chain no longer has at that height (as a node behind a fork does, or the chain
// between a replay's receipt and header calls): the receipt's blockHash is another one.
func movedReceipts(t *testing.T, on *atomic.Bool) func(*chain.Network) {
	t.Helper()
	return func(n *chain.Network) {
		node := n.RPCURLs[0]
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, node, bytes.NewReader(body))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer res.Body.Close()
			answer, _ := io.ReadAll(res.Body)
			if on.Load() && strings.Contains(string(body), "eth_getTransactionReceipt") {
				var msg map[string]any
				if json.Unmarshal(answer, &msg) == nil {
					if receipt, ok := msg["result"].(map[string]any); ok {
						receipt["blockHash"] = "0x00000000000000000000000000000000000000000000000000000000000dead1"
						answer, _ = json.Marshal(msg)
					}
				}
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
		}))
		t.Cleanup(proxy.Close)
		n.RPCURLs = []string{proxy.URL}
	}
}

// A replay whose receipt names another block than the chain has at that height now (a reorg
// between the checks, or a node on another fork) records nothing and answers UNAVAILABLE, to
// be replayed again: a deposit recorded against a block that does not hold its transaction
// would be credited whatever happens to the transaction.
func TestReplayRefusesAReceiptOfAnotherBlock(t *testing.T) {
	t.Parallel()
	var moved atomic.Bool
	e := setup(t, 0, movedReceipts(t, &moved))
	addr, u := e.payer("u")
	missed := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(missed)
	for range confirmations {
		e.dev.Commit()
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = next_block + 10`); err != nil { // the scanner skipped it
		t.Fatal(err)
	}
	moved.Store(true)
	if _, err := e.svc.Replay(e.ctx, domain.AllOperators(), 1337, missed.Hash()); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("replay with a receipt of another block: %v, want UNAVAILABLE", err)
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("%d deposits recorded", n)
	}
	moved.Store(false)
	if out, err := e.svc.Replay(e.ctx, domain.AllOperators(), 1337, missed.Hash()); err != nil || len(out.Deposits) != 1 {
		t.Fatalf("replayed again: %+v %v", out, err)
	}
}
