package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// closedURL is a loopback URL nothing listens on (connection refused).
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/hook"
}

// The receiver is down in four different ways, then up: the event is delivered exactly once,
// every attempt carries the same webhook-id and the same body, signed with a fresh timestamp,
// and each attempt is recorded. The first attempt goes to a dead port; the drain then follows
// the operator's current webhookUrl.
func TestRetriesUntilDelivered(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 0:
			reply(w, 503, "upstream unavailable")
		case 1:
			reply(w, 200, "OK")
		case 2:
			reply(w, 200, `{"error":3,"description":"try later"}`)
		default:
			reply(w, 200, `{"error":0,"description":"credited","transactionId":"tx-9"}`)
		}
	})
	e := newEnv(t, closedURL(t))
	e.startRiver(jobs.RetrySchedule{500 * time.Millisecond, 10 * time.Millisecond})
	id := e.enqueue(depositEvent(7), "7")

	waitFor(t, "the first attempt", 10*time.Second, func() bool { return len(e.attempts(id)) == 1 })
	if _, err := e.ops.Update(context.Background(), e.opID, domain.OperatorSettings{WebhookURL: new(rc.URL + "/hook")}); err != nil {
		t.Fatal(err)
	}
	ev := e.waitState(id, domain.DeliveryDelivered)
	e.waitDrainEnded(e.opID)
	time.Sleep(300 * time.Millisecond) // nothing more arrives after the acknowledgement

	got := rc.got()
	if len(got) != 4 {
		t.Fatalf("receiver got %d requests, want 4", len(got))
	}
	want, _ := sdk.Encode(depositEvent(7))
	var lastStamp string
	for i, r := range got {
		if r.header.Get(sdk.HeaderID) != id {
			t.Errorf("request %d: webhook-id %q, want %q", i, r.header.Get(sdk.HeaderID), id)
		}
		if r.body != string(want) {
			t.Errorf("request %d: body changed:\n%s", i, r.body)
		}
		if err := sdk.Verify(r.header, []byte(r.body), []byte(e.key), time.Now()); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
		if ct := r.header.Get("Content-Type"); ct != sdk.ContentType {
			t.Errorf("request %d: Content-Type %q", i, ct)
		}
		if s := r.header.Get(sdk.HeaderTimestamp); s < lastStamp {
			t.Errorf("request %d: timestamp went back", i)
		} else {
			lastStamp = s
		}
	}
	attempts := e.attempts(id)
	wantStatus := []int32{0, 503, 200, 200, 200}
	if len(attempts) != len(wantStatus) {
		t.Fatalf("%d attempts recorded, want %d", len(attempts), len(wantStatus))
	}
	for i, a := range attempts {
		if a.Attempt != int32(i+1) || a.Status != wantStatus[i] || a.Acked != (i == 4) {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
	}
	for i, substr := range []string{"refused", "HTTP 503", "not a JSON object", "receiver answered error 3: try later", ""} {
		if !strings.Contains(attempts[i].Error, substr) || substr == "" && attempts[i].Error != "" {
			t.Errorf("attempt %d error %q, want %q", i+1, attempts[i].Error, substr)
		}
	}
	if attempts[0].URL == attempts[4].URL || attempts[4].URL != rc.URL+"/hook" {
		t.Errorf("attempt URLs %q then %q", attempts[0].URL, attempts[4].URL)
	}
	if ev.Attempts != 5 || ev.LastStatus != 200 || ev.LastError != "" || ev.DeliveredAt == nil || ev.DeadAt != nil {
		t.Errorf("event after delivery: %+v", ev)
	}
}

