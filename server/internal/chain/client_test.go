package chain_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestClientFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})

	var limited, broken atomic.Int32
	rateLimited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited.Add(1)
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	defer rateLimited.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		broken.Add(1)
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer failing.Close()

	c := chain.Dial(chain.Network{ChainID: 1337, RPCURLs: []string{rateLimited.URL, "http://127.0.0.1:1", failing.URL, dev.RPCURL()}}, nil)
	defer c.Close()
	n, err := c.BlockNumber(ctx)
	if err != nil || n == 0 {
		t.Fatalf("block number through failover: %d %v", n, err)
	}
	if limited.Load() != 1 || broken.Load() != 1 {
		t.Fatalf("each failing endpoint tried once: 429 %d, 502 %d", limited.Load(), broken.Load())
	}
	// The failed endpoints are paused: the next call goes straight to the healthy one.
	if _, err := c.BlockNumber(ctx); err != nil {
		t.Fatal(err)
	}
	if limited.Load() != 1 || broken.Load() != 1 {
		t.Fatalf("paused endpoints were called again: 429 %d, 502 %d", limited.Load(), broken.Load())
	}
	// A node's answer is not a failure of the endpoint: no failover, the answer comes back.
	if _, err := c.Receipt(ctx, common.HexToHash("0x01")); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("unknown receipt: %v", err)
	}
}

func TestClientAllEndpointsDown(t *testing.T) {
	t.Parallel()
	c := chain.Dial(chain.Network{ChainID: 1, RPCURLs: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}}, nil)
	defer c.Close()
	_, err := c.BlockNumber(context.Background())
	if !errors.Is(err, chain.ErrUnavailable) {
		t.Fatalf("all down: %v", err)
	}
	// Paused endpoints are still tried rather than refusing the call outright.
	if _, err := c.BlockNumber(context.Background()); !errors.Is(err, chain.ErrUnavailable) {
		t.Fatalf("second call: %v", err)
	}
}

// TestClientRefusesAnEndpointOfAnotherChain: an endpoint that serves another chain (a
// provider URL pasted under the wrong chain, started with COFFER_CHAINS_VALIDATE=warn or off)
// is never read or sent to: its blocks and logs would credit deposits the configured chain
// never saw. The call fails over, and with no other endpoint the chain is unavailable.
func TestClientRefusesAnEndpointOfAnotherChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	for _, tc := range []struct {
		name    string
		chainID int64
		wantErr string
	}{
		{"the endpoint's own chain", dev.ChainID(), ""},
		{"another chain's endpoint", 8453, "endpoint serves chain 1337, not 8453"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := chain.Dial(chain.Network{ChainID: tc.chainID, RPCURLs: []string{dev.RPCURL()}}, nil)
			defer c.Close()
			for range 2 { // the second call must not reuse a connection the first refused
				_, err := c.BlockNumber(ctx)
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("block number: %v", err)
				case tc.wantErr != "" && (!errors.Is(err, chain.ErrUnavailable) || !strings.Contains(err.Error(), tc.wantErr)):
					t.Fatalf("block number from a node of chain %d: %v, want unavailable: %q", dev.ChainID(), err, tc.wantErr)
				}
			}
		})
	}
}
