package bench

import (
	"context"
	"io"
	"maps"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
)

func devNetwork(dev *devchain.Chain, confirmations int32) chain.Network {
	n := chain.Network{ChainID: dev.ChainID(), Name: "dev", RPCURLs: []string{dev.RPCURL()}, Confirmations: confirmations,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: common.HexToAddress("0x00000000000000000000000000000000000bea11")}
	for _, t := range dev.Tokens() {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: t.Address, Decimals: int32(t.Decimals)})
	}
	return n
}

// startDevCoffer starts the embedded dev chain (a block every blockTime; when zero, a block
// per transaction) and Coffer on it, scanning every scan with confirmations.
func startDevCoffer(b *testing.B, blockTime, scan time.Duration, confirmations int32) (*devchain.Chain, *apptest.Env) {
	b.Helper()
	dev, err := devchain.Start(context.Background(), devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: blockTime})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dev.Close() })
	return dev, apptest.Start(b, apptest.Options{ScanInterval: scan, Chains: []chain.Network{devNetwork(dev, confirmations)}})
}

// fund sends to 1,000 ETH (and mints to 1,000,000 USDT when usdt) and waits for them to be mined.
func fund(b *testing.B, dev *devchain.Chain, to common.Address, usdt bool) {
	b.Helper()
	ctx := b.Context()
	tx, err := dev.SendNative(ctx, to, new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18)))
	if err != nil {
		b.Fatal(err)
	}
	txs := []common.Hash{tx}
	if usdt {
		mint, err := dev.Mint(ctx, "USDT", to, big.NewInt(1_000_000_000_000))
		if err != nil {
			b.Fatal(err)
		}
		txs = append(txs, mint)
	}
	if _, err := dev.Mine(ctx, txs...); err != nil {
		b.Fatal(err)
	}
}

// acks is an operator's webhook endpoint that acknowledges every webhook and records when it
// first acknowledged each event (of one type, or every one when the type is ""), by a field.
type acks struct {
	srv *httptest.Server

	mu sync.Mutex
	at map[string]time.Time
}

func newAcks(b *testing.B, event, field, answer string) *acks {
	b.Helper()
	a := &acks{at: map[string]time.Time{}}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer))
		if event != "" && form.Get("event") != event {
			return
		}
		a.mu.Lock()
		if _, ok := a.at[form.Get(field)]; !ok {
			a.at[form.Get(field)] = time.Now()
		}
		a.mu.Unlock()
	}))
	b.Cleanup(a.srv.Close)
	return a
}

// wait waits until n events were acknowledged and returns when each was.
func (a *acks) wait(b *testing.B, n int, timeout time.Duration) map[string]time.Time {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a.mu.Lock()
		got := len(a.at)
		a.mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d webhooks acknowledged after %v", got, n, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.at)
}
