package session

// This file is the session table, the one source of truth for a session's status. The status
// is not stored (domain.Session.StatusAt derives it from cancelled_at and expires_at), but
// every change of it — the user's cancel, the TTL running out — is a row here.

import (
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine"
)

// Event is what moves a session. Opening one (OPEN) is not a transition.
type Event string

// Events.
const (
	// Cancel: the user cancelled the session in the widget.
	Cancel Event = "user:cancel"
	// Expire: the session's TTL ran out.
	Expire Event = "time:expire"
)

// Events lists every event (a new slice each call).
func Events() []Event { return []Event{Cancel, Expire} }

// table is the transition table, by status. CANCELLED and EXPIRED are both final; a cancel
// of a session that is no longer open changes nothing and answers its status (cancelling twice
// is harmless, an expired session stays expired). A cancel wins over a later expiry (StatusAt
// checks it first).
func table() statemachine.Table[domain.SessionStatus, Event, domain.SessionStatus] {
	return statemachine.New(Events(), statemachine.Rows[domain.SessionStatus, Event, domain.SessionStatus]{
		domain.SessionOpen:      {Cancel: domain.SessionCancelled, Expire: domain.SessionExpired},
		domain.SessionCancelled: {Cancel: domain.SessionCancelled},
		domain.SessionExpired:   {Cancel: domain.SessionExpired},
	}, func(from domain.SessionStatus, _ Event) error {
		return fault.New(fault.FailedPrecondition, "the session is already %s", from)
	})
}

// Next applies the table: the status after event (the same status: nothing changes), or
// FAILED_PRECONDITION.
func Next(from domain.SessionStatus, event Event) (domain.SessionStatus, error) {
	return table().Next(from, event)
}