// Five failures dead-letter the event (it leaves the queue and the drain ends); it is listed,
// and a redelivery sends the same id and body again, counting attempts on.
func TestDeadLetterAndRedeliver(t *testing.T) {
	t.Parallel()
	e, rc := newReceivingEnv(t, failing)
	e.startRiver(fastSchedule)
	wr := &cofferv1.WithdrawCompleteEvent{WithdrawRequestId: "5f0e2c9a-7d1b-4e3f-8a6c-9b2d4f1e3a5c", SessionRef: "sr_1",
		ExternalUserId: "user-1", Type: "DIRECT_TRANSFER", Status: "COMPLETED", Address: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
		CryptoCurrencyCode: "USDT", FiatCurrencyCode: "USD", FiatAmount: "40.00", CryptoAmountSent: new("40.000000"),
		AmountInUsd: new("40.00"), CompletedAt: confirmed}
	id := e.enqueue(wr, wr.WithdrawRequestId)

	ev := e.waitState(id, domain.DeliveryDead)
	e.waitDrainEnded(e.opID)
	if ev.Attempts != 5 || ev.LastStatus != 500 || !strings.Contains(ev.LastError, "HTTP 500") || ev.DeadAt == nil {
		t.Fatalf("dead event: %+v", ev)
	}
	if n := len(rc.got()); n != 5 {
		t.Fatalf("%d requests before dead-lettering, want 5", n)
	}
	ctx := context.Background()
	dead, next, err := e.svc.ListDead(ctx, domain.AllOperators(), "", 0, "")
	if err != nil || len(dead) != 1 || next != "" {
		t.Fatalf("ListDead: %v, %d, %q", err, len(dead), next)
	}
	d := dead[0]
	if d.ID != id || d.EventType != domain.EventWithdrawComplete || d.Attempts != 5 || d.State != domain.DeliveryDead ||
		d.LastURL != rc.URL || d.Body != rc.got()[0].body || d.OperatorID != e.opID || d.LastAttemptAt == nil || d.CreatedAt.IsZero() {
		t.Fatalf("dead letter: %+v", d)
	}
	if _, err := e.svc.Redeliver(ctx, domain.Operators(newID()), id); !fault.Is(err, fault.NotFound) {
		t.Fatalf("Redeliver outside the scope: %v", err)
	}

	rc.setAnswer(ok)
	d, err = e.svc.Redeliver(ctx, domain.Operators(e.opID), id)
	if err != nil || d.State != domain.DeliveryPending || d.Attempts != 5 {
		t.Fatalf("Redeliver: %+v, %v", d, err)
	}
	ev = e.waitState(id, domain.DeliveryDelivered)
	e.waitDrainEnded(e.opID)
	if ev.Attempts != 6 {
		t.Errorf("attempts after redelivery: %d", ev.Attempts)
	}
	got := rc.got()
	if len(got) != 6 {
		t.Fatalf("%d requests, want 6", len(got))
	}
	for _, r := range got {
		if r.header.Get(sdk.HeaderID) != id || r.body != got[0].body {
			t.Fatalf("redelivery changed the id or the body: %s %s", r.header.Get(sdk.HeaderID), r.body)
		}
	}
	if dead, _, _ := e.svc.ListDead(ctx, domain.AllOperators(), "", 0, ""); len(dead) != 0 {
		t.Errorf("still listed as dead: %v", dead)
	}
	if _, err := e.svc.Redeliver(ctx, domain.AllOperators(), id); !fault.Is(err, fault.Conflict) {
		t.Errorf("Redeliver of a delivered webhook: %v", err)
	}
	if _, err := e.svc.Redeliver(ctx, domain.AllOperators(), newID()); !fault.Is(err, fault.NotFound) {
		t.Errorf("Redeliver of an unknown webhook: %v", err)
	}
	if _, err := e.svc.Redeliver(ctx, domain.AllOperators(), "not-a-uuid"); !fault.Is(err, fault.NotFound) {
		t.Errorf("Redeliver of a malformed id: %v", err)
	}
}

