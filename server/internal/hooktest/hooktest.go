// Package hooktest is an operator's webhook endpoint for the tests that run Coffer: it checks
// each webhook's signature and parses it with the Go SDK, as an operator would, keeps it, and
// acknowledges it with error 0. (Package testwebhook is the service's "send a test webhook".)
package hooktest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// Hook is one webhook the receiver accepted.
type Hook struct {
	ID     string // the webhook-id header
	Form   url.Values
	Parsed proto.Message
}

// Receiver is the endpoint. Several operators may share it, each at a path of its own (see
// Operator); SetKey gives the key of an operator whose URL is URL itself.
type Receiver struct {
	t    testing.TB
	srv  *httptest.Server
	down atomic.Bool

	mu       sync.Mutex
	keys     map[string][]byte // an operator's key by request path
	attempts []string          // the webhook-id of every request, in order
	hooks    []Hook
}

// New starts a receiver, closed when the test ends. A webhook whose signature or body is bad
// fails the test and is refused.
func New(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{t: t, keys: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the endpoint's base URL.
func (r *Receiver) URL() string { return r.srv.URL }

// SetKey sets the key the signatures of webhooks sent to URL are checked with.
func (r *Receiver) SetKey(key string) { r.setKey("/", key) }

func (r *Receiver) setKey(path, key string) {
	r.mu.Lock()
	r.keys[path] = []byte(key)
	r.mu.Unlock()
}

// Operator creates an operator of env whose webhooks come here, at a path of its own, and
// takes its key.
func (r *Receiver) Operator(t testing.TB, env *apptest.Env, s domain.OperatorSettings) (domain.Operator, string) {
	t.Helper()
	path := "/" + uuid.NewString()
	s.WebhookURL = new(r.URL() + path)
	op, key := env.Operator(t, s)
	r.setKey(path, key)
	return op, key
}

// SetDown makes the endpoint answer 503 to every webhook (down) or accept them again.
func (r *Receiver) SetDown(down bool) { r.down.Store(down) }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	r.attempts = append(r.attempts, id)
	key := r.keys[req.URL.Path]
	r.mu.Unlock()
	if r.down.Load() {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
		return
	}
	if err := webhook.Verify(req.Header, body, key, time.Now()); err != nil {
		r.t.Errorf("webhook %s: signature: %v", id, err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	msg, err := webhook.Parse(body)
	if err != nil {
		r.t.Errorf("webhook %s: body: %v: %s", id, err, body)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	form, _ := url.ParseQuery(string(body)) // Parse read it
	r.mu.Lock()
	r.hooks = append(r.hooks, Hook{ID: id, Form: form, Parsed: msg})
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"error":0,"description":"ok"}`) // Coffer may have given up; the test asserts what was kept
}

// Attempts is the webhook-id of every request so far, refused ones too, in order.
func (r *Receiver) Attempts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.attempts...)
}

// All is every webhook accepted so far, in order.
func (r *Receiver) All() []Hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Hook(nil), r.hooks...)
}

// Matching is the accepted webhooks of an event type whose field equals value.
func (r *Receiver) Matching(event, field, value string) []Hook {
	var out []Hook
	for _, h := range r.All() {
		if h.Form.Get("event") == event && h.Form.Get(field) == value {
			out = append(out, h)
		}
	}
	return out
}

// Await waits until n webhooks were accepted and returns them all.
func (r *Receiver) Await(n int, timeout time.Duration) []Hook {
	r.t.Helper()
	return await(r.t, "webhooks", n, timeout, r.All)
}

// AwaitAttempts waits until the endpoint saw n requests and returns their webhook-ids.
func (r *Receiver) AwaitAttempts(n int, timeout time.Duration) []string {
	r.t.Helper()
	return await(r.t, "requests", n, timeout, r.Attempts)
}

// AwaitMatching waits until n accepted webhooks of an event type have field equal to value,
// and returns them.
func (r *Receiver) AwaitMatching(t testing.TB, event, field, value string, n int, timeout time.Duration) []Hook {
	t.Helper()
	return await(t, event+" webhooks with "+field+"="+value, n, timeout, func() []Hook { return r.Matching(event, field, value) })
}

func await[T any](t testing.TB, what string, n int, timeout time.Duration, list func() []T) []T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := list()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s after %v, want %d", len(got), what, timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
