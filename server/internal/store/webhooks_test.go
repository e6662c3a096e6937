package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// The outbox's statements: events are queued with their insert, due now with five attempts;
// recorded attempts share the caller's round trip (batched), NULL error codes stay NULL, a
// failed attempt is due again after its delay with one attempt less, a delivered or dead event
// leaves the queue, and events no longer pending are left alone.
func TestWebhookQueueAndRecords(t *testing.T) {
	t.Parallel()
	ctx, pool, q, op, other := setupTwoOperators(t)
	var ids []string
	for _, o := range []string{op.ID, op.ID, op.ID, other.ID} {
		e := domain.WebhookEvent{ID: uuid.NewString(), OperatorID: o, EventType: domain.EventDeposit,
			SubjectID: uuid.NewString(), Body: `{}`}
		if ok, err := q.InsertWebhookEvent(ctx, e); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		ids = append(ids, e.ID)
	}
	due := func(posting ...string) map[string]int32 {
		t.Helper()
		got, err := q.DueWebhooks(ctx, op.ID, posting, 10)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int32{}
		for _, d := range got {
			if d.Event.OperatorID != op.ID || d.Event.Body != `{}` || d.Event.EventType != domain.EventDeposit {
				t.Fatalf("due event %+v", d.Event)
			}
			m[d.Event.ID] = d.AttemptsLeft
		}
		return m
	}
	if got := due(); len(got) != 3 || got[ids[0]] != 5 || got[ids[2]] != 5 {
		t.Fatalf("due after insert: %v", got)
	}
	if got := due(ids[0], ids[1]); len(got) != 1 || got[ids[2]] != 5 {
		t.Fatalf("due leaving out those being posted: %v", got)
	}

	outcome := func(id string, state domain.DeliveryState, acked bool, code *int32, retry time.Duration) store.WebhookOutcome {
		return store.WebhookOutcome{State: state, RetryIn: retry, Attempt: domain.WebhookAttempt{EventID: id,
			URL: "https://example.com/hook", Status: 500, Acked: acked, ErrorCode: code, Error: "boom"}}
	}
	send := func(outcomes ...store.WebhookOutcome) map[string]int32 {
		t.Helper()
		var b pgx.Batch
		recorded := map[string]int32{}
		store.QueueRecordWebhookAttempts(ctx, &b, outcomes, recorded)
		if err := pool.SendBatch(ctx, &b).Close(); err != nil {
			t.Fatal(err)
		}
		return recorded
	}

	recorded := send(outcome(ids[0], domain.DeliveryPending, false, nil, time.Hour),
		outcome(ids[1], domain.DeliveryPending, false, new(int32(0)), 0),
		outcome(ids[2], domain.DeliveryDead, false, new(int32(7)), 0))
	if len(recorded) != 3 || recorded[ids[0]] != 1 || recorded[ids[1]] != 1 || recorded[ids[2]] != 1 {
		t.Fatalf("recorded %v", recorded)
	}
	for i, want := range []*int32{nil, new(int32(0)), new(int32(7))} {
		as, err := q.WebhookAttempts(ctx, ids[i])
		if err != nil || len(as) != 1 {
			t.Fatalf("attempts of %d: %+v %v", i, as, err)
		}
		if got := as[0].ErrorCode; (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Fatalf("error code of %d: %v, want %v", i, got, want)
		}
	}
	if got := due(); len(got) != 1 || got[ids[1]] != 4 {
		t.Fatalf("due after the first attempts: %v (the dead one and the one retried in an hour are not)", got)
	}
	if d, err := q.NextWebhookDue(ctx, op.ID, time.Second); err != nil || !d.Queued || !d.Now || time.Until(d.Next) > time.Second {
		t.Fatalf("next due: %+v %v", d, err)
	}

	// A second acked attempt is kept (it needed a retry) and leaves the queue; the dead event is
	// not pending any more.
	recorded = send(outcome(ids[1], domain.DeliveryDelivered, true, nil, 0),
		outcome(ids[2], domain.DeliveryPending, false, nil, 0))
	if len(recorded) != 1 || recorded[ids[1]] != 2 {
		t.Fatalf("second round recorded %v", recorded)
	}
	if as, err := q.WebhookAttempts(ctx, ids[1]); err != nil || len(as) != 2 || as[1].Attempt != 2 || !as[1].Acked {
		t.Fatalf("second attempt %+v %v", as, err)
	}
	e, err := q.GetWebhookEvent(ctx, nil, ids[1], false)
	if err != nil || e.State != domain.DeliveryDelivered || e.DeliveredAt == nil || e.LastStatus != 500 {
		t.Fatalf("delivered event %+v %v", e, err)
	}
	if d, err := q.NextWebhookDue(ctx, op.ID, time.Second); err != nil || !d.Queued || d.Now || d.Soon || time.Until(d.Next) < 50*time.Minute {
		t.Fatalf("next due: %+v %v (only the one retried in an hour is queued)", d, err)
	}
	var rows int
	pool.QueryRow(ctx, `SELECT count(*) FROM webhook_queue WHERE event_id = ANY($1)`, ids[1:3]).Scan(&rows) //nolint:errcheck
	if rows != 0 {
		t.Fatalf("%d delivered or dead events still queued", rows)
	}

	// A redelivery queues the event again, due now with five attempts.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.New(tx).RequeueDeadWebhook(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := due(); len(got) != 1 || got[ids[2]] != 5 {
		t.Fatalf("due after the redelivery: %v", got)
	}
}

// GetWebhookEvent locks the event's row only when asked to.
func TestGetWebhookEventLocks(t *testing.T) {
	t.Parallel()
	ctx, pool, q, op := setupOperatorPool(t)
	e := domain.WebhookEvent{ID: uuid.NewString(), OperatorID: op.ID, EventType: domain.EventDeposit, SubjectID: "s", Body: `{}`}
	if _, err := q.InsertWebhookEvent(ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, forUpdate := range []bool{false, true} {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.New(tx).GetWebhookEvent(ctx, []string{op.ID}, e.ID, forUpdate); err != nil {
			t.Fatal(err)
		}
		_, err = pool.Exec(ctx, `SELECT 1 FROM webhook_events WHERE id = $1 FOR UPDATE NOWAIT`, e.ID)
		var pgErr *pgconn.PgError
		if locked := errors.As(err, &pgErr) && pgErr.Code == "55P03"; locked != forUpdate {
			t.Fatalf("forUpdate %v: row locked %v (%v)", forUpdate, locked, err)
		}
		tx.Rollback(ctx) //nolint:errcheck
	}
	if _, err := q.GetWebhookEvent(ctx, []string{uuid.NewString()}, e.ID, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("out of scope: %v", err)
	}
}
