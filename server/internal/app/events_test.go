package app_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// enqueueEvent adds a test DEPOSIT to the outbox of operatorID in its own transaction on pool.
// early takes the transaction's id before anything else (so it is low) and holds it open for
// hold before inserting; otherwise the event is inserted first and the commit is held back.
// Either way transactions commit in another order than they started.
func enqueueEvent(ctx context.Context, pool *pgxpool.Pool, svc *webhook.Service, operatorID string, hold time.Duration, early bool) (string, error) {
	id := uuid.NewString()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if early {
			if _, err := tx.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil {
				return err
			}
			time.Sleep(hold)
		}
		if err := svc.Enqueue(ctx, tx, webhook.Event{ID: id, OperatorID: operatorID, SubjectID: id,
			Message: &cofferv1.DepositEvent{Event: "DEPOSIT", DepositId: 1, IdempotencyKey: id}}); err != nil {
			return err
		}
		if !early {
			time.Sleep(hold)
		}
		return nil
	})
	return id, err
}

// readAll reads the whole feed from its start over ListEvents, a page of limit at a time.
func readAll(ctx context.Context, c cofferv1connect.EventServiceClient, limit int32) ([]string, error) {
	var ids []string
	after := ""
	for {
		res, err := c.ListEvents(ctx, &cofferv1.EventServiceListEventsRequest{After: after, Limit: limit})
		if err != nil {
			return nil, err
		}
		for _, e := range res.Events {
			ids = append(ids, e.EventId)
		}
		if res.NextCursor == "" {
			return nil, errors.New("empty nextCursor")
		}
		after = res.NextCursor
		if len(res.Events) < int(limit) {
			return ids, nil
		}
	}
}

