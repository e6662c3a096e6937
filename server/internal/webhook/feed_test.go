package webhook

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestFollow: Follow replays the feed, then sends events committed later, each with the
// cursor after it, and ends (nil) when its stop channel closes; a bad cursor is INVALID_ARGUMENT
// on "after".
func TestFollow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "http://127.0.0.1:1/hook")
	e.startRiver(nil)
	enqueue := func() string {
		id := newEventID()
		err := pgx.BeginFunc(t.Context(), e.pool, func(tx pgx.Tx) error {
			return e.svc.Enqueue(t.Context(), tx, Event{ID: id, OperatorID: e.opID, SubjectID: id,
				Message: &cofferv1.DepositEvent{Event: "DEPOSIT", DepositId: 1, IdempotencyKey: id}})
		})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	want := []string{enqueue(), enqueue()}
	stop := make(chan struct{})
	got := make(chan string, 10)
	done := make(chan error, 1)
	scope := domain.Operators(e.opID)
	go func() {
		done <- e.svc.Follow(context.Background(), scope, "", 10*time.Millisecond, stop, func(ev domain.WebhookEvent, cursor string) error {
			if cursor != FeedCursor(ev) {
				t.Errorf("cursor %q; want %q", cursor, FeedCursor(ev))
			}
			got <- ev.ID
			return nil
		})
	}()
	want = append(want, enqueue())
	for i, id := range want {
		select {
		case g := <-got:
			if g != id {
				t.Fatalf("event %d: %s; want %s", i, g, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d never came", i)
		}
	}
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not end when stopped")
	}
	err := e.svc.Follow(t.Context(), scope, "xyz", 0, nil, func(domain.WebhookEvent, string) error { return nil })
	if fe, ok := errors.AsType[*fault.Error](err); !ok || fe.Code != fault.InvalidArgument || fe.Field != "after" {
		t.Fatalf("bad cursor: %v", err)
	}
}
