package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// The Standard Webhooks reference vector (libraries/go/webhook_test.go, TestWebhookSign in
// github.com/standard-webhooks/standard-webhooks): its secret is whsec_ + base64 of the key.
func TestSignStandardWebhooksVector(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	id, ts, body := "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got := webhook.Sign([][]byte{key}, id, ts, body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	h := webhook.Headers([][]byte{key}, id, ts, body)
	if err := webhook.Verify(h, body, key, ts.Add(time.Minute)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func TestVerify(t *testing.T) {
	newKey, oldKey := []byte("sk_new"), []byte("sk_old")
	id, body := "5b1f4c1e-8f43-4c55-9a57-0c4f3c1f0a11", []byte("event=DEPOSIT&depositId=1")
	ts := time.Unix(1795000000, 0)
	signed := webhook.Headers([][]byte{newKey, oldKey}, id, ts, body)
	if n := len(strings.Fields(signed.Get(webhook.HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures during a rotation", n)
	}
	with := func(name, value string) http.Header {
		h := signed.Clone()
		if value == "" {
			h.Del(name)
		} else {
			h.Set(name, value)
		}
		return h
	}
	bad := "v1," + base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		key    []byte
		now    time.Time
		want   error
	}{
		{"new key", signed, body, newKey, ts, nil},
		{"old key during rotation", signed, body, oldKey, ts, nil},
		{"4m59s old", signed, body, newKey, ts.Add(Tol - time.Second), nil},
		{"exactly 5 minutes old", signed, body, newKey, ts.Add(Tol), nil},
		{"5m01s old", signed, body, newKey, ts.Add(Tol + time.Second), webhook.ErrTimestamp},
		{"an hour old", signed, body, newKey, ts.Add(time.Hour), webhook.ErrTimestamp},
		{"clock skew: 4 minutes ahead", signed, body, newKey, ts.Add(-4 * time.Minute), nil},
		{"6 minutes in the future", signed, body, newKey, ts.Add(-6 * time.Minute), webhook.ErrTimestamp},
		{"other key", signed, body, []byte("sk_other"), ts, webhook.ErrSignature},
		{"empty key", signed, body, nil, ts, webhook.ErrSignature},
		{"tampered body", signed, append([]byte(nil), "event=DEPOSIT&depositId=2"...), newKey, ts, webhook.ErrSignature},
		{"other id", with(webhook.HeaderID, "other"), body, newKey, ts, webhook.ErrSignature},
		{"timestamp moved", with(webhook.HeaderTimestamp, "1795000001"), body, newKey, ts, webhook.ErrSignature},
		{"timestamp with sign", with(webhook.HeaderTimestamp, "+1795000000"), body, newKey, ts, webhook.ErrTimestamp},
		{"timestamp not a number", with(webhook.HeaderTimestamp, "yesterday"), body, newKey, ts, webhook.ErrTimestamp},
		{"no id", with(webhook.HeaderID, ""), body, newKey, ts, webhook.ErrMissingHeader},
		{"no timestamp", with(webhook.HeaderTimestamp, ""), body, newKey, ts, webhook.ErrMissingHeader},
		{"no signature", with(webhook.HeaderSignature, ""), body, newKey, ts, webhook.ErrMissingHeader},
		{"matching signature among others", with(webhook.HeaderSignature, bad+" v2,xyz garbage "+signed.Get(webhook.HeaderSignature)), body, oldKey, ts, nil},
		{"valid bytes under another version", with(webhook.HeaderSignature, strings.ReplaceAll(signed.Get(webhook.HeaderSignature), "v1,", "v2,")), body, newKey, ts, webhook.ErrSignature},
		{"only a wrong signature", with(webhook.HeaderSignature, bad), body, newKey, ts, webhook.ErrSignature},
		{"bad base64", with(webhook.HeaderSignature, "v1,!!!"), body, newKey, ts, webhook.ErrSignature},
	}
	for _, tt := range tests {
		err := webhook.Verify(tt.header, tt.body, tt.key, tt.now)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: Verify = %v, want %v", tt.name, err, tt.want)
		}
	}
}

const Tol = webhook.Tolerance
