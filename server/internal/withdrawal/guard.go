package withdrawal

import (
	"context"
	"math"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// A withdraw session pays out once. These are the checks a submission passes before anything
// is sent to the operator or recorded (DESIGN.md, "One withdraw session, one payout").
const (
	// SubmitLimit submissions per SubmitWindow per session pass the checks; the rest are
	// RATE_LIMITED. Each one that passes may send a WITHDRAW_REQUEST, so this bounds what a
	// widget (or anyone holding the sid) can make the operator answer.
	SubmitLimit  = 5
	SubmitWindow = time.Minute
	// submitLeaseMargin is how much longer than the synchronous request a submission holds the
	// session's lease: long enough to record its answer.
	submitLeaseMargin = 5 * time.Second
)

// paidOnce refuses a submission on a session one of whose withdrawals an admin or a decision
// already acted on (PROCESSING, its payout queued, COMPLETED): that one is the session's
// payout, and superseding applies only to withdrawals nobody acted on yet.
func paidOnce(ws []store.SessionWithdrawal) error {
	for _, w := range ws {
		var state string
		switch status := w.Status; {
		case status == domain.WithdrawalCompleted:
			state = "completed"
		case w.Paying && !status.Final():
			state = "being paid out"
		case status == domain.WithdrawalProcessing:
			state = "being processed"
		default:
			continue
		}
		e := fault.New(fault.Conflict, "this session's withdrawal is already %s and cannot be replaced: a withdraw session "+
			"pays out once", state)
		e.Details = map[string]any{"withdrawRequestId": w.ID, "withdrawStatus": w.Status}
		return e
	}
	return nil
}

// admit checks a submission that is about to reach the operator: not on a session already
// paid (CONFLICT). create checks it again under the session's lock.
func (s *Service) admit(ctx context.Context, sessionID string) error {
	ws, err := store.New(s.pool).SessionWithdrawals(ctx, sessionID, false)
	if err != nil {
		return fault.Wrap(err, "load the session's withdrawals")
	}
	return paidOnce(ws)
}

// countSubmission takes the submission's place within SubmitLimit (RATE_LIMITED with
// Retry-After when there is none). It runs once every other check passed, the session's lease
// taken in mode A: the limit counts what may reach the operator, not what was refused.
func (s *Service) countSubmission(ctx context.Context, sessionID string) error {
	refused, err := store.New(s.pool).TakeRateLimits(ctx, store.RateLimit{Key: "withdraw-submit:" + sessionID, Max: SubmitLimit,
		Window: SubmitWindow})
	if err != nil {
		return fault.Wrap(err, "count submissions")
	}
	if refused != nil {
		e := fault.New(fault.RateLimited, "at most %d withdrawal submissions per minute on one session; try again in a moment",
			SubmitLimit)
		e.RetryAfter = refused.RetryAfter
		return e
	}
	return nil
}

// holdSubmission takes the session's submission lease for a synchronous WITHDRAW_REQUEST: one
// in flight per session across replicas. Another submission meanwhile is RATE_LIMITED until
// this one is answered. release ends the lease (it ends by itself should this process die).
func (s *Service) holdSubmission(ctx context.Context, sessionID string) (release func(), err error) {
	q := store.New(s.pool)
	until, ok, err := q.TakeSubmitLease(ctx, sessionID, s.cfg.SyncTimeout+submitLeaseMargin)
	if err != nil {
		return nil, fault.Wrap(err, "take the submission lease")
	}
	if !ok {
		e := fault.New(fault.RateLimited, "a withdrawal of this session is being submitted; wait for its answer")
		e.RetryAfter = retryAfter(until.Add(-submitLeaseMargin))
		return nil, e
	}
	return func() {
		// Even when the request was cancelled: the lease must not outlive its submission.
		if err := q.ReleaseSubmitLease(context.WithoutCancel(ctx), sessionID, until); err != nil {
			s.log.WarnContext(ctx, "release the submission lease", "session", sessionID, "error", err)
		}
	}, nil
}

// retryAfter is a Retry-After in whole seconds until t, at least 1.
func retryAfter(t time.Time) int {
	return max(1, int(math.Ceil(time.Until(t).Seconds())))
}
