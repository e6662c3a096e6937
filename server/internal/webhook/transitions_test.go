package webhook

import (
	"errors"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine/statemachinetest"
)

// TestDeliveryTable decides every (state, event) pair: a state or an event added without a
// decision for each pair fails here.
func TestDeliveryTable(t *testing.T) {
	t.Parallel()
	const (
		P, Dl, Dd, F = domain.DeliveryPending, domain.DeliveryDelivered, domain.DeliveryDead, domain.DeliveryFailed
		x            = "refused"
	)
	statemachinetest.Check(t, table(), statemachinetest.Decided[domain.DeliveryState, DeliveryEvent, domain.DeliveryState]{
		States: domain.DeliveryStates(),
		Events: []DeliveryEvent{Acked, Retry, Exhausted, Redeliver},
		Want: map[domain.DeliveryState][]domain.DeliveryState{
			//   Acked Retry Exhausted Redeliver
			P:  {Dl, P, Dd, x},
			Dl: {x, x, x, x},
			Dd: {x, x, x, P}, // a dead letter is attempted again only once an admin redelivers it
			F:  {x, x, x, x}, // a synchronous send is never retried
		},
		Refused: x,
		Refusal: func(e DeliveryEvent, err error) (bool, string) {
			if e == Redeliver {
				return fault.Is(err, fault.FailedPrecondition), "FAILED_PRECONDITION (an admin asked)"
			}
			return errors.Is(err, errRefused), "an internal refusal (only the service makes attempts)"
		},
	})
}

// TestAttemptEvent: an acknowledged attempt delivers, even the last; a failed one retries
// until the last.
func TestAttemptEvent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		acked, final bool
		want         DeliveryEvent
	}{{true, false, Acked}, {true, true, Acked}, {false, false, Retry}, {false, true, Exhausted}} {
		if got := attemptEvent(c.acked, c.final); got != c.want {
			t.Errorf("acked=%v final=%v: %s; want %s", c.acked, c.final, got, c.want)
		}
	}
}
