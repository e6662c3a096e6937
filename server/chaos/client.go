package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// API calls Coffer's public REST interface as operators, the widget and admins do, through a
// round-robin balancer over the API replicas: a replica that refuses the connection (it is
// down) is skipped, as a load balancer's health check would. Every call is recorded.
type API struct {
	replicas []*Replica
	next     atomic.Uint32
	http     *http.Client

	mu    sync.Mutex
	calls []*Call
}

// Call is one request and how it ended.
type Call struct {
	Op      string // e.g. "POST /session/deposit"
	Replica string
	Start   time.Time
	End     time.Time
	Status  int    // 0 without an answer
	Code    string // the error envelope's data.code
	Message string
	Err     string // transport error, when there was no answer
	// Abandoned: the caller's context ended before the answer came (the load's time was up
	// while the call was in flight). The service is not to blame for a call given up on.
	Abandoned bool
	Failover  int // replicas that refused the connection before this one answered
}

// Answer is a decoded answer: the envelope's data (or the raw object of /admin/*).
type Answer struct {
	Status  int
	Code    string
	Message string
	Data    map[string]any
}

// OK reports a 2xx answer.
func (a *Answer) OK() bool { return a != nil && a.Status/100 == 2 }

// Str reads a string field of the data.
func (a *Answer) Str(key string) string {
	if a == nil || a.Data == nil {
		return ""
	}
	s, _ := a.Data[key].(string)
	return s
}

// NewAPI balances over the API replicas.
func NewAPI(replicas []*Replica) *API {
	// A decision or an admin COMPLETED waits up to COFFER_SETTLE_WAIT (20 s) for its payout; a
	// minute without an answer is a hang.
	return &API{replicas: replicas, http: &http.Client{Timeout: time.Minute}}
}

var errNoReplica = errors.New("every API replica refused the connection")

// Do sends one request (body marshalled as JSON unless nil) and records it. The error is a
// transport error (no answer); an answer with any status is returned as an Answer.
func (a *API) Do(ctx context.Context, method, path, bearer string, body any) (*Answer, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	op := method + " " + opPath(path)
	first := int(a.next.Add(1))
	c := &Call{Op: op, Start: time.Now()}
	defer func() {
		c.End = time.Now()
		a.mu.Lock()
		a.calls = append(a.calls, c)
		a.mu.Unlock()
	}()
	for i := range a.replicas {
		r := a.replicas[(first+i)%len(a.replicas)]
		c.Replica = r.Name
		req, err := http.NewRequestWithContext(ctx, method, r.URL()+path, bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		res, err := a.http.Do(req)
		if errors.Is(err, syscall.ECONNREFUSED) {
			c.Failover++
			continue
		}
		if err != nil {
			c.Err, c.Abandoned = err.Error(), ctx.Err() != nil
			return nil, err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			c.Err, c.Abandoned = "reading the answer: "+err.Error(), ctx.Err() != nil
			return nil, err
		}
		ans := &Answer{Status: res.StatusCode}
		c.Status = res.StatusCode
		var env struct {
			Status  string         `json:"status"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			c.Code = "NOT_JSON"
			c.Message = truncate(string(b), 200)
			ans.Code, ans.Message = c.Code, c.Message
			return ans, nil
		}
		if env.Status == "success" || env.Status == "error" {
			ans.Data, ans.Message = env.Data, env.Message
		} else {
			json.Unmarshal(b, &ans.Data) //nolint:errcheck // a raw /admin answer
		}
		if !ans.OK() {
			ans.Code, _ = env.Data["code"].(string)
			c.Code, c.Message = ans.Code, truncate(ans.Message, 200)
		}
		return ans, nil
	}
	c.Err = errNoReplica.Error()
	return nil, errNoReplica
}

// Calls is every call so far.
func (a *API) Calls() []*Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*Call(nil), a.calls...)
}

// Until repeats a call while it cannot be answered: no answer, 503 UNAVAILABLE, 429
// RATE_LIMITED, or a 5xx (recorded as a violation, and retried as a client would), pausing
// between tries, until it gets an answer that is final (a success or a refusal) or ctx ends.
func Until(ctx context.Context, call func() (*Answer, error)) (*Answer, error) {
	a, _, err := UntilN(ctx, call)
	return a, err
}

// UntilN is Until, also saying whether an earlier try may have taken effect unseen (it got no
// answer, or a 5xx): a refusal of a later try may then only say that it did.
func UntilN(ctx context.Context, call func() (*Answer, error)) (a *Answer, unsure bool, err error) {
	for {
		a, err = call()
		if err == nil && a.Status < 500 && a.Status != http.StatusTooManyRequests {
			return a, unsure, nil
		}
		unsure = unsure || err != nil || a.Status >= 500
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("%d %s: %s", a.Status, a.Code, a.Message)
			}
			return a, unsure, fmt.Errorf("gave up: %w", err)
		case <-time.After(time.Second):
		}
	}
}

// opPath names a path by its route: ids are replaced by their parameter names.
func opPath(path string) string {
	switch {
	case len(path) > len("/withdraw/") && path[:len("/withdraw/")] == "/withdraw/" && path != "/withdraw/direct-transfer":
		return "/withdraw/:id/decision"
	case len(path) > len("/admin/withdrawals/"):
		return "/admin/withdrawals/:id/status"
	}
	return path
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
