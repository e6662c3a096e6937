package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

func withdrawRequest() *cofferv1.WithdrawRequestEvent {
	return &cofferv1.WithdrawRequestEvent{WithdrawRequestId: "5f0e2c9a-7d1b-4e3f-8a6c-9b2d4f1e3a5c", SessionRef: "sr_1",
		ExternalUserId: "user-1", Type: "DIRECT_TRANSFER", Address: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
		CryptoCurrencyCode: "USDT", FiatCurrencyCode: "USD", FiatAmount: "40.00", CryptoAmountSent: new("40.000000"),
		AmountInUsd: new("40.00"), RequestedAt: confirmed}
}

// A test webhook: one signed attempt now, recorded, never dead-lettered.
func TestSendTestWebhook(t *testing.T) {
	t.Parallel()
	e, rc := newReceivingEnv(t, ok)
	ctx := context.Background()
	sid := newID()
	msg := depositEvent(TestDepositID(sid))
	msg.Test = true
	res, err := e.svc.Send(ctx, e.opID, Event{SubjectID: sid, Message: msg}, DefaultTimeout)
	if err != nil || !res.Acked || res.Status != 200 || res.Description != "ok" {
		t.Fatalf("Send: %+v, %v", res, err)
	}
	got := rc.got()
	if len(got) != 1 || !strings.HasSuffix(got[0].body, "&test=true") || !strings.Contains(got[0].body, "depositId=-") {
		t.Fatalf("received %+v", got)
	}
	if err := sdk.Verify(got[0].header, []byte(got[0].body), []byte(e.key), time.Now()); err != nil {
		t.Fatal(err)
	}
	id := got[0].header.Get(sdk.HeaderID)
	ev := e.event(id)
	if !ev.Sync || !ev.Test || ev.State != domain.DeliveryDelivered || ev.Attempts != 1 || ev.SubjectID != sid || ev.Body != got[0].body {
		t.Fatalf("recorded event: %+v", ev)
	}
	if a := e.attempts(id); len(a) != 1 || !a[0].Acked || a[0].Status != 200 || a[0].ErrorCode == nil || *a[0].ErrorCode != 0 {
		t.Fatalf("recorded attempt: %+v", a)
	}
	if id := TestDepositID(sid); id != TestDepositID(sid) || id >= 0 || id < -(1<<53-1) ||
		id == TestDepositID(newID()) {
		t.Fatal("TestDepositID is not a stable negative safe integer per session")
	}
	if _, err := e.svc.Send(ctx, newID(), Event{Message: msg}, 0); !fault.Is(err, fault.NotFound) {
		t.Fatalf("unknown operator: %v", err)
	}
	if _, err := e.svc.Send(ctx, "acme", Event{Message: msg}, 0); !fault.Is(err, fault.NotFound) {
		t.Fatalf("malformed operator id: %v", err)
	}
}

