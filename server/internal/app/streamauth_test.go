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
