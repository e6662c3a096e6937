package webhook_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// TestStandardWebhooksLibrary: Coffer's webhooks verify with the stock Standard Webhooks Go
// library in raw-key mode (NewWebhookRaw with the operator key's bytes), and what that library
// signs verifies with this SDK. NewWebhook, which expects a base64 "whsec_" secret, refuses an
// operator key: the README says to use the raw-key mode.
func TestStandardWebhooksLibrary(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "webhooks", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var f fixture
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		if f.Expect.Error == "timestamp" {
			continue // the stock library's tolerance is fixed to the real clock
		}
		h := http.Header{}
		for k, v := range f.Headers {
			h.Set(k, v)
		}
		wh, err := standardwebhooks.NewWebhookRaw([]byte(f.Key))
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.VerifyIgnoringTimestamp([]byte(f.Body), h); (err == nil) != f.Expect.Valid {
			t.Errorf("%s: stock library says %v, want valid=%v", filepath.Base(file), err, f.Expect.Valid)
		}
	}

	// Fresh, with the timestamp checked, both ways.
	key := []byte("sk_19ced2128f6a57e281dac410bf583a0a059bdbcdf72601ed79220743a159df4e")
	body := []byte(depositBody)
	now := time.Now()
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, webhook.Headers([][]byte{key}, "evt_interop", now, body)); err != nil {
		t.Fatalf("stock library refuses a Coffer signature: %v", err)
	}
	sig, err := wh.Sign("evt_interop", now, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, "evt_interop")
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	if _, err := webhook.ConstructEvent(body, h, key); err != nil {
		t.Fatalf("the SDK refuses the stock library's signature: %v", err)
	}
	if _, err := standardwebhooks.NewWebhook(string(key)); err == nil {
		t.Fatal("NewWebhook accepted an sk_ key; the README's raw-key advice would be moot")
	}
}