// The synchronous WITHDRAW_REQUEST of mode A: an explicit refusal carries the operator's
// code; a timeout or a transport failure is a failed Result (code 3 for the caller), never an
// approval, and nothing is dead-lettered.
func TestSendSynchronousWithdrawRequest(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 0:
			reply(w, 200, `{"error":2,"description":"Insufficient balance for withdrawal"}`)
		case 1:
			<-release
		default:
			reply(w, 200, `{"error":0}`)
		}
	})
	defer close(release)
	e := newEnv(t, rc.URL)
	ctx := context.Background()

	res, err := e.svc.Send(ctx, e.opID, Event{SubjectID: "w1", Message: withdrawRequest()}, SyncWithdrawTimeout)
	if err != nil || res.Acked || res.Err != nil || res.ErrorCode != 2 || res.Description != "Insufficient balance for withdrawal" {
		t.Fatalf("refusal: %+v, %v", res, err)
	}
	start := time.Now()
	res, err = e.svc.Send(ctx, e.opID, Event{SubjectID: "w2", Message: withdrawRequest()}, 200*time.Millisecond)
	if err != nil || res.Acked || res.Err == nil || !strings.Contains(res.Err.Error(), "no answer within 200ms") {
		t.Fatalf("timeout: %+v, %v", res, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if _, err := e.ops.Update(ctx, e.opID, domain.OperatorSettings{WebhookURL: new(closedURL(t))}); err != nil {
		t.Fatal(err)
	}
	res, err = e.svc.Send(ctx, e.opID, Event{SubjectID: "w3", Message: withdrawRequest()}, SyncWithdrawTimeout)
	if err != nil || res.Acked || res.Err == nil {
		t.Fatalf("receiver down: %+v, %v", res, err)
	}
	var failed, delivered int
	e.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'failed'), count(*) FILTER (WHERE state = 'delivered')
		FROM webhook_events WHERE sync`).Scan(&failed, &delivered) //nolint:errcheck
	if failed != 3 || delivered != 0 {
		t.Fatalf("%d failed and %d delivered sync records", failed, delivered)
	}
	if dead, _, _ := e.svc.ListDead(ctx, domain.AllOperators(), "", 0, ""); len(dead) != 0 {
		t.Fatalf("a synchronous send was dead-lettered: %v", dead)
	}
}

// During a key rotation every webhook carries one signature per valid key, newest first, so
// a receiver holding either key verifies it.
func TestSignsWithEveryValidKey(t *testing.T) {
	t.Parallel()
	e, rc := newReceivingEnv(t, ok)
	ctx := context.Background()
	newKey, _, err := e.ops.RotateKey(ctx, e.opID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := e.svc.Send(ctx, e.opID, Event{SubjectID: "w", Message: withdrawRequest()}, 0); err != nil || !res.Acked {
		t.Fatalf("Send: %+v %v", res, err)
	}
	r := rc.got()[0]
	sigs := strings.Fields(r.header.Get(sdk.HeaderSignature))
	if len(sigs) != 2 {
		t.Fatalf("signatures: %v", sigs)
	}
	for _, key := range []string{e.key, newKey} {
		if err := sdk.Verify(r.header, []byte(r.body), []byte(key), time.Now()); err != nil {
			t.Errorf("key %s: %v", key[:7], err)
		}
	}
	only := r.header.Clone()
	only.Set(sdk.HeaderSignature, sigs[0])
	if err := sdk.Verify(only, []byte(r.body), []byte(newKey), time.Now()); err != nil {
		t.Errorf("the first signature is not the newest key's: %v", err)
	}
	// After the grace period only the new key signs.
	if _, _, err := e.ops.RotateKey(ctx, e.opID, 0); err != nil {
		t.Fatal(err)
	}
	keys, _ := e.ops.SigningKeys(ctx, e.opID)
	e.svc.Send(ctx, e.opID, Event{SubjectID: "w", Message: withdrawRequest()}, 0) //nolint:errcheck
	if r := rc.got()[1]; len(keys) != 1 || len(strings.Fields(r.header.Get(sdk.HeaderSignature))) != 1 {
		t.Fatalf("after revocation: %d keys, %q", len(keys), r.header.Get(sdk.HeaderSignature))
	}
}

// coffer dev's receiver verifies with the SDK, acknowledges, approves WITHDRAW_REQUEST and
// refuses bad signatures.
func TestDevReceiver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "http://127.0.0.1:1/")
	var logs bytes.Buffer
	keys := func(ctx context.Context) [][]byte {
		k, err := e.ops.SigningKeys(ctx, e.opID)
		if err != nil {
			t.Error(err)
		}
		return k
	}
	dev := httptest.NewServer(DevReceiver(keys, slog.New(slog.NewTextHandler(&logs, nil))))
	defer dev.Close()
	ctx := context.Background()
	if _, err := e.ops.Update(ctx, e.opID, domain.OperatorSettings{WebhookURL: new(dev.URL + "/dev/webhook")}); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Send(ctx, e.opID, Event{SubjectID: "w", Message: withdrawRequest()}, SyncWithdrawTimeout)
	if err != nil || !res.Acked || res.Description != "approved" {
		t.Fatalf("WITHDRAW_REQUEST: %+v %v", res, err)
	}
	res, err = e.svc.Send(ctx, e.opID, Event{SubjectID: "1", Message: depositEvent(1)}, 0)
	if err != nil || !res.Acked || res.Description != "received" {
		t.Fatalf("DEPOSIT: %+v %v", res, err)
	}
	if !strings.Contains(logs.String(), "fields.externalUserId=user-1") || strings.Contains(logs.String(), e.key) {
		t.Errorf("log: %s", logs.String())
	}

	post := func(h http.Header, body string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, dev.URL, strings.NewReader(body))
		maps.Copy(req.Header, h)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v) //nolint:errcheck
		return resp.StatusCode, v
	}
	body := "event=DEPOSIT&depositId=1"
	if status, v := post(sdk.Headers([][]byte{[]byte("sk_wrong")}, "x", time.Now(), []byte(body)), body); status != 401 || v["error"] != 1.0 {
		t.Errorf("bad signature: %d %v", status, v)
	}
	if status, _ := post(http.Header{}, body); status != 401 {
		t.Errorf("unsigned: %d", status)
	}
	bad := "event=REFUND"
	if status, v := post(sdk.Headers([][]byte{[]byte(e.key)}, "x", time.Now(), []byte(bad)), bad); status != 400 || v["error"] != 1.0 {
		t.Errorf("unknown event: %d %v", status, v)
	}
	if status, v := post(sdk.Headers([][]byte{[]byte(e.key)}, "x", time.Now().Add(-time.Hour), []byte(body)), body); status != 401 ||
		!strings.Contains(v["description"].(string), "timestamp") {
		t.Errorf("old timestamp: %d %v", status, v)
	}
}
