package webhook

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/pagetoken"
	"github.com/cofferhq/coffer/server/internal/store"
)

// The operator's event feed (GET /events, EventService): every webhook event of an operator,
// test and synchronous sends included, in commit order. An event's place is (txid, id), txid
// being the transaction that inserted it (migration 0014); a read returns only events whose
// transaction is below its snapshot's xmin, so every transaction that could still add an event
// is at or after the last position returned: the feed never gains an event behind a position a
// reader has seen, on any replica. A long-running writing transaction holds the feed back until
// it ends; it never reorders it. Events are kept forever (nothing deletes webhook_events).

// Feed page sizes.
const (
	DefaultFeedLimit = 50
	MaxFeedLimit     = 200
)

// feedPages names the feed's cursors.
const feedPages = "events"

// FeedStart is the cursor of the feed's start (what an empty after means).
func FeedStart() string {
	return pagetoken.Encode(feedPages, pagetoken.Position{ID: uuid.Nil.String()})
}

// FeedCursor is the cursor of the position right after ev.
func FeedCursor(ev domain.WebhookEvent) string {
	return pagetoken.Encode(feedPages, pagetoken.Position{Tx: ev.Txid, ID: ev.ID})
}

// decodeFeedCursor reads an after cursor ("" is the start); anything else is INVALID_ARGUMENT
// on "after".
func decodeFeedCursor(after string) (store.FeedPosition, error) {
	if after == "" {
		return store.FeedPosition{ID: uuid.Nil.String()}, nil
	}
	p, err := pagetoken.Decode[pagetoken.Position](feedPages, after)
	if err != nil {
		return store.FeedPosition{}, fault.Invalid("after", "is not a cursor from a previous response")
	}
	return store.FeedPosition{Txid: p.Tx, ID: p.ID}, nil
}

// Feed reads up to limit events of the one operator in scope after the cursor (DefaultFeedLimit
// when limit <= 0, at most MaxFeedLimit), oldest first, and the cursor to resume from: after
// the last event returned, or the same position when there is none yet. It is never empty:
// a reader keeps calling with it, and a page shorter than limit means it has caught up.
func (s *Service) Feed(ctx context.Context, scope domain.Scope, after string, limit int) ([]domain.WebhookEvent, string, error) {
	pos, err := decodeFeedCursor(after)
	if err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultFeedLimit
	}
	limit = min(limit, MaxFeedLimit)
	all, ids := scope.Filter()
	if all || len(ids) != 1 {
		return nil, "", fault.Invalid("operatorId", "name one operator: the event feed is an operator's own")
	}
	evs, err := store.New(s.pool).ListEventFeed(ctx, ids[0], pos, limit)
	if err != nil {
		return nil, "", fault.Wrap(err, "read the event feed")
	}
	next := pagetoken.Encode(feedPages, pagetoken.Position{Tx: pos.Txid, ID: pos.ID})
	if len(evs) > 0 {
		next = FeedCursor(evs[len(evs)-1])
	}
	return evs, next, nil
}

// FeedPoll is how often Follow looks for new events once it has caught up.
const FeedPoll = 250 * time.Millisecond

// Follow replays the feed from the cursor, then follows it live, calling send with each event
// and the cursor right after it, until ctx ends or stop closes (nil then: the process is
// shutting down, and the client resumes elsewhere from its last cursor), or send or a read
// fails. poll is the wait between reads once caught up (FeedPoll when zero); stop may be nil.
func (s *Service) Follow(ctx context.Context, scope domain.Scope, after string, poll time.Duration, stop <-chan struct{},
	send func(domain.WebhookEvent, string) error,
) error {
	if _, err := decodeFeedCursor(after); err != nil {
		return err
	}
	if poll <= 0 {
		poll = FeedPoll
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-timer.C:
		}
		evs, next, err := s.Feed(ctx, scope, after, MaxFeedLimit)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, ev := range evs {
			if err := send(ev, FeedCursor(ev)); err != nil {
				return err
			}
		}
		after = next
		wait := poll
		if len(evs) == MaxFeedLimit {
			wait = 0 // more is waiting: read on at once
		}
		timer.Reset(wait)
	}
}

// Redelivery limits: an operator may ask for RedeliverLimit redeliveries per RedeliverWindow.
const (
	RedeliverLimit  = 10
	RedeliverWindow = time.Minute
)

// Resend queues a new delivery of one of the operator's events to its current webhook URL
// (POST /events/:eventId/redeliver): a delivered or dead-lettered event goes back to pending
// with a new delivery job (five more attempts; the attempt count goes on; the same id and
// body). A pending event already has its delivery queued: it is answered as it is, nothing
// added. An event outside scope is NOT_FOUND; a synchronous send (a test webhook, a mode-A
// WITHDRAW_REQUEST) was answered when it was sent and is FAILED_PRECONDITION. caller's requests
// are limited to RedeliverLimit per RedeliverWindow (RATE_LIMITED with Retry-After, nothing
// queued).
func (s *Service) Resend(ctx context.Context, caller string, scope domain.Scope, eventID string) (domain.WebhookEvent, error) {
	return s.redeliver(ctx, scope, eventID, redelivery{
		noun:     "event",
		badID:    fault.New(fault.NotFound, "event not found"),
		notFound: fault.New(fault.NotFound, "event %s not found", eventID),
		check: func(q *store.Queries, cur domain.WebhookEvent) (bool, error) {
			if cur.Sync {
				return false, fault.New(fault.FailedPrecondition, "event %s was sent synchronously (a test webhook or a synchronous WITHDRAW_REQUEST) and answered then: it cannot be redelivered", eventID)
			}
			if cur.State == domain.DeliveryPending {
				return true, nil // its delivery is queued already
			}
			if _, err := Next(cur.State, Resend); err != nil {
				return false, err
			}
			limit := store.RateLimit{Key: "event-redeliver:" + caller, Max: RedeliverLimit, Window: RedeliverWindow}
			refused, err := q.TakeRateLimits(ctx, limit)
			if err != nil {
				return false, err
			}
			if refused != nil {
				e := fault.New(fault.RateLimited, "at most %d redeliveries per minute; try again in a moment", RedeliverLimit)
				e.RetryAfter = refused.RetryAfter
				return false, e
			}
			return false, nil
		},
		requeue: func(q *store.Queries) (domain.WebhookEvent, error) {
			return q.RequeueWebhook(ctx, eventID, domain.DeliveryDelivered, domain.DeliveryDead)
		},
	})
}
