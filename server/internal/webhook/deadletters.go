package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Page sizes of ListDead.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// ListDead lists dead-lettered webhooks, newest first, of the operators in scope (nil: every
// operator; an admin's auth.Admin.Scope), optionally of one operator (NOT_FOUND outside the
// scope). pageSize 0 is DefaultPageSize; pageToken is a previous page's next token.
func (s *Service) ListDead(ctx context.Context, scope []string, operatorID string, pageSize int, pageToken string) ([]domain.WebhookEvent, string, error) {
	if operatorID != "" {
		if _, err := uuid.Parse(operatorID); err != nil {
			return nil, "", fault.Invalid("operatorId", "is not a UUID")
		}
		if scope != nil && !slices.Contains(scope, operatorID) {
			return nil, "", fault.New(fault.NotFound, "operator not found")
		}
		scope = []string{operatorID}
	}
	size := pageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	size = min(size, MaxPageSize)
	cursor, err := decodePageToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	rows, err := store.New(s.pool).ListDeadWebhooks(ctx, scope, size+1, cursor)
	if err != nil {
		return nil, "", fault.Wrap(err, "list dead letters")
	}
	next := ""
	if len(rows) > size {
		rows = rows[:size]
		last := rows[size-1]
		next = encodePageToken(store.DeadWebhookCursor{DeadAt: *last.DeadAt, ID: last.ID})
	}
	return rows, next, nil
}

// Redeliver queues a dead-lettered webhook again: the same id and body, a new delivery job
// (five more attempts; the attempt count goes on). An event outside scope (nil: every
// operator) is NOT_FOUND; one that is not dead is CONFLICT.
func (s *Service) Redeliver(ctx context.Context, scope []string, eventID string) (domain.WebhookEvent, error) {
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
		cur, err := q.GetWebhookEvent(ctx, scope, eventID, true)
		if errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "webhook not found")
		} else if err != nil {
			return err
		}
		if cur.State != domain.DeliveryDead {
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
		var fe *fault.Error
		if errors.As(err, &fe) {
			return domain.WebhookEvent{}, fe
		}
		return domain.WebhookEvent{}, fault.Wrap(err, "redeliver webhook")
	}
	s.log.InfoContext(ctx, "webhook redelivery queued", "event_id", ev.ID, "operator_id", ev.OperatorID, "attempts_so_far", ev.Attempts)
	return ev, nil
}

// Get returns one webhook of an operator in scope (nil: every operator).
func (s *Service) Get(ctx context.Context, scope []string, eventID string) (domain.WebhookEvent, error) {
	if _, err := uuid.Parse(eventID); err != nil {
		return domain.WebhookEvent{}, fault.New(fault.NotFound, "webhook not found")
	}
	ev, err := store.New(s.pool).GetWebhookEvent(ctx, scope, eventID, false)
	if errors.Is(err, store.ErrNotFound) {
		return domain.WebhookEvent{}, fault.New(fault.NotFound, "webhook not found")
	} else if err != nil {
		return domain.WebhookEvent{}, fault.Wrap(err, "get webhook")
	}
	return ev, nil
}

// Page tokens are "<dead_at in Unix microseconds>.<event id>", base64url.
func encodePageToken(c store.DeadWebhookCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.DeadAt.UnixMicro(), 10) + "." + c.ID))
}

func decodePageToken(tok string) (*store.DeadWebhookCursor, error) {
	if tok == "" {
		return nil, nil
	}
	bad := fault.Invalid("pageToken", "is not a token from a previous page")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, bad
	}
	micros, id, ok := strings.Cut(string(b), ".")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !ok || err != nil {
		return nil, bad
	}
	if _, err := uuid.Parse(id); err != nil {
		return nil, bad
	}
	return &store.DeadWebhookCursor{DeadAt: time.UnixMicro(us), ID: id}, nil
}
