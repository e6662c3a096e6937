package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// SessionKind is what a session is for (sessions.kind).
type SessionKind string

// The two kinds.
const (
	SessionDeposit  SessionKind = "DEPOSIT"
	SessionWithdraw SessionKind = "WITHDRAW"
)

// SessionKinds lists every session kind.
func SessionKinds() []SessionKind {
	return []SessionKind{SessionDeposit, SessionWithdraw}
}

// SessionStatus is a session's status. It is not stored: it follows from cancelled_at and
// expires_at (Session.StatusAt); the session package's transition table
// (session/transitions.go) says which changes are allowed.
type SessionStatus string

// The session statuses.
const (
	SessionOpen      SessionStatus = "OPEN"
	SessionCancelled SessionStatus = "CANCELLED"
	SessionExpired   SessionStatus = "EXPIRED"
)

// SessionStatuses lists every session status. It is a new slice each call: a caller may not change the set.
func SessionStatuses() []SessionStatus {
	return []SessionStatus{SessionOpen, SessionCancelled, SessionExpired}
}

// Session is one deposit or withdraw session an operator opened for its user.
type Session struct {
	ID                string
	OperatorID        string
	Kind              SessionKind
	SessionRef        string
	ExternalUserID    string
	Lang              string
	FiatCurrency      string
	UserBalance       decimal.Decimal
	Amount            decimal.Decimal
	Email             string
	OperatorReference string
	CreatedAt         time.Time
	ExpiresAt         time.Time
	CancelledAt       *time.Time
}

// StatusAt is the session's status at a moment: a cancel is final; otherwise the session is
// open until it expires.
func (s Session) StatusAt(now time.Time) SessionStatus {
	switch {
	case s.CancelledAt != nil:
		return SessionCancelled
	case !now.Before(s.ExpiresAt):
		return SessionExpired
	default:
		return SessionOpen
	}
}