func TestListDeadScopeAndPages(t *testing.T) {
	t.Parallel()
	e := newIdleEnv(t, "https://acme.example/hook")
	ctx := context.Background()
	other, _, err := e.ops.Create(ctx, domain.OperatorSettings{Name: new("Other"), WebhookURL: new("https://other.example/hook")})
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for i := range 5 {
		id := e.enqueue(depositEvent(int64(i+1)), strconv.Itoa(i+1))
		mine = append([]string{id}, mine...) // newest first
		if _, err := e.pool.Exec(ctx, `UPDATE webhook_events SET state = 'dead', attempts = 5,
			dead_at = now() + $2 * interval '1 second' WHERE id = $1`, id, i); err != nil {
			t.Fatal(err)
		}
	}
	theirs := Event{ID: newID(), OperatorID: other.ID, SubjectID: "9", Message: depositEvent(9)}
	if err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error { return e.svc.Enqueue(ctx, tx, theirs) }); err != nil {
		t.Fatal(err)
	}
	e.pool.Exec(ctx, `UPDATE webhook_events SET state = 'dead', dead_at = now() WHERE id = $1`, theirs.ID) //nolint:errcheck

	var seen []string
	token := ""
	for page := 0; ; page++ {
		list, next, err := e.svc.ListDead(ctx, domain.Operators(e.opID), "", 2, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			seen = append(seen, d.ID)
		}
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatal("too many pages")
		}
		token = next
	}
	if strings.Join(seen, ",") != strings.Join(mine, ",") {
		t.Fatalf("pages gave\n%v\nwant\n%v", seen, mine)
	}
	if all, _, _ := e.svc.ListDead(ctx, domain.AllOperators(), "", 0, ""); len(all) != 6 {
		t.Errorf("service team sees %d dead letters, want 6", len(all))
	}
	if only, _, _ := e.svc.ListDead(ctx, domain.AllOperators(), other.ID, 0, ""); len(only) != 1 || only[0].ID != theirs.ID {
		t.Errorf("operator filter: %v", only)
	}
	if _, _, err := e.svc.ListDead(ctx, domain.Operators(e.opID), other.ID, 0, ""); !fault.Is(err, fault.NotFound) {
		t.Errorf("operator outside the scope: %v", err)
	}
	if none, _, err := e.svc.ListDead(ctx, domain.Scope{}, "", 0, ""); err != nil || len(none) != 0 {
		t.Errorf("empty scope: %v %v", none, err)
	}
	if _, _, err := e.svc.ListDead(ctx, domain.AllOperators(), "", 0, "garbage!"); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("bad page token: %v", err)
	}
	if _, err := e.svc.Redeliver(ctx, domain.Operators(e.opID), theirs.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("another operator's webhook: %v", err)
	}
}

