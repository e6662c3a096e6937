package jobs

import (
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// RetrySchedule retries a job after fixed delays: the n-th failure waits Schedule[n-1]
// (counted from the failed attempt), and the last delay repeats if attempts remain. It is a
// river.ClientRetryPolicy, and workers with their own schedule return Next from NextRetry.
type RetrySchedule []time.Duration

var _ river.ClientRetryPolicy = RetrySchedule(nil)

// WebhookSchedule is DESIGN.md's delivery schedule: attempts at 0, +5 s, +5 min, +30 min
// and +2 h, then dead-lettered (River's max attempts is 5 for webhook jobs).
func WebhookSchedule() RetrySchedule {
	return RetrySchedule{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour}
}

// NextRetry implements river.ClientRetryPolicy.
func (s RetrySchedule) NextRetry(job *rivertype.JobRow) time.Time {
	from := time.Now()
	if job.AttemptedAt != nil {
		from = *job.AttemptedAt
	}
	return s.Next(job.Attempt, from)
}

// Next is when to retry after the attempt-th attempt (1-based) failed at failedAt.
func (s RetrySchedule) Next(attempt int, failedAt time.Time) time.Time {
	if len(s) == 0 {
		return failedAt
	}
	i := min(max(attempt, 1), len(s)) - 1
	return failedAt.Add(s[i])
}
