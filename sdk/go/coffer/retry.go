package coffer

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"connectrpc.com/connect"
)

// RetryPolicy says how a client repeats a call that failed with UNAVAILABLE. Only calls that
// are safe to repeat are retried: those the API declares NO_SIDE_EFFECTS or IDEMPOTENT (reads,
// and writes keyed by the caller such as a decision). A call that may have had an effect is
// never repeated behind the caller's back.
type RetryPolicy struct {
	// Attempts is the most tries of one call, the first included (1: no retries).
	Attempts int
	// Backoff is the first wait; each further one doubles, up to MaxBackoff, with jitter. A
	// Retry-After from the server replaces it when longer.
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// DefaultRetryPolicy is 4 attempts, 200 ms doubling to 2 s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Attempts: 4, Backoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second}
}

// WithRetryPolicy replaces DefaultRetryPolicy; RetryPolicy{Attempts: 1} turns retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(cfg *config) { cfg.retry = p } }

// retrier repeats safe unary calls that failed with UNAVAILABLE.
type retrier struct{ policy RetryPolicy }

func (r retrier) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		if !safeToRepeat(req.Spec()) {
			return res, err
		}
		wait := r.policy.Backoff
		for attempt := 1; attempt < r.policy.Attempts && connect.CodeOf(err) == connect.CodeUnavailable; attempt++ {
			pause := max(wait/2+rand.N(wait/2+1), RetryAfter(err)) //nolint:gosec // jitter, not a secret
			timer := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, errors.Join(err, ctx.Err())
			case <-timer.C:
			}
			res, err = next(ctx, req)
			wait = min(2*wait, r.policy.MaxBackoff)
		}
		return res, err
	}
}

func (retrier) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (retrier) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func safeToRepeat(spec connect.Spec) bool {
	return spec.IdempotencyLevel == connect.IdempotencyNoSideEffects || spec.IdempotencyLevel == connect.IdempotencyIdempotent
}
