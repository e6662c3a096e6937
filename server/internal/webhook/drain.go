package webhook

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Drains. An event is queued with its insert (webhook_queue); one River job per operator, the
// drain, posts that operator's due events, up to OperatorConcurrency at once, and records
// each attempt as it ends (concurrent records share round trips: batcher). A River job per
// event cost more than the delivery itself (fetch, completion, arguments decoded); a drain
// costs one job per burst. It also keeps operators apart: a receiver that hangs holds its own
// operator's posts, never another's.
//
// Exactly one drain per operator is live, through webhook_drains (ClaimWebhookDrain):
//   - Enqueue holds the operator's drain lock shared until its transaction ends. It inserts
//     the row and the job when there is no row; otherwise it writes and locks nothing (so
//     Enqueues of one operator never wait on each other), unless the drain waits for a retry,
//     which it then makes available at once.
//   - A drain ends only in one transaction that takes the drain lock exclusive (when no Enqueue
//     holds it: it tries, never waits, so no Enqueue ever queues behind it), finds nothing
//     due, deletes the row (or, with retries queued for later, schedules its next job) and
//     completes its own job: an event committed while it was ending was seen by it, or
//     finds no row and starts a new drain.
//   - The repair job (every minute) restarts a drain that is lost: its job discarded or
//     cancelled by hand.
const (
	// DefaultOperatorConcurrency is how many of one operator's webhooks are posted at once.
	DefaultOperatorConcurrency = 64
	// drainBudget is how long one run of a drain starts new posts; it then lets them finish
	// and runs again (River's job timeout bounds a run, and a stopping worker waits for it).
	drainBudget = 10 * time.Second
	// drainRefill is how often a drain with posts in flight looks for new due events when
	// fewer than half its posts have ended.
	drainRefill = 50 * time.Millisecond
	// drainLinger: a retry due within it is waited for by the running drain (tests' short
	// schedules) rather than by a scheduled job, which River makes available only on its
	// scheduler's next pass (every few seconds).
	drainLinger = time.Second
	// RepairEvery is how often lost drains are looked for.
	RepairEvery = time.Minute
)

// DrainArgs is the delivery job of one operator's queued webhooks.
type DrainArgs struct {
	OperatorID string `json:"operator_id"` //nolint:tagliatelle // stored in river_job.args
}

// Kind implements river.JobArgs.
func (DrainArgs) Kind() string { return "webhook_drain" }

// InsertOpts: the webhooks queue. Failed posts are retried per event (webhook_queue); a drain
// itself fails only when the database does, and River retries it then.
func (DrainArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: jobs.QueueWebhooks}
}

// DrainWorker works DrainArgs.
type DrainWorker struct {
	river.WorkerDefaults[DrainArgs]

	Service *Service
	// Schedule of retries; jobs.WebhookSchedule (+5 s, +5 min, +30 min, +2 h) when nil.
	// Tests use milliseconds.
	Schedule jobs.RetrySchedule
}

// Work drains the operator's due webhooks.
func (w *DrainWorker) Work(ctx context.Context, job *river.Job[DrainArgs]) error {
	s := w.Schedule
	if s == nil {
		s = jobs.WebhookSchedule()
	}
	return w.Service.drain(ctx, job, s)
}

// RepairArgs is the periodic look for lost drains.
type RepairArgs struct{}

// Kind implements river.JobArgs.
func (RepairArgs) Kind() string { return "webhook_repair" }

// RepairWorker restarts the drains of operators with queued webhooks and no live drain job.
type RepairWorker struct {
	river.WorkerDefaults[RepairArgs]

	Service *Service
}

// Work restarts lost drains.
func (w *RepairWorker) Work(ctx context.Context, _ *river.Job[RepairArgs]) error {
	return w.Service.repair(ctx)
}

// Periodic runs the repair every interval (RepairEvery in production) and at start.
func (w *RepairWorker) Periodic(every time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return RepairArgs{}, nil },
		&river.PeriodicJobOpts{ID: "webhook_repair", RunOnStart: true})
}

// wake makes sure the operator's drain will run, in the transaction that queued an event
// (after the event's insert, which took the drain lock shared).
func (s *Service) wake(ctx context.Context, tx pgx.Tx, ins jobs.TxInserter, operatorID string) error {
	q := store.New(tx)
	inserted, waiting, err := q.ClaimWebhookDrain(ctx, operatorID)
	switch {
	case err != nil:
		return fmt.Errorf("webhook: claim the drain: %w", err)
	case inserted:
		res, err := ins.InsertTx(ctx, tx, DrainArgs{OperatorID: operatorID}, nil)
		if err != nil {
			return fmt.Errorf("webhook: insert the drain job: %w", err)
		}
		return q.SetWebhookDrainJob(ctx, operatorID, res.Job.ID, nil)
	case waiting:
		job, err := q.WakeWebhookDrain(ctx, operatorID)
		if err != nil {
			return fmt.Errorf("webhook: wake the drain: %w", err)
		}
		if job != 0 {
			if _, err := ins.JobRetryTx(ctx, tx, job); err != nil {
				return fmt.Errorf("webhook: wake the drain job: %w", err)
			}
		}
	}
	return nil
}

