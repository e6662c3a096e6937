package app_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// TestServiceTeamSendsEveryEventAsATest: the spec's "Any event can be sent as a test, by the
// operator through POST /session/:uuid/test-webhook or by the service team during onboarding".
// What was seen: the service team had no way to send one (no OpsService call, no CLI command),
// so a mode-A operator could not try its approval endpoint before a real withdrawal. Now
// OpsService.SendTestEvent sends each of the three events, signed and marked test=true, with
// no session and no withdrawal, listed in the operator's feed marked test; a test DEPOSIT's
// depositId is negative and the same each time; the endpoint's places (5 a minute) are shared
// with the operator's own test webhooks.
func TestServiceTeamSendsEveryEventAsATest(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	op, key := hooks.Operator(t, env, domain.OperatorSettings{})
	ctx, ops, _ := consoles(t, env)

	send := func(event cofferv1.WebhookEventType, amount *string) *cofferv1.SendTestEventResponse {
		t.Helper()
		res, err := ops.SendTestEvent(ctx, &cofferv1.SendTestEventRequest{OperatorId: op.ID, Event: event, Amount: amount})
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		return res
	}
	for _, event := range []cofferv1.WebhookEventType{cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_DEPOSIT,
		cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_REQUEST, cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_COMPLETE} {
		name := strings.TrimPrefix(event.String(), "WEBHOOK_EVENT_TYPE_")
		res := send(event, nil)
		if !res.Delivered || res.Status != 200 || res.Code != 0 || res.Event != name || res.EventId == "" || res.Failure != "" {
			t.Fatalf("%s: %v", name, res)
		}
		got := onlyTest(t, hooks, name)
		if hook := hooks.Matching(name, "test", "true")[0]; hook.ID != res.EventId {
			t.Errorf("%s: delivered as %s, answered as %s", name, hook.ID, res.EventId)
		}
		if got.Get("externalUserId") != "coffer-onboarding-test" || !strings.HasPrefix(got.Get("sessionRef"), "sr_") {
			t.Errorf("%s: made-up session fields %v", name, got)
		}
	}
	first := onlyTest(t, hooks, "DEPOSIT").Get("depositId")
	if !strings.HasPrefix(first, "-") {
		t.Errorf("test depositId %s, want negative", first)
	}
	send(cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_DEPOSIT, nil)
	if again := hooks.Matching("DEPOSIT", "test", "true")[1].Form.Get("depositId"); again != first {
		t.Errorf("a second test DEPOSIT has depositId %s, the first %s", again, first)
	}
	send(cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_REQUEST, new("12.5"))
	if got := hooks.Matching("WITHDRAW_REQUEST", "test", "true")[1].Form.Get("fiatAmount"); got != "12.50" {
		t.Errorf("overridden test WITHDRAW_REQUEST fiatAmount %s, want 12.50", got)
	}

	// Five reached the endpoint this minute: the sixth, the service team's or the operator's own, waits.
	_, err := ops.SendTestEvent(ctx, &cofferv1.SendTestEventRequest{OperatorId: op.ID,
		Event: cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_DEPOSIT})
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a sixth test to one endpoint: %v, want RESOURCE_EXHAUSTED", err)
	}
	sid := restSession(t, env, key, "deposit", "onboarding", "USD")
	if status, data := restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key, ""); status != 429 {
		t.Errorf("the operator's own test webhook after five onboarding tests: %d %v", status, data)
	}

	// Nothing but the attempts was recorded: no withdrawal, and in the operator's feed only the
	// five attempts, each marked test as the operator's own test webhooks are.
	if status, data := restOutcome(t, env, "GET", "/withdrawals", key, ""); status != 200 || fmt.Sprint(data["items"]) != "[]" {
		t.Errorf("withdrawals after the tests: %d %v", status, data)
	}
	// The feed shows an event once no transaction older than it is open (webhook/feed.go):
	// wait for the five.
	var items []any
	for deadline := time.Now().Add(30 * time.Second); len(items) < 5 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		status, data := restOutcome(t, env, "GET", "/events", key, "")
		if status != 200 {
			t.Fatalf("event feed: %d %v", status, data)
		}
		items, _ = data["items"].([]any)
	}
	if len(items) != 5 {
		t.Fatalf("event feed after the tests: %d entries, want 5: %v", len(items), items)
	}
	for _, item := range items {
		if e := item.(map[string]any); e["test"] != true {
			t.Errorf("feed entry not marked test: %v", e)
		}
	}
	if len(hooks.All()) != 5 {
		t.Errorf("%d webhooks reached the endpoint, want 5", len(hooks.All()))
	}
}