// The event, queued, and its operator's drain exist exactly when the caller's transaction
// commits; the same state change enqueued twice is one webhook; one drain serves every event
// of an operator.
func TestEnqueueInCallersTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "https://acme.example/hook")
	ctx := context.Background()
	if err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		return e.svc.Enqueue(ctx, tx, Event{OperatorID: e.opID, SubjectID: "1", Message: depositEvent(1)})
	}); !errors.Is(err, jobs.ErrUnbound) {
		t.Fatalf("Enqueue without a River client: %v", err)
	}
	e.bindIdle()

	rollback := errors.New("rollback")
	id := newID()
	err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		if err := e.svc.Enqueue(ctx, tx, Event{ID: id, OperatorID: e.opID, SubjectID: "1", Message: depositEvent(1)}); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	counts := func() (events, queued, drains, jobCount int) {
		err := e.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events), (SELECT count(*) FROM webhook_queue),
			(SELECT count(*) FROM webhook_drains), (SELECT count(*) FROM river_job WHERE kind = 'webhook_drain')`).Scan(
			&events, &queued, &drains, &jobCount)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if events, queued, drains, jobCount := counts(); events+queued+drains+jobCount != 0 {
		t.Fatalf("after rollback: %d events, %d queued, %d drains, %d jobs", events, queued, drains, jobCount)
	}

	first := e.enqueue(depositEvent(1), "1")
	second := e.enqueue(depositEvent(1), "1")
	test := depositEvent(1)
	test.Test = true
	e.enqueue(test, "1")
	e.enqueue(test, "1")
	if events, queued, drains, jobCount := counts(); events != 3 || queued != 3 || drains != 1 || jobCount != 1 {
		t.Fatalf("%d events (%d queued), %d drains, %d drain jobs; want 3 events queued (one real, two tests), one drain",
			events, queued, drains, jobCount)
	}
	if _, err := store.New(e.pool).GetWebhookEvent(ctx, nil, second, false); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the same state change enqueued again was written: %v", err)
	}
	ev := e.event(first)
	if ev.EventType != "DEPOSIT" || ev.SubjectID != "1" || ev.State != "pending" || ev.Attempts != 0 || ev.Test {
		t.Fatalf("event: %+v", ev)
	}
	for name, bad := range map[string]Event{
		"no subject":       {OperatorID: e.opID, Message: depositEvent(2)},
		"not an event":     {OperatorID: e.opID, SubjectID: "2", Message: &cofferv1.WebhookDelivery{}},
		"bad operator id":  {OperatorID: "acme", SubjectID: "2", Message: depositEvent(2)},
		"bad event id":     {ID: "x", OperatorID: e.opID, SubjectID: "2", Message: depositEvent(2)},
		"unknown operator": {OperatorID: newID(), SubjectID: "2", Message: depositEvent(2)},
	} {
		if err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error { return e.svc.Enqueue(ctx, tx, bad) }); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A pending webhook is not redeliverable; concurrent redeliveries of a dead one: one wins,
// the others conflict, and the event is queued once with one drain.
func TestRedeliverRaces(t *testing.T) {
	t.Parallel()
	e := newIdleEnv(t, "https://acme.example/hook")
	ctx := context.Background()
	id := e.enqueue(depositEvent(1), "1")
	if _, err := e.svc.Redeliver(ctx, domain.AllOperators(), id); !fault.Is(err, fault.Conflict) {
		t.Fatalf("Redeliver of a pending webhook: %v", err)
	}
	// Dead-lettered, its drain ended.
	e.pool.Exec(ctx, `UPDATE webhook_events SET state = 'dead', dead_at = now(), attempts = 5 WHERE id = $1`, id)   //nolint:errcheck
	e.pool.Exec(ctx, `DELETE FROM webhook_queue WHERE event_id = $1`, id)                                           //nolint:errcheck
	e.pool.Exec(ctx, `DELETE FROM webhook_drains`)                                                                  //nolint:errcheck
	e.pool.Exec(ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE kind = 'webhook_drain'`) //nolint:errcheck

	var wg sync.WaitGroup
	var mu sync.Mutex
	var wins, conflicts int
	for range 8 {
		wg.Go(func() {
			_, err := e.svc.Redeliver(ctx, domain.AllOperators(), id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case fault.Is(err, fault.Conflict):
				conflicts++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Fatalf("%d redeliveries won, %d conflicted", wins, conflicts)
	}
	var queued int
	e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_queue WHERE event_id = $1`, id).Scan(&queued) //nolint:errcheck
	if got := e.drainJobs(e.opID); queued != 1 || strings.Join(got, ",") != "completed,available" {
		t.Fatalf("queued %d times, drain jobs %v", queued, got)
	}
}

// A retry due later than drainLinger is waited for by a drain job scheduled at its due time
// (the drain ends meanwhile); a new event of the operator wakes that job at once and is
// delivered without waiting for the retry.
func TestRetryWaitsAsScheduledDrainAndNewEventsWakeIt(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			reply(w, 503, "down")
			return
		}
		ok(n, w, r)
	})
	e := newEnv(t, rc.URL)
	e.startRiver(jobs.RetrySchedule{time.Hour})
	ctx := context.Background()
	first := e.enqueue(depositEvent(1), "1")
	var dueAt *time.Time
	waitFor(t, "the drain waiting for the retry", 10*time.Second, func() bool {
		e.pool.QueryRow(ctx, `SELECT due_at FROM webhook_drains WHERE operator_id = $1`, e.opID).Scan(&dueAt) //nolint:errcheck
		return dueAt != nil
	})
	if until := time.Until(*dueAt); until < 59*time.Minute || until > time.Hour {
		t.Fatalf("the drain waits until %v (in %v), want the retry in an hour", dueAt, until)
	}
	if got := e.drainJobs(e.opID); strings.Join(got, ",") != "completed,scheduled" {
		t.Fatalf("drain jobs %v, want the first completed and the next scheduled", got)
	}

	second := e.enqueue(depositEvent(2), "2")
	e.waitState(second, domain.DeliveryDelivered)
	if ev := e.event(first); ev.State != domain.DeliveryPending || ev.Attempts != 1 {
		t.Fatalf("the first event, retried in an hour: %+v", ev)
	}
	waitFor(t, "the drain waiting again", 10*time.Second, func() bool {
		return strings.Join(e.drainJobs(e.opID), ",") == "completed,completed,scheduled"
	})
	if n := len(rc.got()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

// Two worker processes on one database, two operators: every event is delivered exactly
// once.
func TestTwoWorkersDeliverOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get(sdk.HeaderID)]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		ok(n, w, r)
	})
	e := newEnv(t, rc.URL)
	e.startRiver(fastSchedule)
	e.newRiver(fastSchedule, true)
	ctx := context.Background()
	other, _, err := e.ops.Create(ctx, domain.OperatorSettings{Name: new("Other"), WebhookURL: new(rc.URL)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	ids := make([]string, n)
	for start := 0; start < n; start += 20 { // in several commits, while the drains run
		err = store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
			for i := start; i < start+20; i++ {
				ids[i] = newID()
				op := []string{e.opID, other.ID}[i%2]
				if err := e.svc.Enqueue(ctx, tx, Event{ID: ids[i], OperatorID: op, SubjectID: strconv.Itoa(i), Message: depositEvent(int64(i + 1))}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every delivery", 30*time.Second, func() bool {
		var left int
		e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE state <> 'delivered'`).Scan(&left) //nolint:errcheck
		return left == 0
	})
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("event %s delivered %d times", id, seen[id])
		}
	}
	// Each event counts one attempt; first-try successes leave no attempts row.
	var attempts, rows int
	e.pool.QueryRow(ctx, `SELECT sum(attempts) FROM webhook_events`).Scan(&attempts) //nolint:errcheck
	e.pool.QueryRow(ctx, `SELECT count(*) FROM webhook_attempts`).Scan(&rows)        //nolint:errcheck
	if attempts != n || rows != 0 {
		t.Errorf("%d attempts counted (%d rows) for %d events delivered at once", attempts, rows, n)
	}
}

