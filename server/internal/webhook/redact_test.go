package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"https://op.example/hook", "https://op.example/hook"},
		{"https://op.example/hook?token=abc", "https://op.example/hook?token=xxxxx"},
		{"https://op.example/hook?token=abc&sig=d%2Fe&v=", "https://op.example/hook?token=xxxxx&sig=xxxxx&v=xxxxx"},
		{"https://op.example/hook?abc123", "https://op.example/hook?xxxxx"},
		{"https://op.example/hook?=abc", "https://op.example/hook?xxxxx"},
		{"https://user:pass@op.example/hook", "https://xxxxx@op.example/hook"},
		{"https://tokenonly@op.example/hook", "https://xxxxx@op.example/hook"},
		{"https://op.example/hook#key=abc", "https://op.example/hook#xxxxx"},
		{"/elsewhere?token=abc", "/elsewhere?token=xxxxx"},
		{"https://op.example/%zz", "(invalid URL)"},
		// Path segments shaped like a token go; words, short ids and versions stay.
		{"https://hooks.example/services/T0001/B0002/9xQvT3kLmN8pR2sW4yZ6aB1c", "https://hooks.example/services/T0001/B0002/xxxxx"},
		{"https://op.example/hook/3f0c2a9e-8d1b-4c7e-9a55-1f2e3d4c5b6a/coffer", "https://op.example/hook/xxxxx/coffer"},
		{"https://op.example/v1/webhooks/0123456789abcdef?x=1", "https://op.example/v1/webhooks/xxxxx?x=xxxxx"},
		{"https://op.example/api/v2/coffer-webhook-receiver", "https://op.example/api/v2/coffer-webhook-receiver"},
		{"https://op.example/operators/42/hook", "https://op.example/operators/42/hook"},
		{"https://op.example/" + strings.Repeat("k", 32), "https://op.example/xxxxx"},
		{"https://op.example/a%2Fb/9xQvT3kLmN8pR2sW", "https://op.example/a%2Fb/xxxxx"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// What was seen: an operator's webhookUrl https://op.example/hook?token=abc was recorded with
// its token in every attempt (and in the event's last URL, which the panel and the ops API
// show); only a user:password (which the configuration refuses anyway) was redacted. A redirect's Location, which the attempt's error
// quotes, kept its query too.
func TestRecordedURLsKeepNoSecret(t *testing.T) {
	t.Parallel()
	const secret = "s3cret-token"
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Location", "/moved?token="+secret)
			w.WriteHeader(http.StatusFound)
			return
		}
		ok(n, w, nil)
	})
	// A user:password is refused by the operator's configuration already; a query is not.
	hook := rc.URL + "/hook?token=" + secret + "&v=1#" + secret
	e := newEnv(t, hook)
	ctx := context.Background()
	for i, wantAcked := range []bool{false, true} {
		msg := depositEvent(int64(i + 1))
		msg.Test = true
		res, err := e.svc.Send(ctx, e.opID, Event{SubjectID: newID(), Message: msg}, DefaultTimeout)
		if err != nil || res.Acked != wantAcked {
			t.Fatalf("send %d: %+v, %v", i, res, err)
		}
	}
	got := rc.got()
	if len(got) != 2 {
		t.Fatalf("receiver got %d requests, want 2", len(got))
	}
	for i, r := range got {
		id := r.header.Get(sdk.HeaderID)
		ev := e.event(id)
		attempts := e.attempts(id)
		if len(attempts) != 1 {
			t.Fatalf("event %d: %d attempts recorded", i, len(attempts))
		}
		a := attempts[0]
		for what, text := range map[string]string{"attempt URL": a.URL, "attempt error": a.Error, "last URL": ev.LastURL, "last error": ev.LastError} {
			if strings.Contains(text, secret) {
				t.Errorf("event %d: %s %q keeps the secret", i, what, text)
			}
		}
		if want := rc.URL + "/hook?token=xxxxx&v=xxxxx#xxxxx"; a.URL != want || ev.LastURL != want {
			t.Errorf("event %d: attempt URL %q, last URL %q, want %q", i, a.URL, ev.LastURL, want)
		}
	}
}
