package webhook

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"
)

// Option adjusts ConstructEvent and Handler.
type Option func(*options)

type options struct {
	tolerance time.Duration
	now       func() time.Time
	maxBody   int64
	errorLog  func(ctx context.Context, e Event, err error)
}

func newOptions(opts []Option) options {
	o := options{tolerance: Tolerance, now: time.Now, maxBody: MaxBodySize}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithTolerance sets how far the webhook-timestamp may be from the receiver's clock
// (default Tolerance, 5 minutes). Keep it short: it bounds how long a captured webhook can be
// replayed.
func WithTolerance(d time.Duration) Option { return func(o *options) { o.tolerance = d } }

// WithClock sets the receiver's clock (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithMaxBody sets the largest body Handler reads (default MaxBodySize).
func WithMaxBody(n int64) Option { return func(o *options) { o.maxBody = n } }

// MaxBodySize is the largest webhook body Handler reads by default; Coffer's bodies are
// under 4 KiB.
const MaxBodySize = 64 << 10

// ConstructEvent verifies a webhook's signature headers against its raw body and the operator
// key ([]byte("sk_...")), then parses the body into its typed event (*cofferv1.DepositEvent,
// *cofferv1.WithdrawRequestEvent or *cofferv1.WithdrawCompleteEvent). Nothing is parsed from a
// body whose signature does not verify. Errors wrap ErrMissingHeader, ErrTimestamp,
// ErrSignature or ErrUnknownEvent.
func ConstructEvent(body []byte, header http.Header, key []byte, opts ...Option) (proto.Message, error) {
	o := newOptions(opts)
	if err := verify(header, body, key, o.now(), o.tolerance); err != nil {
		return nil, err
	}
	msg, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("webhook: verified body does not parse: %w", err)
	}
	return msg, nil
}
