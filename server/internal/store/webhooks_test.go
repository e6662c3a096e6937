package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// The outbox's batched statements share the caller's round trip: records and loads queued in
// one batch come back through the generated scanning, NULL error codes stay NULL, and events
// no longer pending are left alone.
func TestWebhookStatementsInOneBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, q := setup(t)
	op := newOperator(t, q, domain.OperatorSettings{})
	var ids []string
	for range 3 {
		e := domain.WebhookEvent{ID: uuid.NewString(), OperatorID: op.ID, EventType: domain.EventDeposit,
			SubjectID: uuid.NewString(), Body: `{}`}
		if ok, err := q.InsertWebhookEvent(ctx, e); err != nil || !ok {
			t.Fatalf("insert: %v %v", ok, err)
		}
		ids = append(ids, e.ID)
	}
	outcome := func(id string, state domain.DeliveryState, acked bool, code *int32) store.WebhookOutcome {
		return store.WebhookOutcome{State: state, Attempt: domain.WebhookAttempt{EventID: id, URL: "https://example.com/hook",
			Status: 500, Acked: acked, ErrorCode: code, Error: "boom"}}
	}
	send := func(outcomes []store.WebhookOutcome, load []string) (map[string]int32, map[string]store.WebhookTarget) {
		t.Helper()
		var b pgx.Batch
		recorded, found := map[string]int32{}, map[string]store.WebhookTarget{}
		store.QueueRecordWebhookAttempts(ctx, &b, outcomes, recorded)
		store.QueueWebhooksForDelivery(ctx, &b, load, found)
		if err := pool.SendBatch(ctx, &b).Close(); err != nil {
			t.Fatal(err)
		}
		return recorded, found
	}

	recorded, found := send([]store.WebhookOutcome{
		outcome(ids[0], domain.DeliveryPending, false, nil),
		outcome(ids[1], domain.DeliveryPending, false, new(int32(0))),
		outcome(ids[2], domain.DeliveryDead, false, new(int32(7))),
	}, append([]string{uuid.NewString()}, ids...))
	if len(recorded) != 3 || recorded[ids[0]] != 1 || recorded[ids[1]] != 1 || recorded[ids[2]] != 1 {
		t.Fatalf("recorded %v", recorded)
	}
	if len(found) != 3 || found[ids[2]].Event.State != domain.DeliveryDead || found[ids[0]].Event.Attempts != 1 ||
		found[ids[0]].URL != "https://example.com/hook" || found[ids[0]].Event.OperatorID != op.ID {
		t.Fatalf("found %+v", found)
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

	// A second acked attempt is kept (it needed a retry); the dead event is not pending any more.
	recorded, _ = send([]store.WebhookOutcome{
		outcome(ids[0], domain.DeliveryDelivered, true, nil),
		outcome(ids[2], domain.DeliveryPending, false, nil),
	}, nil)
	if len(recorded) != 1 || recorded[ids[0]] != 2 {
		t.Fatalf("second round recorded %v", recorded)
	}
	if as, err := q.WebhookAttempts(ctx, ids[0]); err != nil || len(as) != 2 || as[1].Attempt != 2 || !as[1].Acked {
		t.Fatalf("second attempt %+v %v", as, err)
	}
	e, err := q.GetWebhookEvent(ctx, nil, ids[0], false)
	if err != nil || e.State != domain.DeliveryDelivered || e.DeliveredAt == nil || e.LastStatus != 500 {
		t.Fatalf("delivered event %+v %v", e, err)
	}
}

// GetWebhookEvent locks the event's row only when asked to.
func TestGetWebhookEventLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, q := setup(t)
	op := newOperator(t, q, domain.OperatorSettings{})
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
