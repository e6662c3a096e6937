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
		Events: []DeliveryEvent{Acked, Retry, Exhausted, Redeliver, Resend},
		Want: map[domain.DeliveryState][]domain.DeliveryState{
			//   Acked Retry Exhausted Redeliver Resend
			P:  {Dl, P, Dd, x, x}, // a pending event already has its delivery queued
			Dl: {x, x, x, x, P},   // the operator may ask for a delivered event again
			Dd: {x, x, x, P, P},   // a dead letter is attempted again only once redelivered
			F:  {x, x, x, x, x},   // a synchronous send is never retried
		},
		Refused: x,
		Refusal: func(e DeliveryEvent, err error) (bool, string) {
			if e == Redeliver || e == Resend {
				return fault.Is(err, fault.FailedPrecondition), "FAILED_PRECONDITION (an admin or the operator asked)"
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