// repair restarts lost drains.
func (s *Service) repair(ctx context.Context) error {
	ins, err := s.jobs()
	if err != nil {
		return err
	}
	lost, err := store.New(s.pool).LostWebhookDrains(ctx)
	if err != nil {
		return fmt.Errorf("list lost webhook drains: %w", err)
	}
	for _, op := range lost {
		err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
			if err := store.New(tx).EndWebhookDrain(ctx, op); err != nil {
				return err
			}
			return s.wake(ctx, tx, ins, op)
		})
		if err != nil {
			return fmt.Errorf("restart the webhook drain of operator %s: %w", op, err)
		}
		s.log.WarnContext(ctx, "webhook drain restarted (its job was lost)", "operator_id", op)
	}
	return nil
}

// posted is how a post of a drain ended.
type posted struct {
	id  string
	err error // recording it failed
}

// drain posts the operator's due events until none is due, then ends (endDrain); after
// drainBudget it stops starting posts and runs again (snoozed for 0). A post still in flight
// when the job ends (shutdown, timeout) is left to finish and not recorded: the event is still
// due and is posted again, with the same webhook-id.
func (s *Service) drain(ctx context.Context, job *river.Job[DrainArgs], schedule jobs.RetrySchedule) error {
	d := &drainRun{s: s, op: job.Args.OperatorID, schedule: schedule, inflight: map[string]bool{},
		done: make(chan posted, s.perOperator), posts: make(chan post), launchUntil: time.Now().Add(drainBudget)}
	defer close(d.posts) // idle posters end; busy ones end after their post
	if err := d.loadDestination(ctx); errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("operator %s does not exist", d.op))
	}
	if dl, ok := ctx.Deadline(); ok {
		// Posts started by then end (client timeout) before River's job timeout does; with a
		// job timeout shorter than that (COFFER_JOB_RESCUE_AFTER below ~35 s), posts start
		// during its first half.
		left := time.Until(dl)
		if last := time.Now().Add(left - min(s.client.timeout+2*time.Second, left/2)); last.Before(d.launchUntil) {
			d.launchUntil = last
		}
	}
	tick := time.NewTicker(drainRefill)
	defer tick.Stop()
	ticked := false
	for {
		launching := d.failed == nil && time.Now().Before(d.launchUntil)
		if launching && d.wantsMore(ticked) {
			ticked = false
			if d.launch(ctx) == 0 && len(d.inflight) == 0 && d.failed == nil {
				ended, err := s.endDrain(ctx, job)
				if err != nil || ended {
					return err
				}
				// Something is due now or soon: look again at the next tick.
				select {
				case <-tick.C:
				case <-ctx.Done():
					return river.JobSnooze(0)
				}
				continue
			}
		}
		if len(d.inflight) == 0 {
			if d.failed != nil {
				return d.failed
			}
			if !launching {
				return river.JobSnooze(0) // the budget is spent: run again at once
			}
		}
		select {
		case p := <-d.done:
			d.ended(p)
		case <-tick.C:
			ticked = true
		case <-ctx.Done():
			// Posts in flight finish on their own (each has the client's timeout), unrecorded:
			// their events stay due, and d.done has room for every one.
			return river.JobSnooze(0) // run again (a stopping worker: on the next one)
		}
	}
}

// drainRun is one run of an operator's drain.
type drainRun struct {
	s           *Service
	op          string
	schedule    jobs.RetrySchedule
	launchUntil time.Time

	dest     destination
	destErr  error
	reload   time.Time // when to load dest again
	inflight map[string]bool
	done     chan posted
	// posts hands an event to an idle poster. Posters live as long as the run: a goroutine per
	// post grew a new stack for every one (copying it), about 6 µs of CPU a webhook.
	posts  chan post
	failed error // a load or a record failed: start no more posts, end with it
}

func (d *drainRun) loadDestination(ctx context.Context) error {
	d.dest, d.destErr = d.s.destination(ctx, d.op)
	d.reload = time.Now().Add(d.s.keyTTL)
	return d.destErr
}

// wantsMore: room for posts, and either none in flight, half the room free, or a tick passed
// since the last look (so events queued meanwhile wait at most drainRefill).
func (d *drainRun) wantsMore(ticked bool) bool {
	room := d.s.perOperator - len(d.inflight)
	return room > 0 && (len(d.inflight) == 0 || ticked || room >= d.s.perOperator/2)
}

// launch starts a post of each due event not in flight, as many as there is room for, and
// returns how many it started.
func (d *drainRun) launch(ctx context.Context) int {
	if time.Now().After(d.reload) {
		d.loadDestination(ctx) //nolint:errcheck // an error is each attempt's (recorded as a failed attempt)
	}
	due, err := store.New(d.s.pool).DueWebhooks(ctx, d.op, slices.Collect(maps.Keys(d.inflight)), d.s.perOperator-len(d.inflight))
	if err != nil {
		d.failed = fmt.Errorf("load due webhooks: %w", err)
		return 0
	}
	for _, w := range due {
		d.inflight[w.Event.ID] = true
		p := post{w, d.dest, d.destErr}
		select {
		case d.posts <- p: // an idle poster took it
		default:
			go d.poster(ctx, p) // at most one per post in flight
		}
	}
	return len(due)
}