// TestServiceTeamsTestWithdrawRequestReportsTheAnswer: a test WITHDRAW_REQUEST is how a mode-A
// operator tries its approval endpoint, so the answer is reported as Coffer reads it (the code a
// real withdrawal would get) and never acted on; bad requests are refused naming the field and
// send nothing.
func TestServiceTeamsTestWithdrawRequestReportsTheAnswer(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	var posts atomic.Int32
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), "test=true") {
			http.Error(w, "not a test", http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/refuses":
			_, _ = io.WriteString(w, `{"error":4,"description":"user has pending bets"}`)
		case "/down":
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(endpoint.Close)
	ctx, ops, _ := consoles(t, env)
	request := cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_REQUEST

	for _, c := range []struct {
		path      string
		delivered bool
		status    int32
		code      int32
		desc      string
		failed    bool
	}{
		{path: "/refuses", status: 200, code: 4, desc: "user has pending bets"},
		{path: "/down", status: 503, code: 3, failed: true},
	} {
		op, _ := env.Operator(t, domain.OperatorSettings{WebhookURL: new(endpoint.URL + c.path)})
		m, err := ops.SendTestEvent(ctx, &cofferv1.SendTestEventRequest{OperatorId: op.ID, Event: request})
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if m.Delivered != c.delivered || m.Status != c.status || m.Code != c.code || m.Description != c.desc || (m.Failure != "") != c.failed {
			t.Errorf("%s: %v", c.path, m)
		}
	}

	op, _ := env.Operator(t, domain.OperatorSettings{WebhookURL: new(endpoint.URL + "/refuses")})
	before := posts.Load()
	for _, c := range []struct {
		name  string
		req   *cofferv1.SendTestEventRequest
		code  connect.Code
		field string
	}{
		{"no event", &cofferv1.SendTestEventRequest{OperatorId: op.ID}, connect.CodeInvalidArgument, "event"},
		{"unknown operator", &cofferv1.SendTestEventRequest{OperatorId: "0b8f3c9e-5d1a-4c1e-9a53-0e6c1d2b7f40", Event: request}, connect.CodeNotFound, ""},
		{"exponent amount", &cofferv1.SendTestEventRequest{OperatorId: op.ID, Event: request, Amount: new("1e3")}, connect.CodeInvalidArgument, "amount"},
		{"zero address", &cofferv1.SendTestEventRequest{OperatorId: op.ID, Event: request,
			Address: new("0x0000000000000000000000000000000000000000")}, connect.CodeInvalidArgument, "address"},
		{"unknown currency", &cofferv1.SendTestEventRequest{OperatorId: op.ID, Event: request, Currency: new("DOGE")}, connect.CodeInvalidArgument, "currency"},
	} {
		_, err := ops.SendTestEvent(ctx, c.req)
		if connect.CodeOf(err) != c.code || !strings.Contains(fmt.Sprint(err), c.field) {
			t.Errorf("%s: %v, want %s naming %q", c.name, err, c.code, c.field)
		}
	}
	if n := posts.Load() - before; n != 0 {
		t.Errorf("refused requests posted %d webhooks", n)
	}
}
