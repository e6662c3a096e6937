package domain

import "time"

// EventType is the kind of a webhook event (webhook_events.event_type).
type EventType string

// The spec's three events.
const (
	EventDeposit          EventType = "DEPOSIT"
	EventWithdrawRequest  EventType = "WITHDRAW_REQUEST"
	EventWithdrawComplete EventType = "WITHDRAW_COMPLETE"
)

// EventTypes lists every event type.
func EventTypes() []EventType {
	return []EventType{EventDeposit, EventWithdrawRequest, EventWithdrawComplete}
}

// DeliveryState is where a webhook event's delivery is (webhook_events.state). The webhook
// package's transition table (webhook/transitions.go) says which changes are allowed.
type DeliveryState string

// The delivery states.
const (
	// DeliveryPending: queued or being retried.
	DeliveryPending DeliveryState = "pending"
	// DeliveryDelivered: the receiver acknowledged it.
	DeliveryDelivered DeliveryState = "delivered"
	// DeliveryDead: every attempt failed; it waits in the dead letters for a redelivery.
	DeliveryDead DeliveryState = "dead"
	// DeliveryFailed: a synchronous send (mode A's WITHDRAW_REQUEST, a test webhook) that was
	// not acknowledged; it is never retried.
	DeliveryFailed DeliveryState = "failed"
)

// DeliveryStates lists every delivery state. It is a new slice each call: a caller may not change the set.
func DeliveryStates() []DeliveryState {
	return []DeliveryState{DeliveryPending, DeliveryDelivered, DeliveryDead, DeliveryFailed}
}

// WebhookEvent is one event for an operator's webhook, with the state of its delivery.
type WebhookEvent struct {
	ID            string
	OperatorID    string
	EventType     EventType
	SubjectID     string // deposit id, withdrawal id (session id for a test event)
	Test          bool
	Sync          bool
	Body          string
	State         DeliveryState
	Attempts      int32
	LastStatus    int32 // 0 without a response
	LastError     string
	LastURL       string
	CreatedAt     time.Time
	LastAttemptAt *time.Time
	DeliveredAt   *time.Time
	DeadAt        *time.Time
	// Txid is the inserting transaction's id: with ID, the event's place in the feed.
	Txid uint64
}

// WebhookAttempt is one try at delivering an event.
type WebhookAttempt struct {
	EventID     string
	Attempt     int32
	URL         string
	Status      int32 // 0 without a response
	Acked       bool
	ErrorCode   *int32 // the receiver's "error" value, when it sent one
	Error       string
	Duration    time.Duration
	AttemptedAt time.Time
}
