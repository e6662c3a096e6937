package deposit_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// lagBehind makes node an endpoint that has fallen behind, at height h: it answers
// eth_blockNumber with h and has no block above it (null), as a node still syncing or a
// load-balanced provider's slow node does. 0 puts it in step with the chain again.
func lagBehind(node *testfactory.NodeProxy, h int64) {
	if h == 0 {
		node.Answer(nil)
		return
	}
	node.Answer(func(call testfactory.NodeCall) (string, bool) {
		switch {
		case call.Method == "eth_blockNumber":
			return `"0x` + strconv.FormatInt(h, 16) + `"`, true
		case call.Method == "eth_getBlockByNumber" && len(call.Params) > 0:
			var tag string
			if json.Unmarshal(call.Params[0], &tag) == nil {
				if n, err := strconv.ParseInt(tag, 0, 64); err == nil && n > h {
					return "null", true
				}
			}
		}
		return "", false
	})
}

// TestScanWaitsForALaggingNode: an endpoint behind the blocks already scanned (failover to a
// node still syncing) is no reorg. Before, the scanner read its missing blocks as blocks that
// had left the chain: it rolled back past a credited deposit, reversing its credit (REORG),
// orphaning what was confirming and scanning again. Now the pass stops with ErrNodeBehind and
// changes nothing, and the scan carries on once the node has caught up.
func TestScanWaitsForALaggingNode(t *testing.T) {
	t.Parallel()
	var node *testfactory.NodeProxy
	e := setupWith(t, options{network: func(n *chain.Network) {
		node = testfactory.NewNodeProxy(t, n.RPCURLs[0])
		n.RPCURLs = []string{node.URL}
	}})
	addr := e.address("lag-user")
	e.send(e.newUser(), 0, addr, testfactory.Ether(1), nil, 2)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.depositsWhere("CREDITED")[0]

	lagBehind(node, int64(d.BlockNumber)-1) // the node has not seen the deposit's block yet
	for range 2 {
		if err := e.svc.Scan(e.ctx, e.dev.ChainID()); !errors.Is(err, deposit.ErrNodeBehind) {
			t.Fatalf("scan through a node behind the cursor: %v, want ErrNodeBehind", err)
		}
	}
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.fundKinds(d.ID) != "DEPOSIT" {
		t.Fatalf("deposit %d: %s, fund entries %s; want CREDITED, DEPOSIT only", d.ID, got.Status, e.fundKinds(d.ID))
	}

	lagBehind(node, 0) // caught up
	e.dev.Commit()
	e.scan()
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.fundKinds(d.ID) != "DEPOSIT" || len(e.hooks.all()) != 1 {
		t.Fatalf("after the node caught up: %s, fund entries %s, %d DEPOSIT webhooks", got.Status, e.fundKinds(d.ID), len(e.hooks.all()))
	}
}
