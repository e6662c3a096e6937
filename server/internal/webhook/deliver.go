package webhook

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/store"
)

// DeliverArgs is the delivery job of one event before drains (drain.go): jobs queued by an
// earlier version finish without sending, their events being queued for their operators'
// drains by the migration that added them.
type DeliverArgs struct {
	EventID string `json:"event_id"` //nolint:tagliatelle // stored in river_job.args
}

// Kind implements river.JobArgs.
func (DeliverArgs) Kind() string { return "webhook_deliver" }

// DeliverWorker works the DeliverArgs jobs left from an earlier version: nothing to do.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
}

// Work does nothing: the event is in its operator's queue.
func (*DeliverWorker) Work(context.Context, *river.Job[DeliverArgs]) error { return nil }

// MaxAttempts is the number of delivery attempts of an outbox event before it is
// dead-lettered (spec: up to 5 attempts); a redelivery gives it as many again.
const MaxAttempts = 5

// dbCall is the record of an attempt. Concurrent posts' records share round trips (see
// batcher).
type dbCall struct {
	record *store.WebhookOutcome
}

type dbResult struct {
	attempt int32
}

// runDB sends a batch of records to PostgreSQL in one round trip: one statement recording
// every attempt (one per round of distinct events; in practice a single round).
func (s *Service) runDB(ctx context.Context, calls []dbCall) ([]dbResult, []error, error) {
	var b pgx.Batch
	var rounds []map[string]int32
	round := make([]int, len(calls)) // the record round of each call
	pending := make([]int, len(calls))
	for i := range calls {
		pending[i] = i
	}
	for r := 0; len(pending) > 0; r++ {
		var batch []store.WebhookOutcome
		var later []int
		seen := map[string]bool{}
		for _, i := range pending {
			if id := calls[i].record.Attempt.EventID; seen[id] {
				later = append(later, i)
			} else {
				seen[id] = true
				round[i] = r
				batch = append(batch, *calls[i].record)
			}
		}
		recorded := map[string]int32{}
		store.QueueRecordWebhookAttempts(ctx, &b, batch, recorded)
		rounds = append(rounds, recorded)
		pending = later
	}
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, nil, err
	}
	outs, errs := make([]dbResult, len(calls)), make([]error, len(calls))
	for i, c := range calls {
		var ok bool
		outs[i].attempt, ok = rounds[round[i]][c.record.Attempt.EventID]
		if !ok {
			errs[i] = store.ErrNotFound
		}
	}
	return outs, errs, nil
}
