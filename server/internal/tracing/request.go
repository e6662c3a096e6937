// Package tracing follows one request through Coffer: its request id (taken from a sane
// X-Request-ID or made up, returned in the response and put on every log line the request
// writes), one access log line per request, and OpenTelemetry traces exported over OTLP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set.
package tracing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// Header carries the request id both ways.
const Header = "X-Request-ID"

// MaxIDLength bounds an accepted incoming request id.
const MaxIDLength = 128

// Request is what is known of the request being served, filled in as it goes (the transports
// record the authenticated operator and the result code) and written by the access log.
type Request struct {
	ID string

	mu         sync.Mutex
	operatorID string
	code       string
}

type requestKey struct{}

// With records r as the request ctx serves.
func With(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// From is the request ctx serves; nil outside one (jobs, start-up).
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// ID is the request id of ctx's request, "" outside one.
func ID(ctx context.Context) string {
	if r := From(ctx); r != nil {
		return r.ID
	}
	return ""
}

// SetOperator records the operator the request authenticated as (or acts for).
func SetOperator(ctx context.Context, operatorID string) {
	if r := From(ctx); r != nil && operatorID != "" {
		r.mu.Lock()
		r.operatorID = operatorID
		r.mu.Unlock()
	}
}

// SetCode records the request's result code (the metrics' code label: "ok",
// "invalid_argument", ...), which the HTTP status alone does not tell for gRPC.
func SetCode(ctx context.Context, code string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		r.code = code
		r.mu.Unlock()
	}
}

func (r *Request) snapshot() (operatorID, code string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.operatorID, r.code
}

// saneID accepts an incoming request id of 1 to MaxIDLength characters from
// [A-Za-z0-9._:-]: anything else (spaces, quotes, control characters, very long values) could
// forge or flood log lines, so a new id replaces it.
func saneID(id string) bool {
	if id == "" || len(id) > MaxIDLength {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// newID is 16 random bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
