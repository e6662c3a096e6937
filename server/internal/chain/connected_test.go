package chain

import (
	"log/slog"
	"testing"
)

// TestConnectedLookup: a chain is usable only when it is configured and has a client.
func TestConnectedLookup(t *testing.T) {
	t.Parallel()
	networks := []Network{
		{ChainID: 1, Name: "A", RPCURLs: []string{"http://127.0.0.1:9"}, Confirmations: 1, NativeSymbol: "ETH", NativeDecimals: 18},
		{ChainID: 2, Name: "B", RPCURLs: []string{"http://127.0.0.1:9"}, Confirmations: 1, NativeSymbol: "ETH", NativeDecimals: 18},
	}
	r, err := NewRegistry(networks)
	if err != nil {
		t.Fatal(err)
	}
	c := Connected{Registry: r, Clients: map[int64]*Client{1: Dial(networks[0], slog.Default())}}
	for _, tc := range []struct {
		chainID int64
		ok      bool
	}{{1, true}, {2, false}, {3, false}} {
		n, cl, err := c.Lookup(tc.chainID)
		if got := err == nil; got != tc.ok || (tc.ok && (n.ChainID != tc.chainID || cl == nil)) {
			t.Errorf("Lookup(%d) = %d, %v, %v; want ok=%v", tc.chainID, n.ChainID, cl, err, tc.ok)
		}
	}
}
