package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"
)

// Event is one verified webhook, as Handler hands it to the operator's function.
type Event struct {
	// ID is the webhook-id header: the same on every attempt of one event, so a receiver can
	// deduplicate on it (DEPOSIT also carries its idempotencyKey).
	ID string
	// Name is the event: Deposit, WithdrawRequest or WithdrawComplete.
	Name string
	// Test is true for test events: acknowledge them and skip every real side effect.
	Test bool
	// Message is *cofferv1.DepositEvent, *cofferv1.WithdrawRequestEvent or
	// *cofferv1.WithdrawCompleteEvent.
	Message proto.Message
}

// HandlerFunc handles one verified event and returns the reply Coffer gets. An error answers
// 500 with the fixed description InternalErrorDescription (Coffer records answers, so the
// error's own text stays with the operator: see WithErrorLog): Coffer retries DEPOSIT,
// WITHDRAW_COMPLETE and an external-approval WITHDRAW_REQUEST; a synchronous
// WITHDRAW_REQUEST counts it as code 3 (temporarily unavailable).
type HandlerFunc func(ctx context.Context, e Event) (Reply, error)

// InternalErrorDescription is the description Handler answers when the HandlerFunc fails.
const InternalErrorDescription = "internal error"

// WithErrorLog has Handler pass each error its HandlerFunc returns to log, with the event, for
// the operator's own logs: the answer Coffer gets (and records) carries only
// InternalErrorDescription.
func WithErrorLog(log func(ctx context.Context, e Event, err error)) Option {
	return func(o *options) { o.errorLog = log }
}

// Handler returns an http.Handler for the operator's webhook URL: it reads the raw body (up to
// MaxBodySize), verifies the signature with the operator key ([]byte("sk_...")) before
// anything else, parses the event, calls fn and answers its Reply as JSON. What it refuses
// it answers with a non-zero error, so Coffer never takes it for an acknowledgement: 405 for a
// method other than POST, 413 for an oversize body, 401 for a bad signature or timestamp, 400
// for a body that does not parse, 500 when fn fails.
func Handler(key []byte, fn HandlerFunc, opts ...Option) http.Handler {
	o := newOptions(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			refuse(w, http.StatusMethodNotAllowed, "webhooks are POSTed")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, o.maxBody))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				refuse(w, http.StatusRequestEntityTooLarge, "body too large")
				return
			}
			refuse(w, http.StatusBadRequest, "cannot read the body")
			return
		}
		msg, err := ConstructEvent(body, r.Header, key, opts...)
		switch {
		case errors.Is(err, ErrMissingHeader), errors.Is(err, ErrTimestamp), errors.Is(err, ErrSignature):
			refuse(w, http.StatusUnauthorized, err.Error())
			return
		case err != nil:
			refuse(w, http.StatusBadRequest, err.Error())
			return
		}
		e := Event{ID: r.Header.Get(HeaderID), Name: EventName(msg), Test: IsTest(msg), Message: msg}
		reply, err := fn(r.Context(), e)
		if err != nil {
			if o.errorLog != nil {
				o.errorLog(r.Context(), e, err)
			}
			refuse(w, http.StatusInternalServerError, InternalErrorDescription)
			return
		}
		reply.Write(w)
	})
}

// refuse answers a non-2xx status with a JSON body whose error is non-zero.
func refuse(w http.ResponseWriter, status int, description string) {
	b, _ := json.Marshal(Reply{Error: ReplyTemporarilyUnavailable, Description: description}) //nolint:errchkjson // a number and a string
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
