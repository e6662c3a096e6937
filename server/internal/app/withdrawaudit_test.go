package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// operatorEndpoint is an operator's webhook endpoint whose answer to each webhook a test
// decides (onRequest runs before the answer).
type operatorEndpoint struct {
	mu        sync.Mutex
	onRequest func(form url.Values)
}

func (o *operatorEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	f := o.onRequest
	o.mu.Unlock()
	if f != nil {
		f(r.PostForm)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"error":0,"description":"ok"}`)
}

func (o *operatorEndpoint) set(f func(url.Values)) {
	o.mu.Lock()
	o.onRequest = f
	o.mu.Unlock()
}

// startEndpointOperator starts an endpoint and an operator of env (settings s) whose webhooks
// go there.
func startEndpointOperator(t *testing.T, env *apptest.Env, s domain.OperatorSettings) (*operatorEndpoint, domain.Operator, string) {
	t.Helper()
	ep := &operatorEndpoint{}
	srv := httptest.NewServer(http.HandlerFunc(ep.serve))
	t.Cleanup(srv.Close)
	hook := srv.URL
	s.WebhookURL = &hook
	op, key := env.Operator(t, s)
	return ep, op, key
}

// TestSubmissionRacingSessionCancel: the user cancels (dismisses) the widget while the
// operator is answering the synchronous WITHDRAW_REQUEST, and the operator then approves. The
// session was cancelled before the withdrawal was recorded, so no withdrawal may be left open
// on it (PENDING, in the panel, to be processed and paid): the submission is SESSION_EXPIRED
// and nothing is recorded, over REST and over Connect.
func TestSubmissionRacingSessionCancel(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ep, _, key := startEndpointOperator(t, env, domain.OperatorSettings{})
	_, adminToken := env.Admin(t, "")
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	for _, tr := range withdrawTransports(env, adminToken) {
		t.Run(tr.name, func(t *testing.T) {
			sid := tr.open(t, key, "cancel-race-"+tr.name)
			ep.set(func(form url.Values) {
				if form.Get("event") != "WITHDRAW_REQUEST" {
					return
				}
				// The user dismisses the widget while the operator decides.
				if _, err := widget.CancelSession(context.Background(), &cofferv1.CancelSessionRequest{Sid: sid}); err != nil {
					t.Errorf("cancel: %v", err)
				}
			})
			defer ep.set(nil)
			rows := env.Count(t, "withdrawals")
			id, code, details, _, err := tr.submit(sid)
			if err != nil {
				t.Fatal(err)
			}
			if code != "SESSION_EXPIRED" || (details["httpStatus"] != "" && details["httpStatus"] != "410") {
				t.Errorf("submission on a session cancelled meanwhile: id %q, code %q %v; want SESSION_EXPIRED", id, code, details)
			}
			var open int
			if err := env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM withdrawals WHERE session_id = $1 AND status IN ('PENDING', 'AWAITING_APPROVAL')`,
				sid).Scan(&open); err != nil {
				t.Fatal(err)
			}
			if open != 0 {
				t.Fatalf("%d withdrawals open on a cancelled session", open)
			}
			if n := env.Count(t, "withdrawals"); n != rows {
				t.Fatalf("the refused submission wrote %d withdrawals", n-rows)
			}
		})
	}
}
