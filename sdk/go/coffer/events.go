package coffer

import (
	"context"
	"errors"
	"iter"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
)

// defaultFeedLimit is the page size the server uses when a request names none.
const defaultFeedLimit = 50

// AllEvents iterates over the event feed from req.After (the start when empty) up to now,
// oldest first, page after page; it ends once a page comes back short (caught up). An error
// ends the iteration after it is yielded. To follow the feed beyond now, use SubscribeEvents.
//
//	for e, err := range c.AllEvents(ctx, nil) {
//		if err != nil { return err }
//		record(e.GetEventId(), e.GetFields())
//	}
func (c *Client) AllEvents(ctx context.Context, req *cofferv1.EventServiceListEventsRequest) iter.Seq2[*cofferv1.FeedEvent, error] {
	if req == nil {
		req = &cofferv1.EventServiceListEventsRequest{}
	}
	limit := int(req.GetLimit())
	if limit <= 0 {
		limit = defaultFeedLimit
	}
	return pages(ctx, req, func(r *cofferv1.EventServiceListEventsRequest, t string) { r.After = t },
		func(ctx context.Context, r *cofferv1.EventServiceListEventsRequest) ([]*cofferv1.FeedEvent, string, error) {
			res, err := c.Events.ListEvents(ctx, r)
			next := res.GetNextCursor()
			if len(res.GetEvents()) < limit {
				next = "" // caught up
			}
			return res.GetEvents(), next, err
		})
}

// Reconnection delays of SubscribeEvents: the first, doubled on each failure in a row up to
// the last.
const (
	resubscribeMin = 200 * time.Millisecond
	resubscribeMax = 10 * time.Second
)

// SubscribeEvents follows the event feed from req.After (the start when empty): it replays
// what is there, then yields each new event as it commits, with the cursor right after it,
// until ctx ends (the iteration then simply stops) or the loop breaks. When the stream drops
// (a network failure, a server restart, any end the caller did not ask for) it opens a new one
// after the last cursor it yielded, with backoff: no event is skipped and none repeated. An
// error it cannot get past by reconnecting (a bad key, a bad cursor, an unknown sub-operator)
// is yielded and ends the iteration. Store the cursor with what an event changed to resume
// from it after a restart of your own.
//
//	for msg, err := range c.SubscribeEvents(ctx, &cofferv1.SubscribeEventsRequest{After: saved}) {
//		if err != nil { return err }
//		apply(msg.GetEvent()); saved = msg.GetCursor()
//	}
func (c *Client) SubscribeEvents(ctx context.Context, req *cofferv1.SubscribeEventsRequest) iter.Seq2[*cofferv1.SubscribeEventsResponse, error] {
	if req == nil {
		req = &cofferv1.SubscribeEventsRequest{}
	}
	return func(yield func(*cofferv1.SubscribeEventsResponse, error) bool) {
		r, _ := proto.Clone(req).(*cofferv1.SubscribeEventsRequest)
		delay := resubscribeMin
		for ctx.Err() == nil {
			received, err := c.follow(ctx, r, yield)
			if errors.Is(err, errStop) || ctx.Err() != nil {
				return
			}
			if err != nil && !reconnectable(err) {
				yield(nil, err)
				return
			}
			if received {
				delay = resubscribeMin
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(delay*2, resubscribeMax)
		}
	}
}

// errStop is the caller breaking out of SubscribeEvents's loop.
var errStop = errors.New("coffer: subscription stopped")

// follow runs one stream, yielding its messages and moving r.After past each; received says
// whether any came. The stream's end is its error (nil when the server ended it).
func (c *Client) follow(ctx context.Context, r *cofferv1.SubscribeEventsRequest,
	yield func(*cofferv1.SubscribeEventsResponse, error) bool,
) (received bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.stream.SubscribeEvents(sctx, r)
	if err != nil {
		return false, err
	}
	defer stream.Close()
	for stream.Receive() {
		msg := stream.Msg()
		received = true
		if !yield(msg, nil) {
			return true, errStop
		}
		if msg.GetCursor() != "" {
			r.After = msg.GetCursor()
		}
	}
	return received, stream.Err()
}

// reconnectable says whether a stream's error may pass by opening a new one: transport
// failures and the server going away, not the caller's own mistakes.
func reconnectable(err error) bool {
	return !slices.Contains([]connect.Code{connect.CodeInvalidArgument, connect.CodeUnauthenticated, connect.CodePermissionDenied,
		connect.CodeNotFound, connect.CodeUnimplemented, connect.CodeFailedPrecondition, connect.CodeOutOfRange}, connect.CodeOf(err))
}
