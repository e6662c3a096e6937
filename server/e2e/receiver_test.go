package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// receiver is an operator's webhook endpoint: it verifies each request's signature with the
// Go SDK, parses it with the SDK, keeps it, and acknowledges with error 0.
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu     sync.Mutex
	key    []byte
	events []received
}

type received struct {
	id     string
	form   url.Values
	parsed proto.Message
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setKey(key string) {
	r.mu.Lock()
	r.key = []byte(key)
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	key := r.key
	r.mu.Unlock()
	if err := webhook.Verify(req.Header, body, key, time.Now()); err != nil {
		r.t.Errorf("webhook signature: %v", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	msg, err := webhook.Parse(body)
	if err != nil {
		r.t.Errorf("webhook body: %v", err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	form, _ := url.ParseQuery(string(body))
	r.mu.Lock()
	r.events = append(r.events, received{id: req.Header.Get("webhook-id"), form: form, parsed: msg})
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"error":0,"description":"credited"}`))
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.events...)
}

// waitFor waits until n webhooks arrived.
func (r *receiver) waitFor(n int, timeout time.Duration) []received {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if got := r.all(); len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("%d webhooks after %v, want %d", len(r.all()), timeout, n)
	return nil
}

// waitForEvent waits for an event of a type about one withdrawal.
func (r *receiver) waitForEvent(t *testing.T, event, withdrawalID string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, e := range r.all() {
			if e.form.Get("event") == event && e.form.Get("withdrawRequestId") == withdrawalID {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s for %s after %v", event, withdrawalID, timeout)
}
