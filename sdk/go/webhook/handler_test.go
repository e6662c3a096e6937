package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/webhook"
)

var key = []byte("sk_test_handler_key")

// signed returns a request carrying a signed body, as Coffer sends it.
func signed(t *testing.T, body []byte, at time.Time) *http.Request {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hook", strings.NewReader(string(body)))
	maps.Copy(req.Header, webhook.Headers([][]byte{key}, "evt-1", at, body))
	req.Header.Set("Content-Type", webhook.ContentType)
	return req
}

// body returns a DEPOSIT body as Coffer sends it, a test event when test is set.
func body(test bool) []byte {
	if test {
		return []byte(depositBody + "&test=true")
	}
	return []byte(depositBody)
}

func TestHandler(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	type call struct {
		event webhook.Event
		n     int
	}
	cases := []struct {
		name       string
		req        func(t *testing.T) *http.Request
		fn         webhook.HandlerFunc
		opts       []webhook.Option
		wantStatus int
		wantError  webhook.ReplyCode
		wantCalled bool
	}{
		{name: "deposit acknowledged", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(false), now) },
			wantStatus: 200, wantError: 0, wantCalled: true},
		{name: "test event flagged", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(true), now) },
			wantStatus: 200, wantError: 0, wantCalled: true},
		{name: "withdraw request denied with a code", req: func(t *testing.T) *http.Request {
			t.Helper()
			body, _ := webhook.Encode(&cofferv1.WithdrawRequestEvent{WithdrawRequestId: "w-1"})
			return signed(t, body, now)
		}, fn: func(context.Context, webhook.Event) (webhook.Reply, error) {
			return webhook.Deny(webhook.ReplyDailyLimitExceeded, ""), nil
		}, wantStatus: 200, wantError: 5, wantCalled: true},
		{name: "handler error is a 500", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(false), now) },
			fn: func(context.Context, webhook.Event) (webhook.Reply, error) {
				return webhook.Reply{}, errors.New("ledger down")
			},
			wantStatus: 500, wantError: 3, wantCalled: true},
		{name: "tampered body refused", req: func(t *testing.T) *http.Request {
			t.Helper()
			r := signed(t, body(false), now)
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(depositBody, "depositId=42", "depositId=43", 1)))
			return r
		}, wantStatus: 401, wantError: 3},
		{name: "stale timestamp refused", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(false), now.Add(-6*time.Minute)) },
			wantStatus: 401, wantError: 3},
		{name: "tolerance option", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(false), now.Add(-6*time.Minute)) },
			opts: []webhook.Option{webhook.WithTolerance(10 * time.Minute)}, wantStatus: 200, wantCalled: true},
		{name: "unsigned refused", req: func(t *testing.T) *http.Request {
			t.Helper()
			return httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hook", strings.NewReader(string(body(false))))
		}, wantStatus: 401, wantError: 3},
		{name: "GET refused", req: func(*testing.T) *http.Request {
			return httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/hook", nil)
		},
			wantStatus: 405, wantError: 3},
		{name: "oversize refused", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, body(false), now) },
			opts: []webhook.Option{webhook.WithMaxBody(16)}, wantStatus: 413, wantError: 3},
		{name: "unknown event refused", req: func(t *testing.T) *http.Request { t.Helper(); return signed(t, []byte("event=PING"), now) },
			wantStatus: 400, wantError: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got call
			fn := c.fn
			if fn == nil {
				fn = func(context.Context, webhook.Event) (webhook.Reply, error) { return webhook.OK("credited"), nil }
			}
			opts := append([]webhook.Option{webhook.WithClock(func() time.Time { return now })}, c.opts...)
			h := webhook.Handler(key, func(ctx context.Context, e webhook.Event) (webhook.Reply, error) {
				got = call{event: e, n: got.n + 1}
				return fn(ctx, e)
			}, opts...)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, c.req(t))
			var reply webhook.Reply
			if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
				t.Fatalf("answer %q is not JSON: %v", rec.Body.String(), err)
			}
			if rec.Code != c.wantStatus || reply.Error != c.wantError || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("answer %d %s, want %d with error %d", rec.Code, rec.Body.String(), c.wantStatus, c.wantError)
			}
			if (got.n == 1) != c.wantCalled || got.n > 1 {
				t.Fatalf("handler func called %d times, want called=%v", got.n, c.wantCalled)
			}
			if c.wantCalled && (got.event.ID != "evt-1" || got.event.Message == nil || got.event.Name == "" ||
				got.event.Test != (c.name == "test event flagged")) {
				t.Fatalf("event %+v", got.event)
			}
		})
	}
}

// What was seen: a HandlerFunc's error text ("pq: connection to 10.0.3.7:5432 refused") was the
// description of the 500 answer, which Coffer records with the attempt: the operator's internal
// details ended up in Coffer's records. The answer now carries a fixed text; the error goes to
// the operator's WithErrorLog hook.
func TestHandlerErrorStaysWithTheOperator(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	internal := errors.New("pq: connection to 10.0.3.7:5432 refused")
	fail := func(context.Context, webhook.Event) (webhook.Reply, error) { return webhook.Reply{}, internal }
	for _, c := range []struct {
		name   string
		logged bool
	}{{"without a hook", false}, {"with a hook", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var loggedEvent webhook.Event
			var loggedErr error
			opts := []webhook.Option{webhook.WithClock(func() time.Time { return now })}
			if c.logged {
				opts = append(opts, webhook.WithErrorLog(func(_ context.Context, e webhook.Event, err error) { loggedEvent, loggedErr = e, err }))
			}
			rec := httptest.NewRecorder()
			webhook.Handler(key, fail, opts...).ServeHTTP(rec, signed(t, body(false), now))
			var reply webhook.Reply
			if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil {
				t.Fatalf("answer %q is not JSON: %v", rec.Body.String(), err)
			}
			if rec.Code != http.StatusInternalServerError || reply.Error != webhook.ReplyTemporarilyUnavailable ||
				reply.Description != webhook.InternalErrorDescription {
				t.Fatalf("answer %d %s, want 500 with error 3 and %q", rec.Code, rec.Body.String(), webhook.InternalErrorDescription)
			}
			if strings.Contains(rec.Body.String(), "10.0.3.7") {
				t.Fatalf("the answer leaks the handler's error: %s", rec.Body.String())
			}
			if c.logged && (!errors.Is(loggedErr, internal) || loggedEvent.ID != "evt-1" || loggedEvent.Name == "") {
				t.Fatalf("hook got %+v, %v", loggedEvent, loggedErr)
			}
		})
	}
}

func TestReplyCodes(t *testing.T) {
	t.Parallel()
	if webhook.ReplyOK.Message() != "" || webhook.ReplyCode(10).Message() != "" {
		t.Fatal("codes outside 1–9 have no spec message")
	}
	seen := map[string]bool{}
	for c := webhook.ReplyDeclinedByOperator; c <= webhook.ReplyAccountSuspended; c++ {
		if m := c.Message(); m == "" || seen[m] {
			t.Fatalf("code %d: message %q", c, m)
		}
		seen[c.Message()] = true
	}
	rec := httptest.NewRecorder()
	webhook.OK("").Write(rec)
	if rec.Body.String() != `{"error":0,"description":"ok"}` {
		t.Fatalf("OK reply %s", rec.Body.String())
	}
}
