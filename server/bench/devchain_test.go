package bench

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// startDevCoffer starts the embedded dev chain (a block every blockTime; when zero, a block
// per transaction) and Coffer on it, scanning every scan with confirmations.
func startDevCoffer(b *testing.B, blockTime, scan time.Duration, confirmations int32) (*devchain.Chain, *apptest.Env) {
	b.Helper()
	dev := testfactory.DevChain(context.Background(), b, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: blockTime})
	return dev, apptest.Start(b, apptest.Options{ScanInterval: scan, Chains: []chain.Network{testfactory.DevNetwork(dev, confirmations)}})
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