// A delivery job of an earlier version finishes without sending: its event is in the queue.
func TestLegacyDeliverJobs(t *testing.T) {
	t.Parallel()
	e, rc := newReceivingEnv(t, ok)
	c := e.startRiver(fastSchedule)
	events, cancel := c.Subscribe(river.EventKindJobCompleted)
	defer cancel()
	id := e.enqueue(depositEvent(1), "1")
	e.waitState(id, domain.DeliveryDelivered)
	if _, err := c.Insert(context.Background(), DeliverArgs{EventID: id}, &river.InsertOpts{Queue: jobs.QueueWebhooks}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev := <-events:
			done = ev.Job.Kind == DeliverArgs{}.Kind()
		case <-deadline:
			t.Fatal("the legacy job did not complete")
		}
	}
	if n := len(rc.got()); n != 1 {
		t.Fatalf("%d requests for one event", n)
	}
}

// Deliveries run on their own queue, so receivers that answer slowly (up to the 15 s timeout
// each) hold webhook workers only, never the default queue's scans, sweeps and payouts.
func TestDeliveriesHaveTheirOwnQueue(t *testing.T) {
	t.Parallel()
	e := newIdleEnv(t, newReceiver(t, ok).URL)
	ctx := context.Background()
	id := newID()
	err := store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		return e.svc.Enqueue(ctx, tx, Event{ID: id, OperatorID: e.opID, SubjectID: "1", Message: depositEvent(1)})
	})
	if err != nil {
		t.Fatal(err)
	}
	var queue, args string
	if err := e.pool.QueryRow(ctx, `SELECT queue, args::text FROM river_job WHERE kind = 'webhook_drain'`).Scan(&queue, &args); err != nil {
		t.Fatal(err)
	}
	if queue != jobs.QueueWebhooks || !strings.Contains(args, e.opID) {
		t.Fatalf("drain job on queue %q with args %s", queue, args)
	}
}
