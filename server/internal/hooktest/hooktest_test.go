package hooktest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// post sends a webhook signed with key to the receiver's path and returns the status.
func post(t *testing.T, r *Receiver, path, key, id, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = webhook.Headers([][]byte{[]byte(key)}, id, time.Now(), []byte(body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// Webhooks signed with the key of their path are kept and acknowledged; while down the
// endpoint answers 503 and counts the attempt only.
func TestReceiver(t *testing.T) {
	t.Parallel()
	r := New(t)
	r.SetKey("sk_root")
	r.setKey("/op-b", "sk_b")
	const body = "event=WITHDRAW_COMPLETE&withdrawRequestId=w-1&status=COMPLETED"
	if got := post(t, r, "", "sk_root", "evt_1", body); got != http.StatusOK {
		t.Fatalf("root webhook: %d", got)
	}
	if got := post(t, r, "/op-b", "sk_b", "evt_2", body); got != http.StatusOK {
		t.Fatalf("path webhook: %d", got)
	}
	r.SetDown(true)
	if got := post(t, r, "", "sk_root", "evt_3", body); got != http.StatusServiceUnavailable {
		t.Fatalf("down: %d, want 503", got)
	}
	hooks := r.AwaitMatching(t, "WITHDRAW_COMPLETE", "withdrawRequestId", "w-1", 2, time.Second)
	if len(hooks) != 2 || hooks[0].ID != "evt_1" || hooks[1].ID != "evt_2" {
		t.Fatalf("kept %+v", hooks)
	}
	if w, ok := hooks[0].Parsed.(*cofferv1.WithdrawCompleteEvent); !ok || w.GetWithdrawRequestId() != "w-1" {
		t.Errorf("parsed %v", hooks[0].Parsed)
	}
	if got := r.AwaitAttempts(3, time.Second); strings.Join(got, ",") != "evt_1,evt_2,evt_3" {
		t.Errorf("attempts %v", got)
	}
	if n := len(r.Await(2, time.Second)); n != 2 {
		t.Errorf("%d webhooks kept, want 2", n)
	}
}
