package webhook

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
	if _, err := uuid.Parse(eventID); err != nil {
		return domain.WebhookEvent{}, fault.New(fault.NotFound, "webhook not found")
	}
	ins, err := s.jobs()
	if err != nil {
		return domain.WebhookEvent{}, fault.Wrap(err, "redeliver")
	}
	var ev domain.WebhookEvent
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		cur, err := q.GetWebhookEvent(ctx, auth.OperatorIDs(scope), eventID, true)
		if errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "webhook not found")
		} else if err != nil {
			return err
		}
		if _, err := Next(cur.State, Redeliver); err != nil {
			// The API has always answered CONFLICT here (the state changed under the caller).
			return fault.New(fault.Conflict, "webhook %s is %s: only a dead-lettered webhook can be redelivered", eventID, cur.State)
		}
		if ev, err = q.RequeueDeadWebhook(ctx, eventID); err != nil {
			return err
		}
		res, err := ins.InsertTx(ctx, tx, DeliverArgs{EventID: eventID}, nil)
		if err != nil {
			return err
		}
		if res.UniqueSkippedAsDuplicate {
			// The job that dead-lettered it has not finished yet (River records its end just
			// after the event is marked dead).
			return fault.New(fault.Conflict, "webhook %s is still finishing its last attempt; try again in a moment", eventID)
		}
		return nil
	})
	if err != nil {
		if fe, ok := errors.AsType[*fault.Error](err); ok {
			return domain.WebhookEvent{}, fe
		}
		return domain.WebhookEvent{}, fault.Wrap(err, "redeliver webhook")
	}
	s.log.InfoContext(ctx, "webhook redelivery queued", "event_id", ev.ID, "operator_id", ev.OperatorID, "attempts_so_far", ev.Attempts)
	return ev, nil
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
