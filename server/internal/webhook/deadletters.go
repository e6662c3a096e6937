package webhook

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/pagetoken"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Page sizes of ListDead.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// ListDead lists dead-lettered webhooks, newest first, of the operators in scope, optionally
// of one operator (NOT_FOUND outside the scope). pageSize 0 is DefaultPageSize; pageToken is a
// previous page's next token.
func (s *Service) ListDead(ctx context.Context, scope domain.Scope, operatorID string, pageSize int, pageToken string) ([]domain.WebhookEvent, string, error) {
	if operatorID != "" {
		if _, err := uuid.Parse(operatorID); err != nil {
			return nil, "", fault.Invalid("operatorId", "is not a UUID")
		}
	}
	scope, ok := scope.Narrow(operatorID)
	if !ok {
		return nil, "", fault.New(fault.NotFound, "operator not found")
	}
	size := pageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	size = min(size, MaxPageSize)
	var cursor *store.DeadWebhookCursor
	if pageToken != "" {
		c, err := pagetoken.Decode[pagetoken.TimeID](deadLetterPages, pageToken)
		if err != nil {
			return nil, "", err
		}
		cursor = &store.DeadWebhookCursor{DeadAt: c.At, ID: c.ID}
	}
	rows, err := store.New(s.pool).ListDeadWebhooks(ctx, auth.OperatorIDs(scope), size+1, cursor)
	if err != nil {
		return nil, "", fault.Wrap(err, "list dead letters")
	}
	next := ""
	if len(rows) > size {
		rows = rows[:size]
		last := rows[size-1]
		next = pagetoken.Encode(deadLetterPages, pagetoken.TimeID{At: *last.DeadAt, ID: last.ID})
	}
	return rows, next, nil
}

// deadLetterPages names ListDead's page tokens.
const deadLetterPages = "dead-letters"

// Redeliver queues a dead-lettered webhook again: the same id and body, a new delivery job
// (five more attempts; the attempt count goes on). An event outside scope is NOT_FOUND; one that is not dead is CONFLICT.
func (s *Service) Redeliver(ctx context.Context, scope domain.Scope, eventID string) (domain.WebhookEvent, error) {
	return s.redeliver(ctx, scope, eventID, redelivery{
		noun:     "webhook",
		badID:    fault.New(fault.NotFound, "webhook not found"),
		notFound: fault.New(fault.NotFound, "webhook not found"),
		check: func(_ *store.Queries, cur domain.WebhookEvent) (bool, error) {
			if _, err := Next(cur.State, Redeliver); err != nil {
				// The API has always answered CONFLICT here (the state changed under the caller).
				return false, fault.New(fault.Conflict, "webhook %s is %s: only a dead-lettered webhook can be redelivered", eventID, cur.State)
			}
			return false, nil
		},
		requeue: func(q *store.Queries) (domain.WebhookEvent, error) { return q.RequeueDeadWebhook(ctx, eventID) },
	})
}

// Get returns one webhook of an operator in scope.
func (s *Service) Get(ctx context.Context, scope domain.Scope, eventID string) (domain.WebhookEvent, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return domain.WebhookEvent{}, fault.New(fault.NotFound, "webhook not found")
	}
	ev, err := store.New(s.pool).GetWebhookEvent(ctx, auth.OperatorIDs(scope), eventID, false)
	if errors.Is(err, store.ErrNotFound) {
		return domain.WebhookEvent{}, fault.New(fault.NotFound, "webhook not found")
	} else if err != nil {
		return domain.WebhookEvent{}, fault.Wrap(err, "get webhook")
	}
	return ev, nil
}
