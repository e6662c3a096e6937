package deposit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// laggingNode stands between the scanner and the simulated chain as an RPC endpoint that can
// fall behind: while behind is set, it answers eth_blockNumber with that height and has no
// block above it (null), as a node still syncing or a load-balanced provider's slow node does.
type laggingNode struct {
	target string
	behind atomic.Int64 // 0: in step with the chain
}

func (l *laggingNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var call struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if h := l.behind.Load(); h > 0 && json.Unmarshal(body, &call) == nil {
		answer := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + `,"result":` + result + `}`)) //nolint:errcheck
		}
		switch {
		case call.Method == "eth_blockNumber":
			answer(`"0x` + strconv.FormatInt(h, 16) + `"`)
			return
		case call.Method == "eth_getBlockByNumber" && len(call.Params) > 0:
			var tag string
			if json.Unmarshal(call.Params[0], &tag) == nil {
				if n, err := strconv.ParseInt(tag, 0, 64); err == nil && n > h {
					answer("null")
					return
				}
			}
		}
	}
	res, err := http.Post(l.target, "application/json", bytes.NewReader(body)) //nolint:noctx // the test's own proxy
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	io.Copy(w, res.Body) //nolint:errcheck
}

// TestScanWaitsForALaggingNode: an endpoint behind the blocks already scanned (failover to a
// node still syncing) is no reorg. Before, the scanner read its missing blocks as blocks that
// had left the chain: it rolled back past a credited deposit, reversing its credit (REORG),
// orphaning what was confirming and scanning again. Now the pass stops with ErrNodeBehind and
// changes nothing, and the scan carries on once the node has caught up.
func TestScanWaitsForALaggingNode(t *testing.T) {
	t.Parallel()
	node := &laggingNode{}
	proxy := httptest.NewServer(node)
	t.Cleanup(proxy.Close)
	e := setupWith(t, options{network: func(n *chain.Network) {
		node.target, n.RPCURLs = n.RPCURLs[0], []string{proxy.URL}
	}})
	addr := e.address("lag-user")
	e.send(e.newUser(), 0, addr, testfactory.Ether(1), nil, 2)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.depositsWhere("CREDITED")[0]

	node.behind.Store(int64(d.BlockNumber) - 1) // the node has not seen the deposit's block yet
	for range 2 {
		if err := e.svc.Scan(e.ctx, e.dev.ChainID()); !errors.Is(err, deposit.ErrNodeBehind) {
			t.Fatalf("scan through a node behind the cursor: %v, want ErrNodeBehind", err)
		}
	}
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.fundKinds(d.ID) != "DEPOSIT" {
		t.Fatalf("deposit %d: %s, fund entries %s; want CREDITED, DEPOSIT only", d.ID, got.Status, e.fundKinds(d.ID))
	}

	node.behind.Store(0) // caught up
	e.dev.Commit()
	e.scan()
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.fundKinds(d.ID) != "DEPOSIT" || len(e.hooks.all()) != 1 {
		t.Fatalf("after the node caught up: %s, fund entries %s, %d DEPOSIT webhooks", got.Status, e.fundKinds(d.ID), len(e.hooks.all()))
	}
}
