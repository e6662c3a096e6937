package webhook

// This file is the webhook delivery table, the one source of truth for an event's delivery
// state: every change (an attempt's outcome, a redelivery of a dead letter) asks Next first.

import (
	"errors"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine"
)

// DeliveryEvent is what moves a delivery.
type DeliveryEvent string

// Delivery events. Queuing an event (pending) and recording a synchronous send (delivered or failed,
// already finished) are creations, not transitions: failed is only ever created, and nothing
// moves it (a synchronous send is answered at once; it is never retried).
const (
	// Acked: an attempt was acknowledged by the receiver.
	Acked DeliveryEvent = "attempt:acked"
	// Retry: an attempt failed and attempts are left; River retries on its schedule.
	Retry DeliveryEvent = "attempt:failed"
	// Exhausted: the last attempt failed; the event waits in the dead letters.
	Exhausted DeliveryEvent = "attempt:failed-last"
	// Redeliver: an admin queues a dead letter again (five more attempts).
	Redeliver DeliveryEvent = "admin:redeliver"
	// Resend: the operator asks for a new delivery of a delivered or dead event, to its current
	// webhook URL (POST /events/:eventId/redeliver; five more attempts).
	Resend DeliveryEvent = "operator:redeliver"
)

// DeliveryEvents lists every delivery event.
func DeliveryEvents() []DeliveryEvent {
	return []DeliveryEvent{Acked, Retry, Exhausted, Redeliver, Resend}
}

// table is the transition table, by state. A pair that is not in it is refused.
func table() statemachine.Table[domain.DeliveryState, DeliveryEvent, domain.DeliveryState] {
	attempt := statemachine.RefuseWith[domain.DeliveryState, DeliveryEvent](errRefused, "event")
	return statemachine.New(DeliveryEvents(), statemachine.Rows[domain.DeliveryState, DeliveryEvent, domain.DeliveryState]{
		domain.DeliveryPending:   {Acked: domain.DeliveryDelivered, Retry: domain.DeliveryPending, Exhausted: domain.DeliveryDead},
		domain.DeliveryDelivered: {Resend: domain.DeliveryPending},
		domain.DeliveryDead:      {Redeliver: domain.DeliveryPending, Resend: domain.DeliveryPending},
	}, func(from domain.DeliveryState, event DeliveryEvent) error {
		switch event {
		case Redeliver:
			return fault.New(fault.FailedPrecondition, "the webhook is %s: only a dead-lettered webhook can be redelivered", from)
		case Resend:
			return fault.New(fault.FailedPrecondition, "the webhook is %s: only a delivered or dead-lettered webhook can be redelivered", from)
		case Acked, Retry, Exhausted:
		}
		return attempt(from, event)
	})
}

// errRefused marks an attempt's outcome the table refused (a bug: only the service makes
// attempts, and only of pending events).
var errRefused = errors.New("webhook: transition refused")

// Next applies the table: the state after event, FAILED_PRECONDITION for a redelivery of an
// event that is not dead, or an internal error for an attempt on one that is not pending.
func Next(from domain.DeliveryState, event DeliveryEvent) (domain.DeliveryState, error) {
	return table().Next(from, event)
}

// attemptEvent is the event of an attempt's result.
func attemptEvent(acked, final bool) DeliveryEvent {
	switch {
	case acked:
		return Acked
	case final:
		return Exhausted
	default:
		return Retry
	}
}
