package main

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// TestOpsTestWebhook: `coffer ops test-webhook` is the service team's onboarding test (the
// spec's "by the service team during onboarding"): each event reaches the operator's endpoint
// signed with its key and marked test=true, and the answer is printed, as
// OpsService.SendTestEvent gives it with --json. Bad input is a usage error (exit 2), an
// unknown operator "not found" (exit 1); neither sends anything.
func TestOpsTestWebhook(t *testing.T) {
	dev := cliChain(t)
	usdt, _ := dev.Token("USDT")
	useDevChain(t, dev, map[string]any{"tokens": []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Address.Hex(), "decimals": 6}}})
	t.Setenv("COFFER_WEBHOOK_ALLOW", "loopback")
	t.Setenv("COFFER_STATIC_PRICES", "USDT=1")
	r := hooktest.New(t)
	out, errOut, code := coffer(t, "operator", "create", "--name", "Onboarding", "--webhook-url", r.URL(), "--json")
	var op map[string]any
	decodeJSON(t, out, &op)
	id, _ := op["id"].(string)
	key, _ := op["operatorKey"].(string)
	if code != 0 || id == "" || key == "" {
		t.Fatalf("create: %s %s", out, errOut)
	}
	r.SetKey(key)

	out, errOut, code = coffer(t, "ops", "test-webhook", "--operator", id, "--event", "WITHDRAW_REQUEST", "--amount", "12.5")
	if code != 0 || !strings.Contains(out, "test WITHDRAW_REQUEST") || !strings.Contains(out, "delivered: HTTP 200, error 0") {
		t.Fatalf("test WITHDRAW_REQUEST: %d %s %s", code, out, errOut)
	}
	out, errOut, code = coffer(t, "ops", "test-webhook", "--operator", strings.ToUpper(id), "--event", "deposit", "--json")
	res := &cofferv1.SendTestEventResponse{}
	if err := protojson.Unmarshal([]byte(out), res); code != 0 || err != nil || !res.Delivered || res.Event != "DEPOSIT" || res.Code != 0 {
		t.Fatalf("test DEPOSIT --json: %d %v %s %s", code, err, out, errOut)
	}
	hooks := r.All()
	if len(hooks) != 2 || hooks[0].Form.Get("event") != "WITHDRAW_REQUEST" || hooks[0].Form.Get("fiatAmount") != "12.50" ||
		hooks[1].Form.Get("event") != "DEPOSIT" || hooks[1].ID != res.EventId {
		t.Fatalf("delivered: %v", hooks)
	}
	for _, h := range hooks {
		if h.Form.Get("test") != "true" {
			t.Errorf("%s without test=true", h.Form.Get("event"))
		}
	}

	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--event", "DEPOSIT"}, 2, "operatorId"},
		{[]string{"--operator", id}, 2, "event"},
		{[]string{"--operator", id, "--event", "REFUND"}, 2, "event"},
		{[]string{"--operator", "acme", "--event", "DEPOSIT"}, 2, "operatorId"},
		{[]string{"--operator", id, "--event", "DEPOSIT", "--amount", "1e3"}, 2, "amount"},
		{[]string{"--operator", id, "--event", "WITHDRAW_COMPLETE", "--address", "0x0000000000000000000000000000000000000000"}, 1, "address"},
		{[]string{"--operator", uuid.NewString(), "--event", "DEPOSIT"}, 1, "not found"},
	} {
		if _, errOut, code := coffer(t, append([]string{"ops", "test-webhook"}, c.args...)...); code != c.code || !strings.Contains(errOut, c.err) {
			t.Errorf("%v: exit %d, want %d naming %q: %s", c.args, code, c.code, c.err, errOut)
		}
	}
	if n := len(r.Attempts()); n != 2 {
		t.Errorf("bad input sent webhooks: %d attempts, want 2", n)
	}
}