// TestEventFeedGapless: two Coffer instances on one database; producers on both commit events
// in another order than their transactions started (some take their transaction id first and
// insert late, some insert first and commit late), while a subscriber follows SubscribeEvents
// on one instance and a poller pages ListEvents on the other. Each sees every event exactly
// once, and the feed read again from the start always begins with exactly what a reader has
// seen: nothing ever appears behind a position already read.
func TestEventFeedGapless(t *testing.T) {
	dbURL := testdb.URL(t)
	env1 := apptest.Start(t, apptest.Options{DatabaseURL: dbURL})
	env2 := apptest.Start(t, apptest.Options{DatabaseURL: dbURL, MasterKey: env1.MasterKey})
	op, key := env1.Operator(t, domain.OperatorSettings{})
	other, _ := env1.Operator(t, domain.OperatorSettings{})
	ctx := withBearer(t.Context(), key)
	c1 := cofferv1connect.NewEventServiceClient(http.DefaultClient, env1.URL)
	c2 := cofferv1connect.NewEventServiceClient(http.DefaultClient, env2.URL, connect.WithGRPC())

	const producers, perProducer = 12, 5
	const total = producers * perProducer
	var mu sync.Mutex
	produced := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			env := env1
			if p%2 == 1 {
				env = env2
			}
			for i := range perProducer {
				hold := time.Duration((p*7+i*13)%5) * 60 * time.Millisecond
				if (p+i)%6 == 0 {
					hold = 900 * time.Millisecond // a long transaction: it holds the feed back
				}
				id, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, hold, (p+i)%2 == 0)
				if err != nil {
					errs <- err
					return
				}
				// Another operator's events interleave; they never show in op's feed.
				if _, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, other.ID, 0, false); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				produced[id] = true
				mu.Unlock()
			}
		})
	}

	// The subscriber (gRPC on instance 2).
	subCtx, stopSub := context.WithTimeout(ctx, 60*time.Second)
	defer stopSub()
	subscribed := make(chan []string, 1)
	go func() {
		var got []string
		defer func() { subscribed <- got }()
		stream, err := c2.SubscribeEvents(subCtx, &cofferv1.SubscribeEventsRequest{})
		if err != nil {
			return
		}
		defer stream.Close()
		for len(got) < total && stream.Receive() {
			got = append(got, stream.Msg().GetEvent().GetEventId())
		}
	}()

	// The poller (Connect on instance 1): pages of 7; after each page the whole feed read again
	// from its start must begin with exactly what it has seen.
	var polled []string
	after := ""
	deadline := time.Now().Add(60 * time.Second)
	for len(polled) < total && time.Now().Before(deadline) {
		res, err := c1.ListEvents(ctx, &cofferv1.EventServiceListEventsRequest{After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Events {
			polled = append(polled, e.EventId)
		}
		after = res.NextCursor
		again, err := readAll(ctx, c2, 200)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) < len(polled) || !slices.Equal(again[:len(polled)], polled) {
			t.Fatalf("the feed changed behind a read position:\n seen  %v\n again %v", polled, again)
		}
		if len(res.Events) < 7 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sub := <-subscribed

	final, err := readAll(ctx, c1, 13)
	if err != nil {
		t.Fatal(err)
	}
	for name, seq := range map[string][]string{"subscriber": sub, "poller": polled, "final read": final} {
		if len(seq) != total {
			t.Errorf("%s saw %d events; want %d", name, len(seq), total)
		}
		seen := map[string]bool{}
		for _, id := range seq {
			if seen[id] {
				t.Errorf("%s saw %s twice", name, id)
			}
			if !produced[id] {
				t.Errorf("%s saw %s, which is not one of the operator's events", name, id)
			}
			seen[id] = true
		}
		if !slices.Equal(seq, final) {
			t.Errorf("%s's order differs from the final read:\n %v\n %v", name, seq, final)
		}
	}
}

// TestEventStreamResume: a subscriber that goes away after k events and resumes from the last
// cursor it received sees every event exactly once.
func TestEventStreamResume(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	ctx := withBearer(t.Context(), key)
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	const total, k = 25, 9
	var want []string
	for i := range total {
		id, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	var got []string
	cursor := ""
	receive := func(most int) {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		stream, err := c.SubscribeEvents(sctx, &cofferv1.SubscribeEventsRequest{After: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < most && stream.Receive(); n++ {
			got = append(got, stream.Msg().GetEvent().GetEventId())
			cursor = stream.Msg().GetCursor()
		}
		cancel() // the client goes mid-stream
		_ = stream.Close()
	}
	receive(k)
	if len(got) != k {
		t.Fatalf("first stream gave %d events; want %d", len(got), k)
	}
	// More events while the client is away.
	for range 5 {
		id, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	receive(len(want) - k)
	slices.Sort(want)
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, want) {
		t.Errorf("resumed stream: got %d events %v; want %d %v", len(got), got, len(want), want)
	}
	if len(slices.Compact(sorted)) != len(got) {
		t.Errorf("duplicates across the resume: %v", got)
	}
}

// TestEventIsolation: over Connect, an operator's feed holds its own events only; a parent
// reads a sub-operator's by naming it; another operator's feed, stream and events are
// NOT_FOUND, never PERMISSION_DENIED.
func TestEventIsolation(t *testing.T) {
	env, a, b, sub := startTenants(t)
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	as := func(key string) context.Context { return withBearer(t.Context(), key) }
	events := map[string]string{}
	for _, op := range []domain.Operator{a.Operator, b.Operator, sub.Operator} {
		id, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		events[op.ID] = id
		waitFeed(t, env, op.ID, 1)
	}
	for _, tc := range []struct{ name, key, operatorID, want string }{
		{"A", a.key, "", a.ID}, {"B", b.key, "", b.ID}, {"sub-operator", sub.key, "", sub.ID},
		{"A naming its sub-operator", a.key, sub.ID, sub.ID},
	} {
		res, err := c.ListEvents(as(tc.key), &cofferv1.EventServiceListEventsRequest{OperatorId: tc.operatorID})
		if err != nil || len(res.Events) != 1 || res.Events[0].EventId != events[tc.want] {
			t.Errorf("%s lists %v %v; want only %s", tc.name, res, err, events[tc.want])
		}
		sctx, cancel := context.WithTimeout(as(tc.key), 10*time.Second)
		stream, err := c.SubscribeEvents(sctx, &cofferv1.SubscribeEventsRequest{OperatorId: tc.operatorID})
		if err != nil || !stream.Receive() || stream.Msg().GetEvent().GetEventId() != events[tc.want] {
			t.Errorf("%s subscribes: %v", tc.name, err)
		}
		cancel()
	}
	for _, tc := range []struct{ name, key, owner, operatorID string }{
		{"B redelivers A's", b.key, a.ID, ""},
		{"B redelivers A's naming A", b.key, a.ID, a.ID},
		{"A redelivers its sub-operator's without naming it", a.key, sub.ID, ""},
		{"the sub-operator redelivers its parent's", sub.key, a.ID, a.ID},
		{"A redelivers B's naming its sub-operator", a.key, b.ID, sub.ID},
	} {
		_, err := c.RedeliverEvent(as(tc.key), &cofferv1.RedeliverEventRequest{EventId: events[tc.owner], OperatorId: tc.operatorID})
		wantConnectError(t, tc.name, err, connect.CodeNotFound, "NOT_FOUND")
		if tc.operatorID != "" && tc.operatorID != sub.ID {
			_, err = c.ListEvents(as(tc.key), &cofferv1.EventServiceListEventsRequest{OperatorId: tc.operatorID})
			wantConnectError(t, tc.name+" (list)", err, connect.CodeNotFound, "NOT_FOUND")
			stream, err := c.SubscribeEvents(as(tc.key), &cofferv1.SubscribeEventsRequest{OperatorId: tc.operatorID})
			if err == nil {
				if stream.Receive() {
					t.Errorf("%s (stream): received %v", tc.name, stream.Msg())
				}
				err = stream.Err()
			}
			wantConnectError(t, tc.name+" (stream)", err, connect.CodeNotFound, "NOT_FOUND")
		}
	}
	// A bad cursor is INVALID_ARGUMENT on "after", on the stream too.
	stream, err := c.SubscribeEvents(as(a.key), &cofferv1.SubscribeEventsRequest{After: "xyz"})
	if err == nil {
		stream.Receive()
		err = stream.Err()
	}
	wantConnectError(t, "bad cursor", err, connect.CodeInvalidArgument, "INVALID_ARGUMENT")
}

// waitFeed waits until the feed of operatorID shows n events: an event shows once every
// transaction that started before it committed has ended, anywhere on the cluster.
func waitFeed(t *testing.T, env *apptest.Env, operatorID string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		evs, _, err := env.Services.Webhooks.Feed(t.Context(), domain.Operators(operatorID), "", webhook.MaxFeedLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed of %s shows %d events after 15 s; want %d", operatorID, len(evs), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRotatedKeyEndsOpenStream: a SubscribeEvents stream opened with a key that is then
// rotated out at once (grace 0) ends UNAUTHENTICATED within rpc.StreamRecheck, instead of
// following the operator's events for as long as the client keeps it open; events enqueued
// after the rotation are not sent on it. The new key opens a stream that is served.
func TestRotatedKeyEndsOpenStream(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, oldKey := env.Operator(t, domain.OperatorSettings{})
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	sctx, cancel := context.WithTimeout(withBearer(t.Context(), oldKey), rpc.StreamRecheck+20*time.Second)
	defer cancel()
	// An event first: the stream's response (headers included) starts with it.
	first, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	stream := subscribeFrom(sctx, t, c, first, "stream before the rotation")
	defer stream.Close()
	newKey, _, err := env.Services.Operators.RotateKey(t.Context(), op.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for stream.Receive() {
		// The event enqueued right after the rotation may still be read before the next
		// check; nothing may arrive once the stream should have ended.
		if time.Since(start) > rpc.StreamRecheck+5*time.Second {
			t.Fatalf("stream of a rotated-out key still serves events: %v", stream.Msg())
		}
	}
	if got := connect.CodeOf(stream.Err()); got != connect.CodeUnauthenticated {
		t.Fatalf("stream of a rotated-out key ended with %v (%v) after %v; want unauthenticated", got, stream.Err(), time.Since(start))
	}
	if d := time.Since(start); d > rpc.StreamRecheck+5*time.Second {
		t.Errorf("stream ended %v after the rotation; want within %v", d, rpc.StreamRecheck)
	}

	// The new key is served, from the start of the feed.
	nctx, ncancel := context.WithTimeout(withBearer(t.Context(), newKey), 10*time.Second)
	defer ncancel()
	subscribeFrom(nctx, t, c, first, "stream of the new key").Close()
}

// subscribeFrom opens a SubscribeEvents stream and checks that its first event is first.
func subscribeFrom(ctx context.Context, t *testing.T, c cofferv1connect.EventServiceClient, first, what string,
) *connect.ServerStreamForClient[cofferv1.SubscribeEventsResponse] {
	t.Helper()
	stream, err := c.SubscribeEvents(ctx, &cofferv1.SubscribeEventsRequest{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !stream.Receive() || stream.Msg().GetEvent().GetEventId() != first {
		t.Fatalf("%s: %v, err %v; want event %s", what, stream.Msg(), stream.Err(), first)
	}
	return stream
}

// TestEventStreamsPerFeed: one key holds at most rpc.FollowPerFeed SubscribeEvents streams
// on one feed at once; one more is RATE_LIMITED (nothing else changes), a stream closed
// frees its place, and the cap is per feed: the same key still follows its sub-operator's
// feed, and another operator is not limited by it.
func TestEventStreamsPerFeed(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	sub, _ := env.Operator(t, domain.OperatorSettings{ParentID: &op.ID})
	other, otherKey := env.Operator(t, domain.OperatorSettings{})
	for _, id := range []string{op.ID, sub.ID, other.ID} {
		// An event in each feed: a stream's response starts with it.
		if _, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, id, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	open := func(cred, operatorID string) (*connect.ServerStreamForClient[cofferv1.SubscribeEventsResponse], context.CancelFunc, error) {
		ctx, cancel := context.WithTimeout(withBearer(t.Context(), cred), 30*time.Second)
		s, err := c.SubscribeEvents(ctx, &cofferv1.SubscribeEventsRequest{OperatorId: operatorID})
		if err == nil && !s.Receive() {
			err = s.Err()
		}
		if err != nil {
			cancel()
			return nil, nil, err
		}
		t.Cleanup(func() { cancel(); _ = s.Close() })
		return s, cancel, nil
	}
	var cancels []context.CancelFunc
	for i := range rpc.FollowPerFeed {
		_, cancel, err := open(key, "")
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		cancels = append(cancels, cancel)
	}
	if _, _, err := open(key, ""); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("stream %d on one feed: %v; want resource_exhausted (RATE_LIMITED)", rpc.FollowPerFeed+1, err)
	}
	if _, _, err := open(key, sub.ID); err != nil {
		t.Errorf("the parent following its sub-operator's feed: %v", err)
	}
	if _, _, err := open(otherKey, ""); err != nil {
		t.Errorf("another operator's stream: %v", err)
	}
	cancels[0]()
	// The server sees the client go shortly after; its place is then free.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := open(key, "")
		if err == nil {
			break
		}
		if connect.CodeOf(err) != connect.CodeResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("a stream after one closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
