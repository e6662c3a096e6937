package webhook

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// redelivery is what sets one way of redelivering apart (the panel's Redeliver of a dead
// letter, the operator's Resend): the name its messages give the event, its answers to a
// non-UUID id and to an event not in scope, its check of the event and its move back to pending.
type redelivery struct {
	noun            string // "webhook" or "event"
	badID, notFound error
	// check vets the locked event: done answers it as it is (nothing queued); an error refuses it.
	check func(q *store.Queries, cur domain.WebhookEvent) (done bool, err error)
	// requeue moves the event back to pending.
	requeue func(q *store.Queries) (domain.WebhookEvent, error)
}

// redeliver queues a new delivery of eventID in one transaction: the event read in scope and
// locked, r's check, r's requeue (queued due now: the same id and body, five more attempts,
// the attempt count goes on) and its operator's drain woken. Only a queued redelivery is
// logged.
func (s *Service) redeliver(ctx context.Context, scope domain.Scope, eventID string, r redelivery) (domain.WebhookEvent, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return domain.WebhookEvent{}, r.badID
	}
	ins, err := s.jobs()
	if err != nil {
		return domain.WebhookEvent{}, fault.Wrap(err, "redeliver")
	}
	var ev domain.WebhookEvent
	queued := false
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		cur, err := q.GetWebhookEvent(ctx, auth.OperatorIDs(scope), eventID, true)
		if errors.Is(err, store.ErrNotFound) {
			return r.notFound
		} else if err != nil {
			return err
		}
		done, err := r.check(q, cur)
		if err != nil {
			return err
		}
		if done {
			ev = cur
			return nil
		}
		if ev, err = r.requeue(q); err != nil {
			return err
		}
		if err := s.wake(ctx, tx, ins, ev.OperatorID); err != nil {
			return err
		}
		queued = true
		return nil
	})
	if err != nil {
		if fe, ok := errors.AsType[*fault.Error](err); ok {
			return domain.WebhookEvent{}, fe
		}
		return domain.WebhookEvent{}, fault.Wrap(err, "redeliver %s", r.noun)
	}
	if queued {
		s.log.InfoContext(ctx, r.noun+" redelivery queued", "event_id", ev.ID, "operator_id", ev.OperatorID, "attempts_so_far", ev.Attempts)
	}
	return ev, nil
}
