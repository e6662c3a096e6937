package rpc

import (
	"context"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// EventServer implements coffer.v1.EventService: an operator's event feed (a parent's of a
// sub-operator it names), followed live by SubscribeEvents, and redeliveries.
type EventServer struct {
	Webhooks  *webhook.Service
	Operators *operator.Service
	// Poll is how often a caught-up subscription looks for new events; webhook.FeedPoll when
	// zero.
	Poll time.Duration
	// Draining closes when the process starts shutting down: open streams end then (cleanly;
	// clients resume from their last cursor), instead of holding the shutdown up.
	Draining <-chan struct{}

	following streamCount // SubscribeEvents streams open, by caller and feed
}

// FollowPerFeed bounds the SubscribeEvents streams one caller holds open on one feed (its own,
// or a named sub-operator's) at once in a process. A consumer needs one (a few while it
// redeploys); each polls the database four times a second until the client goes, so a key
// must not open them without bound. Per feed, so a parent may follow each of its
// sub-operators.
const FollowPerFeed = 5

// ListEvents reads the feed after a cursor, oldest first.
func (s *EventServer) ListEvents(ctx context.Context, req *cofferv1.EventServiceListEventsRequest) (*cofferv1.EventServiceListEventsResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	evs, next, err := s.Webhooks.Feed(ctx, scope, req.GetAfter(), int(req.GetLimit()))
	if err != nil {
		return nil, err
	}
	return &cofferv1.EventServiceListEventsResponse{Events: protos(evs, feedEventProto), NextCursor: next}, nil
}

// SubscribeEvents replays the feed from a cursor, then follows it until the client goes.
func (s *EventServer) SubscribeEvents(ctx context.Context, req *cofferv1.SubscribeEventsRequest, stream *connect.ServerStream[cofferv1.SubscribeEventsResponse]) error {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return err
	}
	op, err := callerOperator(ctx)
	if err != nil {
		return err
	}
	feed := strings.ToLower(req.GetOperatorId())
	if feed == "" {
		feed = op.ID
	}
	key := op.ID + ">" + feed
	if !s.following.take(key, FollowPerFeed) {
		e := fault.New(fault.RateLimited, "at most %d event streams open on one feed: close one, or page ListEvents", FollowPerFeed)
		e.RetryAfter = 5
		return e
	}
	defer s.following.release(key)
	return s.Webhooks.Follow(ctx, scope, req.GetAfter(), s.Poll, s.Draining, func(ev domain.WebhookEvent, cursor string) error {
		return stream.Send(&cofferv1.SubscribeEventsResponse{Event: feedEventProto(ev), Cursor: cursor})
	})
}

// RedeliverEvent queues a new delivery of one of the caller's (or a named sub-operator's)
// events.
func (s *EventServer) RedeliverEvent(ctx context.Context, req *cofferv1.RedeliverEventRequest) (*cofferv1.RedeliverEventResponse, error) {
	scope, err := auth.OwnOrSub(ctx, s.Operators, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	op, ok := auth.Operator(ctx)
	if !ok {
		return nil, fault.New(fault.Unauthenticated, "operator key required")
	}
	ev, err := s.Webhooks.Resend(ctx, op.ID, scope, req.GetEventId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.RedeliverEventResponse{Event: feedEventProto(ev)}, nil
}

// feedEventProto is an event of the feed: its webhook's form fields exactly as sent (every
// value a string) and its delivery state.
func feedEventProto(e domain.WebhookEvent) *cofferv1.FeedEvent {
	p := &cofferv1.FeedEvent{EventId: e.ID, OperatorId: e.OperatorID, Type: webhookEventTypes().proto(e.EventType),
		CreatedAt: ts(e.CreatedAt), Test: e.Test, Fields: map[string]string{}, State: deliveryStates().proto(e.State),
		Attempts: e.Attempts}
	if form, err := url.ParseQuery(e.Body); err == nil {
		for k, v := range form {
			if len(v) > 0 {
				p.Fields[k] = v[0]
			}
		}
	}
	if e.LastStatus != 0 {
		p.LastStatus = new(e.LastStatus)
	}
	if e.DeliveredAt != nil {
		p.DeliveredAt = ts(*e.DeliveredAt)
	}
	if e.DeadAt != nil {
		p.DeadAt = ts(*e.DeadAt)
	}
	return p
}
