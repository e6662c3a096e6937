package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// MaxAttempts is the number of delivery attempts of an outbox event before it is
// dead-lettered (spec: up to 5 attempts).
const MaxAttempts = 5

// DeliverArgs is the delivery job of one outbox event. The job carries the event (enqueued
// with it in one transaction, so they cannot differ): an attempt then reads nothing before it
// posts. A job with the event id alone (a redelivery) loads the event first.
type DeliverArgs struct {
	EventID    string           `json:"event_id"              river:"unique"` //nolint:tagliatelle // stored in river_job.args: queued jobs keep this key
	OperatorID string           `json:"operator_id,omitempty"`                //nolint:tagliatelle // stored in river_job.args: queued jobs keep this key
	EventType  domain.EventType `json:"event,omitempty"`
	Body       string           `json:"body,omitempty"`
}

// Kind implements river.JobArgs.
func (DeliverArgs) Kind() string { return "webhook_deliver" }

// InsertOpts: five attempts, and never two live jobs for one event.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       jobs.QueueWebhooks,
		MaxAttempts: MaxAttempts,
		UniqueOpts:  jobs.OnePerArgs(),
	}
}

// DeliverWorker works DeliverArgs: one signed attempt per run. A failure is returned to
// River, which retries on Schedule; the last failure marks the event dead and River discards
// the job.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]

	Service *Service
	// Schedule of retries; jobs.WebhookSchedule (+5 s, +5 min, +30 min, +2 h) when nil.
	// Tests use milliseconds.
	Schedule jobs.RetrySchedule
}

// NextRetry waits the schedule's delay after the failed attempt.
func (w *DeliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	s := w.Schedule
	if s == nil {
		s = jobs.WebhookSchedule()
	}
	return s.Next(job.Attempt, time.Now())
}

// Timeout bounds a run: the HTTP attempt has its own, shorter timeout.
func (w *DeliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	return w.Service.client.timeout + 30*time.Second
}

// Work makes one delivery attempt.
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	return w.Service.deliver(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// deliver posts a pending event to its operator's current webhook URL, signed with the
// operator's current keys, and records the attempt with the event's new state (delivered;
// dead when final; else still pending) in one statement. An attempt whose event is no longer
// pending (a run repeated after its record) is not recorded again.
func (s *Service) deliver(ctx context.Context, args DeliverArgs, final bool) error {
	ev := domain.WebhookEvent{ID: args.EventID, OperatorID: args.OperatorID, EventType: args.EventType, Body: args.Body,
		State: domain.DeliveryPending}
	url := ""
	if args.Body == "" {
		r, err := s.db.do(ctx, dbCall{load: args.EventID})
		if errors.Is(err, store.ErrNotFound) {
			return river.JobCancel(fmt.Errorf("webhook event %s does not exist", args.EventID))
		}
		if err != nil {
			return fmt.Errorf("load webhook event: %w", err)
		}
		ev, url = r.target.Event, r.target.URL
		if ev.State != domain.DeliveryPending {
			return nil // delivered or dead-lettered already: nothing to send
		}
	}
	dest, err := s.operators.get(ctx, ev.OperatorID)
	target, keys := dest.url, dest.keys
	if url != "" {
		target = url
	}
	var res Result
	switch {
	case err != nil:
		s.log.ErrorContext(ctx, "load webhook destination and signing keys", "operator_id", ev.OperatorID, "error", err)
		res.Err = errors.New("signing keys unavailable")
	case len(keys) == 0:
		res.Err = errors.New("the operator has no valid key to sign with")
	default:
		res = s.post(ctx, target, ev.ID, []byte(ev.Body), keys)
	}
	if ctx.Err() != nil {
		// Stopped (shutdown) mid-attempt: River runs the job again without counting it.
		return ctx.Err()
	}
	state, err := Next(ev.State, attemptEvent(res.Acked, final))
	if err != nil {
		return err
	}
	outcome := store.WebhookOutcome{Attempt: attemptRecord(ev.ID, target, res), State: state}
	r, err := s.db.do(context.WithoutCancel(ctx), dbCall{record: &outcome})
	if errors.Is(err, store.ErrNotFound) {
		return nil // no longer pending: settled meanwhile
	}
	if err != nil {
		return fmt.Errorf("record webhook attempt: %w", err)
	}
	n := r.attempt
	s.logAttempt(ctx, ev.ID, ev.OperatorID, ev.EventType, n, res, false)
	result := string(state) // delivered or dead
	if state == domain.DeliveryPending {
		result = "failed" // retried later
	}
	metrics.WebhookAttempt(result, int(n))
	if res.Acked {
		return nil
	}
	if final {
		s.log.WarnContext(ctx, "webhook dead-lettered", "event_id", ev.ID, "operator_id", ev.OperatorID,
			"event", ev.EventType, "attempts", n, "error", res.Failure())
	}
	return fmt.Errorf("webhook attempt %d: %s", n, res.Failure())
}

// dbCall is a delivery worker's database work: the load of an event before its attempt, or
// the record of an attempt. Concurrent workers' calls share round trips (see batcher).
type dbCall struct {
	load   string
	record *store.WebhookOutcome
}

type dbResult struct {
	target  store.WebhookTarget
	attempt int32
}

// runDB sends a batch of loads and records to PostgreSQL in one round trip: one statement
// loading every event asked for, one recording every attempt (one per round of distinct
// events; in practice a single round).
func (s *Service) runDB(ctx context.Context, calls []dbCall) ([]dbResult, []error, error) {
	var b pgx.Batch
	found := map[string]store.WebhookTarget{}
	var ids []string
	var rounds []map[string]int32
	round := make([]int, len(calls)) // the record round of each record call
	var pending []int
	for i, c := range calls {
		if c.record == nil {
			ids = append(ids, c.load)
		} else {
			pending = append(pending, i)
		}
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
	if len(ids) > 0 {
		store.QueueWebhooksForDelivery(ctx, &b, ids, found)
	}
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return nil, nil, err
	}
	outs, errs := make([]dbResult, len(calls)), make([]error, len(calls))
	for i, c := range calls {
		var ok bool
		if c.record == nil {
			outs[i].target, ok = found[c.load]
		} else {
			outs[i].attempt, ok = rounds[round[i]][c.record.Attempt.EventID]
		}
		if !ok {
			errs[i] = store.ErrNotFound
		}
	}
	return outs, errs, nil
}
