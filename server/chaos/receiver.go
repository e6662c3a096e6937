package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// Receiver is the operators' webhook endpoint, one path per operator (/hooks/<name>). It
// verifies every signature with the Go SDK, parses every body with it, and acknowledges with
// error 0, unless a fault says otherwise: fail (HTTP 500, error 1 or a body that is not JSON)
// or hang (hold the request until the fault ends; the sender gives up after 15 s).
type Receiver struct {
	URL string
	srv *http.Server

	mu         sync.Mutex
	keys       map[string][]byte
	fault      Kind
	mode       string
	until      time.Time
	deliveries []*Delivery
	listeners  []func(*Delivery)
	problems   []string
}

// Delivery is one request the receiver got.
type Delivery struct {
	At       time.Time // request arrived
	Answered time.Time
	Hook     string // operator name
	ID       string // webhook-id
	Event    string
	Form     url.Values
	Acked    bool
	Outcome  string // acked, failed:<mode>, hung (the sender gave up), held then acked
}

// NewReceiver starts the receiver on a loopback port.
func NewReceiver() (*Receiver, error) {
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String(), keys: map[string][]byte{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln) //nolint:errcheck
	return r, nil
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Hook is the webhook URL of an operator, which signs with key.
func (r *Receiver) Hook(name string) string { return r.URL + "/hooks/" + name }

// SetKey records the key an operator's webhooks are signed with.
func (r *Receiver) SetKey(name, key string) {
	r.mu.Lock()
	r.keys[name] = []byte(key)
	r.mu.Unlock()
}

// OnAcked calls fn for every acknowledged delivery (in its own goroutine).
func (r *Receiver) OnAcked(fn func(*Delivery)) {
	r.mu.Lock()
	r.listeners = append(r.listeners, fn)
	r.mu.Unlock()
}

// Break makes the receiver misbehave until d has passed: kind ReceiverFail (mode http-500,
// error-1 or not-json) or ReceiverHang.
func (r *Receiver) Break(kind Kind, mode string, d time.Duration) {
	r.mu.Lock()
	r.fault, r.mode, r.until = kind, mode, time.Now().Add(d)
	r.mu.Unlock()
}

func (r *Receiver) current() (Kind, string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().After(r.until) {
		return "", "", time.Time{}
	}
	return r.fault, r.mode, r.until
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	d := &Delivery{At: time.Now(), Hook: strings.TrimPrefix(req.URL.Path, "/hooks/"), ID: req.Header.Get("webhook-id")}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	key, ok := r.keys[d.Hook]
	r.mu.Unlock()
	if !ok {
		r.problemf("webhook to an unknown path %s", req.URL.Path)
		http.Error(w, "unknown hook", http.StatusNotFound)
		return
	}
	if err := webhook.Verify(req.Header, body, key, time.Now()); err != nil {
		r.problemf("webhook %s to %s: signature: %v", d.ID, d.Hook, err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if _, err := webhook.Parse(body); err != nil {
		r.problemf("webhook %s to %s: the SDK cannot parse it: %v", d.ID, d.Hook, err)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	d.Form, _ = url.ParseQuery(string(body))
	d.Event = d.Form.Get("event")
	if d.Form.Get("test") != "" {
		r.problemf("webhook %s to %s is a test event: the run sends none", d.ID, d.Hook)
	}
	kind, mode, until := r.current()
	switch kind {
	case ReceiverFail:
		d.Outcome = "failed:" + mode
		switch mode {
		case "http-500":
			http.Error(w, "receiver down", http.StatusInternalServerError)
		case "error-1":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"error":1,"description":"declined by chaos"}`)) //nolint:errcheck
		default:
			w.Write([]byte("ok")) //nolint:errcheck
		}
		r.record(d)
		return
	case ReceiverHang:
		select {
		case <-req.Context().Done():
			d.Outcome = "hung"
			r.record(d)
			return
		case <-time.After(time.Until(until)):
			d.Outcome = "held then acked"
		}
	case KillWorker, KillAPI, RestartPostgres: // not the receiver's faults: it acks
		d.Outcome = "acked"
	default:
		d.Outcome = "acked"
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write([]byte(`{"error":0,"description":"ok"}`)); err != nil {
		d.Outcome = "ack not written: " + err.Error()
		r.record(d)
		return
	}
	d.Acked = true
	r.record(d)
}

func (r *Receiver) record(d *Delivery) {
	d.Answered = time.Now()
	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	listeners := r.listeners
	r.mu.Unlock()
	if d.Acked {
		for _, fn := range listeners {
			go fn(d)
		}
	}
}

func (r *Receiver) problemf(format string, args ...any) {
	r.mu.Lock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// Deliveries is every request so far.
func (r *Receiver) Deliveries() []*Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Delivery(nil), r.deliveries...)
}

// Problems are deliveries the receiver refused as malformed (bad signature, unparseable).
func (r *Receiver) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.problems...)
}
