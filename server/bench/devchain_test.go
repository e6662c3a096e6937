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

// awaitScanning waits until River's periodic scans have begun: the pass a worker queues as it
// starts (deposit.Service.ScanNow) and then one the leader's periodic enqueuer queued. Until
// then (1-3 s after a start: leader election, then River's staggered start of up to a
// second) no pass follows the first, and deposits mined meanwhile wait for it. The latency
// figures are for a running service, not for one starting.
func awaitScanning(b *testing.B, env *apptest.Env) {
	b.Helper()
	start := time.Now()
	for {
		var passes int
		if err := env.Pool.QueryRow(b.Context(),
			`SELECT count(*) FROM river_job WHERE kind = 'deposit.scan' AND state = 'completed'`).Scan(&passes); err != nil {
			b.Fatal(err)
		}
		if passes >= 2 {
			return
		}
		if time.Since(start) > 30*time.Second {
			b.Fatalf("%d scan passes in %v", passes, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond)
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
