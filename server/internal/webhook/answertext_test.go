package webhook

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// What was seen: a receiver's description that PostgreSQL's text cannot hold (a \u0000 escape,
// or 500 bytes cut inside a multi-byte character) made the attempt's record fail, and with it
// the records of every attempt batched in the same statement (acknowledged ones too); the drain
// ended with that error, River retried it with its own growing backoff, and the events were
// posted again and again, the poisoned ones never dead-lettered, the operator's later events
// waiting behind them. Each such answer is now one failed attempt like any other: after five
// the event is dead, and an event acknowledged beside them is posted once.
func TestReceiverTextIsRecordedAsAFailedAttempt(t *testing.T) {
	t.Parallel()
	answers := map[string]struct {
		status int
		body   string
	}{
		"1": {200, `{"error":1,"description":"held\u0000for review"}`},
		"2": {500, `{"error":3,"description":"` + strings.Repeat("a", 499) + `é"}`},
		"3": {200, `{"error":"\u0000"}`},
		"4": {200, `{"error":7,"transactionId":"tx\u0000"}`},
	}
	var rc *receiver
	rc = newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		form, _ := url.ParseQuery(rc.got()[n].body)
		a, poisoned := answers[form.Get("depositId")]
		if !poisoned {
			reply(w, 200, `{"error":0}`)
			return
		}
		reply(w, a.status, a.body)
	})
	e := newEnv(t, rc.URL)
	e.startRiver(fastSchedule)
	ids := map[string]string{}
	for subject := range answers {
		n, _ := strconv.ParseInt(subject, 10, 64)
		ids[subject] = e.enqueue(depositEvent(n), subject)
	}
	healthy := e.enqueue(depositEvent(9), "9")
	e.waitState(healthy, domain.DeliveryDelivered)
	for subject, id := range ids {
		ev := e.waitState(id, domain.DeliveryDead)
		attempts := e.attempts(id)
		if ev.Attempts != MaxAttempts || len(attempts) != MaxAttempts {
			t.Errorf("event %s: %d attempts, %d recorded; want %d", subject, ev.Attempts, len(attempts), MaxAttempts)
		}
		for _, a := range attempts {
			if a.Acked || a.Error == "" || !utf8.ValidString(a.Error) || strings.ContainsRune(a.Error, 0) {
				t.Errorf("event %s attempt %d: acked %v, error %q", subject, a.Attempt, a.Acked, a.Error)
			}
		}
	}
	e.waitDrainEnded(e.opID)
	posted := 0
	for _, r := range rc.got() {
		if form, _ := url.ParseQuery(r.body); form.Get("depositId") == "9" {
			posted++
		}
	}
	if posted != 1 {
		t.Errorf("the acknowledged event was posted %d times, want once", posted)
	}
}