// post is one attempt handed to a poster.
type post struct {
	due     store.DueWebhook
	dest    destination
	destErr error
}

// poster makes the attempt p, then waits for the next one, until the run ends.
func (d *drainRun) poster(ctx context.Context, p post) {
	for ok := true; ok; p, ok = <-d.posts {
		d.done <- posted{p.due.Event.ID, d.s.attempt(ctx, p.dest, p.destErr, p.due, d.schedule)}
	}
}

func (d *drainRun) ended(p posted) {
	delete(d.inflight, p.id)
	if p.err != nil && d.failed == nil {
		d.failed = p.err
	}
}

// endDrain ends the drain when nothing is due, in one transaction under the operator's drain
// lock (see the package's Drains): with nothing queued it forgets the drain; with retries
// queued for later it schedules its next job at the first; either way it completes its job.
// ended is false when an Enqueue of the operator is in flight, or an event is due now or
// within drainLinger.
func (s *Service) endDrain(ctx context.Context, job *river.Job[DrainArgs]) (ended bool, err error) {
	ins, err := s.jobs()
	if err != nil {
		return false, err
	}
	op := job.Args.OperatorID
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if locked, err := q.TryLockWebhookDrain(ctx, op); err != nil || !locked {
			return err // an Enqueue is in flight: its event will be due, look again
		}
		due, err := q.NextWebhookDue(ctx, op, drainLinger)
		if err != nil || due.Soon {
			return err
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("complete the drain job: %w", err)
		}
		ended = true
		if !due.Queued {
			return q.EndWebhookDrain(ctx, op)
		}
		res, err := ins.InsertTx(ctx, tx, DrainArgs{OperatorID: op}, &river.InsertOpts{ScheduledAt: due.Next})
		if err != nil {
			return fmt.Errorf("schedule the next drain: %w", err)
		}
		return q.SetWebhookDrainJob(ctx, op, res.Job.ID, &due.Next)
	})
	if err != nil {
		return false, fmt.Errorf("end the webhook drain: %w", err)
	}
	return ended, nil
}

// attempt posts one due event, signed with the operator's current keys, and records the
// attempt with the event's new state (delivered; dead after its last attempt; else pending,
// due again after the schedule's delay). An attempt stopped by ctx is not recorded. The error
// is the record's.
func (s *Service) attempt(ctx context.Context, dest destination, destErr error, d store.DueWebhook, schedule jobs.RetrySchedule) error {
	ev := d.Event
	var res Result
	switch {
	case destErr != nil:
		s.log.ErrorContext(ctx, "load webhook destination and signing keys", "operator_id", ev.OperatorID, "error", destErr)
		res.Err = errors.New("signing keys unavailable")
	case len(dest.keys) == 0:
		res.Err = errors.New("the operator has no valid key to sign with")
	default:
		// Not cut short by ctx: a post ends by the client's timeout, which the drain's budget
		// leaves room for within River's job timeout, and the post runs on the caller's
		// goroutine only without a Done channel (Client.do).
		res = s.post(context.WithoutCancel(ctx), dest.url, ev.ID, []byte(ev.Body), dest.keys)
	}
	if ctx.Err() != nil {
		return nil //nolint:nilerr // the job ended mid-attempt: the event is posted again, the attempt not counted
	}
	final := d.AttemptsLeft <= 1
	state, err := Next(ev.State, attemptEvent(res.Acked, final))
	if err != nil {
		return err
	}
	n := MaxAttempts - int(d.AttemptsLeft) + 1 // of this round: a redelivery starts a new one
	now := time.Now()
	outcome := store.WebhookOutcome{Attempt: attemptRecord(ev.ID, dest.url, res), State: state,
		RetryIn: schedule.Next(n, now).Sub(now)}
	r, err := s.db.do(context.WithoutCancel(ctx), dbCall{record: &outcome})
	if errors.Is(err, store.ErrNotFound) {
		return nil // no longer pending: settled meanwhile
	}
	if err != nil {
		s.log.ErrorContext(ctx, "record webhook attempt", "event_id", ev.ID, "error", err)
		return fmt.Errorf("record webhook attempt: %w", err)
	}
	s.logAttempt(ctx, ev.ID, ev.OperatorID, ev.EventType, r.attempt, res, false)
	result := string(state) // delivered or dead
	if state == domain.DeliveryPending {
		result = "failed" // retried later
	}
	metrics.WebhookAttempt(result, int(r.attempt))
	if !res.Acked && final {
		s.log.WarnContext(ctx, "webhook dead-lettered", "event_id", ev.ID, "operator_id", ev.OperatorID,
			"event", ev.EventType, "attempts", r.attempt, "error", res.Failure())
	}
	return nil
}
