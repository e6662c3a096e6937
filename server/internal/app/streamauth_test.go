package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

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
	stream, err := c.SubscribeEvents(sctx, &cofferv1.SubscribeEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if !stream.Receive() || stream.Msg().GetEvent().GetEventId() != first {
		t.Fatalf("stream before the rotation: %v, err %v; want event %s", stream.Msg(), stream.Err(), first)
	}
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
	fresh, err := c.SubscribeEvents(nctx, &cofferv1.SubscribeEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if !fresh.Receive() || fresh.Msg().GetEvent().GetEventId() != first {
		t.Fatalf("stream of the new key: %v, err %v; want event %s", fresh.Msg(), fresh.Err(), first)
	}
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
