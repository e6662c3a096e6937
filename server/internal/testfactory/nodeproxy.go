package testfactory

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// NodeCall is one JSON-RPC call passing through a NodeProxy.
type NodeCall struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

// NodeProxy is an RPC endpoint in front of a real node (the simulated chain) that answers some
// calls itself, as a misbehaving node would: a node still syncing, one indexing transactions
// after a restart. Every other call, and every call while no answer is set, goes to the node.
type NodeProxy struct {
	URL string

	target  string
	mu      sync.Mutex
	answer  func(NodeCall) (reply string, ok bool)
	rewrite func(call NodeCall, answer []byte) []byte
}

// NewNodeProxy starts a proxy in front of the node at target; it is closed when the test ends.
func NewNodeProxy(tb testing.TB, target string) *NodeProxy {
	tb.Helper()
	p := &NodeProxy{target: target}
	srv := httptest.NewServer(p)
	tb.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Answer sets what the proxy answers itself: for a call answer accepts, its "result" (JSON) or,
// for a reply that starts with `"error":`, that error member. nil forwards every call again.
func (p *NodeProxy) Answer(answer func(NodeCall) (reply string, ok bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer = answer
}

// Rewrite sets what the proxy makes of the node's answers to the calls it forwards: rewrite
// gets the call (zero for a batch) and the node's answer, and returns the answer to send; it
// may also act when a call passes, or hold the answer back a while. nil sends them as they are.
func (p *NodeProxy) Rewrite(rewrite func(call NodeCall, answer []byte) []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rewrite = rewrite
}

func (p *NodeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	answer, rewrite := p.answer, p.rewrite
	p.mu.Unlock()
	var call NodeCall
	if json.Unmarshal(body, &call) != nil {
		call = NodeCall{} // a batch: no one call
	}
	if answer != nil && call.Method != "" {
		if reply, ok := answer(call); ok {
			if !strings.HasPrefix(reply, `"error":`) {
				reply = `"result":` + reply
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + `,` + reply + `}`)) //nolint:errcheck
			return
		}
	}
	res, err := http.Post(p.target, "application/json", bytes.NewReader(body)) //nolint:noctx // the test's own proxy
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	reply, err := io.ReadAll(res.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if rewrite != nil {
		reply = rewrite(call, reply)
	}
	w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
	w.WriteHeader(res.StatusCode)
	w.Write(reply) //nolint:errcheck
}
