package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestSubmitLease: one holder at a time; a second taker learns when the lease ends; a release
// by a stale token is a no-op; an unknown session is ErrNotFound.
func TestSubmitLease(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	s := testfactory.Session(ctx, t, q.DB(), op.ID, &testfactory.SessionOpts{Kind: domain.SessionWithdraw, ExternalUserID: "u1",
		Amount: "5", TTL: time.Hour})
	until, ok, err := q.TakeSubmitLease(ctx, s.ID, time.Minute)
	if err != nil || !ok || time.Until(until) < 50*time.Second {
		t.Fatalf("take: %v %v %v", until, ok, err)
	}
	held, ok, err := q.TakeSubmitLease(ctx, s.ID, time.Minute)
	if err != nil || ok || !held.Equal(until) {
		t.Fatalf("second take: %v %v %v (held until %v)", held, ok, err, until)
	}
	if err := q.ReleaseSubmitLease(ctx, s.ID, until.Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := q.TakeSubmitLease(ctx, s.ID, time.Minute); ok {
		t.Fatal("a stale release freed the lease")
	}
	if err := q.ReleaseSubmitLease(ctx, s.ID, until); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.TakeSubmitLease(ctx, s.ID, time.Minute); err != nil || !ok {
		t.Fatalf("take after release: %v %v", ok, err)
	}
	if _, _, err := q.TakeSubmitLease(ctx, uuid.NewString(), time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	for _, lock := range []bool{false, true} {
		if ws, err := q.SessionWithdrawals(ctx, s.ID, lock); err != nil || len(ws) != 0 {
			t.Fatalf("withdrawals (lock %v): %v %v", lock, ws, err)
		}
	}
}
