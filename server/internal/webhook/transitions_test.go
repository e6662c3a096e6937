package webhook

import (
	"errors"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestDeliveryTable decides every (state, event) pair: a state or an event added without a
// decision for each pair fails here.
func TestDeliveryTable(t *testing.T) {
	const (
		P, Dl, Dd, F = domain.DeliveryPending, domain.DeliveryDelivered, domain.DeliveryDead, domain.DeliveryFailed
		x            = "refused"
	)
	events := []DeliveryEvent{Acked, Retry, Exhausted, Redeliver}
	want := map[domain.DeliveryState][]domain.DeliveryState{
		//   Acked Retry Exhausted Redeliver
		P:  {Dl, P, Dd, x},
		Dl: {x, x, x, x},
		Dd: {x, x, x, P}, // a dead letter is attempted again only once an admin redelivers it
		F:  {x, x, x, x}, // a synchronous send is never retried
	}
	if len(events) != len(DeliveryEvents()) || len(want) != len(domain.DeliveryStates()) {
		t.Fatalf("decided %v × %d states; the package has %v × %v", events, len(want), DeliveryEvents(), domain.DeliveryStates())
	}
	for _, from := range domain.DeliveryStates() {
		row := want[from]
		if len(row) != len(events) {
			t.Errorf("%s: not every event decided", from)
			continue
		}
		for i, e := range events {
			to, err := Next(from, e)
			switch {
			case row[i] != x && (err != nil || to != row[i]):
				t.Errorf("%s + %s: %s, %v; want %s", from, e, to, err, row[i])
			case row[i] == x && e == Redeliver && !fault.Is(err, fault.FailedPrecondition):
				t.Errorf("%s + %s: %s, %v; want FAILED_PRECONDITION (an admin asked)", from, e, to, err)
			case row[i] == x && e != Redeliver && !errors.Is(err, errRefused):
				t.Errorf("%s + %s: %s, %v; want an internal refusal (only the service makes attempts)", from, e, to, err)
			}
		}
	}
	for k := range transitions() {
		if !slices.Contains(domain.DeliveryStates(), k.from) || !slices.Contains(events, k.event) {
			t.Errorf("the table has %s + %s, outside the decided states and events", k.from, k.event)
		}
	}
}

// TestAttemptEvent: an acknowledged attempt delivers, even the last; a failed one retries
// until the last.
func TestAttemptEvent(t *testing.T) {
	for _, c := range []struct {
		acked, final bool
		want         DeliveryEvent
	}{{true, false, Acked}, {true, true, Acked}, {false, false, Retry}, {false, true, Exhausted}} {
		if got := attemptEvent(c.acked, c.final); got != c.want {
			t.Errorf("acked=%v final=%v: %s; want %s", c.acked, c.final, got, c.want)
		}
	}
}
