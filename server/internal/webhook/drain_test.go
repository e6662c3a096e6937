package webhook

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// held is a receiver answer that blocks the first request until release is closed.
func held(release <-chan struct{}) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		ok(n, w, r)
	}
}

// A drain does not end while an Enqueue of its operator is in flight (its transaction holds
// the drain lock shared): it delivers that event once it commits. An event committed while
// the drain ends is never left queued without a drain.
func TestDrainDoesNotEndUnderAnEnqueueInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	e, rc := newReceivingEnv(t, held(release))
	e.startRiver(fastSchedule)
	ctx := context.Background()
	first := e.enqueue(depositEvent(1), "1")
	waitFor(t, "the first post", 10*time.Second, func() bool { return len(rc.got()) == 1 })

	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	second := Event{ID: newID(), OperatorID: e.opID, SubjectID: "2", Message: depositEvent(2)}
	if err := e.svc.Enqueue(ctx, tx, second); err != nil {
		t.Fatal(err)
	}
	close(release)
	e.waitState(first, domain.DeliveryDelivered)
	time.Sleep(20 * drainRefill) // the drain tries to end, again and again
	if got := e.drainJobs(e.opID); strings.Join(got, ",") != "running" {
		t.Fatalf("drain jobs %v while an Enqueue is in flight, want the drain still running", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitState(second.ID, domain.DeliveryDelivered)
	e.waitDrainEnded(e.opID)
	if got := e.drainJobs(e.opID); strings.Join(got, ",") != "completed" {
		t.Fatalf("drain jobs %v: one drain delivers both", got)
	}
}

// Enqueues of one operator never wait on each other (deposits credited concurrently for one
// operator are not serialized by the outbox): with a drain live, a second transaction's
// Enqueue goes through while the first's is still open.
func TestEnqueuesDoNotWaitOnEachOther(t *testing.T) {
	t.Parallel()
	e := newIdleEnv(t, "https://acme.example/hook") // the drain stays queued: live
	ctx := context.Background()
	e.enqueue(depositEvent(1), "1")
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if err := e.svc.Enqueue(ctx, tx, Event{OperatorID: e.opID, SubjectID: "2", Message: depositEvent(2)}); err != nil {
		t.Fatal(err)
	}
	quick, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = store.InTx(quick, e.pool, func(other pgx.Tx) error {
		return e.svc.Enqueue(quick, other, Event{OperatorID: e.opID, SubjectID: "3", Message: depositEvent(3)})
	})
	if err != nil {
		t.Fatalf("an Enqueue waited for another's transaction: %v", err)
	}
}

// A receiver that hangs holds its own operator's posts only: another operator's webhooks are
// delivered meanwhile.
func TestOperatorsDrainApart(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	hung := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	rc := newReceiver(t, ok)
	e := newEnv(t, hung.URL)
	e.startRiver(fastSchedule)
	ctx := context.Background()
	other, _, err := e.ops.Create(ctx, domain.OperatorSettings{Name: new("Other"), WebhookURL: new(rc.URL)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e.enqueue(depositEvent(int64(i+1)), string(rune('a'+i)))
	}
	waitFor(t, "the hung posts", 10*time.Second, func() bool { return len(hung.got()) == 3 })
	id := newID()
	if err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		return e.svc.Enqueue(ctx, tx, Event{ID: id, OperatorID: other.ID, SubjectID: "9", Message: depositEvent(9)})
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.waitState(id, domain.DeliveryDelivered)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the other operator's webhook took %v", d)
	}
}

// A drain whose job was lost (discarded or cancelled by hand) is restarted by the repair, and
// its operator's queued webhooks are delivered.
func TestRepairRestartsLostDrains(t *testing.T) {
	t.Parallel()
	e := newIdleEnv(t, newReceiver(t, ok).URL)
	ctx := context.Background()
	id := e.enqueue(depositEvent(1), "1")
	e.pool.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE kind = 'webhook_drain'`) //nolint:errcheck
	if err := e.svc.repair(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.repair(ctx); err != nil { // nothing lost any more: no second drain
		t.Fatal(err)
	}
	if got := e.drainJobs(e.opID); strings.Join(got, ",") != "discarded,available" {
		t.Fatalf("drain jobs after the repair: %v", got)
	}
	e.newRiver(fastSchedule, true)
	e.waitState(id, domain.DeliveryDelivered)
	e.waitDrainEnded(e.opID)
}

// A post stopped by the drain's end (the worker stopping) is not recorded: the event stays
// due and the next drain posts it again with the same webhook-id, counted as one attempt.
func TestStoppedPostIsPostedAgain(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	e, rc := newReceivingEnv(t, held(release))
	ctx := context.Background()
	first := e.newRiver(fastSchedule, true)
	e.bind(first)
	id := e.enqueue(depositEvent(1), "1")
	waitFor(t, "the first post", 10*time.Second, func() bool { return len(rc.got()) == 1 })
	stop, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	first.Stop(stop) //nolint:errcheck // times out: the post is cancelled
	if err := first.StopAndCancel(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := e.event(id); ev.State != domain.DeliveryPending || ev.Attempts != 0 {
		t.Fatalf("event after the stopped post: %+v", ev)
	}
	e.newRiver(fastSchedule, true)
	ev := e.waitState(id, domain.DeliveryDelivered)
	got := rc.got()
	if len(got) != 2 || got[0].header.Get(sdk.HeaderID) != id || got[1].header.Get(sdk.HeaderID) != id || ev.Attempts != 1 {
		t.Fatalf("%d posts, attempts %d", len(got), ev.Attempts)
	}
}

// With a job timeout shorter than a post's (COFFER_JOB_RESCUE_AFTER of a few seconds, as the
// crash tests run), a drain still posts: during the first half of its run.
func TestDrainUnderAShortJobTimeout(t *testing.T) {
	t.Parallel()
	e, _ := newReceivingEnv(t, ok)
	e.bind(e.newRiver(fastSchedule, true, func(o *jobs.Options) { o.RescueAfter = 2 * time.Second }))
	ids := []string{e.enqueue(depositEvent(1), "1"), e.enqueue(depositEvent(2), "2")}
	for _, id := range ids {
		e.waitState(id, domain.DeliveryDelivered)
	}
}
