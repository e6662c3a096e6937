package webhook

import (
	"encoding/json"
	"net/http"
)

// ReplyCode is the error field of a receiver's JSON answer. 0 acknowledges any event (and
// approves a WITHDRAW_REQUEST in synchronous mode); 1–9 deny a synchronous WITHDRAW_REQUEST
// with the spec's message shown to the user; any other non-zero code denies it with the
// answer's description as the message.
type ReplyCode int

// The WITHDRAW_REQUEST reply codes of the spec ("Withdrawal approval response codes").
const (
	ReplyOK                     ReplyCode = 0 // approve, or acknowledge any event
	ReplyDeclinedByOperator     ReplyCode = 1
	ReplyInsufficientBalance    ReplyCode = 2
	ReplyTemporarilyUnavailable ReplyCode = 3
	ReplyUserNotEligible        ReplyCode = 4
	ReplyDailyLimitExceeded     ReplyCode = 5
	ReplyAmountTooLow           ReplyCode = 6
	ReplyAmountTooHigh          ReplyCode = 7
	ReplyVerificationRequired   ReplyCode = 8
	ReplyAccountSuspended       ReplyCode = 9
)

// Message is the text the widget shows the user for a denial code (1–9), "" for 0 and for
// codes the spec does not list (those show the answer's description).
func (c ReplyCode) Message() string {
	switch c {
	case ReplyDeclinedByOperator:
		return "Withdrawal request declined by operator"
	case ReplyInsufficientBalance:
		return "Insufficient balance for withdrawal"
	case ReplyTemporarilyUnavailable:
		return "Withdrawal temporarily unavailable"
	case ReplyUserNotEligible:
		return "User is not eligible for withdrawal"
	case ReplyDailyLimitExceeded:
		return "Daily withdrawal limit exceeded"
	case ReplyAmountTooLow:
		return "Withdrawal amount too low"
	case ReplyAmountTooHigh:
		return "Withdrawal amount too high"
	case ReplyVerificationRequired:
		return "Account verification required"
	case ReplyAccountSuspended:
		return "Withdrawal suspended for this account"
	case ReplyOK:
	}
	return ""
}

// Reply is a receiver's JSON answer to a webhook: {"error":0,"description":"ok"}. Coffer
// counts a delivery as failed on a non-zero error, a non-2xx status or a body that is not JSON.
type Reply struct {
	Error       ReplyCode `json:"error"`
	Description string    `json:"description"`
	// TransactionID is the operator's own id for a DEPOSIT it credited (optional).
	TransactionID string `json:"transactionId,omitempty"`
}

// OK acknowledges an event (error 0) with a description.
func OK(description string) Reply { return Reply{Error: ReplyOK, Description: description} }

// Deny answers a synchronous WITHDRAW_REQUEST with a denial code; description is shown to the
// user only for codes outside 1–9.
func Deny(code ReplyCode, description string) Reply {
	return Reply{Error: code, Description: description}
}

// Write sends the reply as the JSON body of a 200 answer.
func (r Reply) Write(w http.ResponseWriter) {
	if r.Description == "" && r.Error == ReplyOK {
		r.Description = "ok"
	}
	b, err := json.Marshal(r)
	if err != nil { // a struct of a number and strings always marshals
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b) // the receiver cannot do more about a failed write than the server will
}
