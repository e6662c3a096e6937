package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const webhookEventColumns = `id::text, operator_id::text, event_type, subject_id, test, sync, body, state, attempts,
	COALESCE(last_status, 0), last_error, last_url, created_at, last_attempt_at, delivered_at, dead_at`

func scanWebhookEvent(row interface{ Scan(...any) error }) (domain.WebhookEvent, error) {
	var e domain.WebhookEvent
	err := row.Scan(&e.ID, &e.OperatorID, &e.EventType, &e.SubjectID, &e.Test, &e.Sync, &e.Body, &e.State, &e.Attempts,
		&e.LastStatus, &e.LastError, &e.LastURL, &e.CreatedAt, &e.LastAttemptAt, &e.DeliveredAt, &e.DeadAt)
	return e, notFound(err)
}

// InsertWebhookEvent adds a pending outbox event. inserted is false, and nothing is written,
// when the operator already has a (non-test) event of this type for this subject.
func (q *Queries) InsertWebhookEvent(ctx context.Context, e domain.WebhookEvent) (inserted bool, err error) {
	tag, err := q.db.Exec(ctx, `
		INSERT INTO webhook_events (id, operator_id, event_type, subject_id, test, body)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (operator_id, event_type, subject_id) WHERE NOT test AND NOT sync DO NOTHING`,
		e.ID, e.OperatorID, e.EventType, e.SubjectID, e.Test, e.Body)
	return tag.RowsAffected() == 1, err
}

// WebhookTarget is what a delivery attempt needs: the event and its operator's current
// webhook URL.
type WebhookTarget struct {
	Event domain.WebhookEvent // ID, OperatorID, EventType, Body, State, Attempts
	URL   string
}

const webhooksForDeliverySQL = `
	SELECT e.id::text, e.operator_id::text, e.event_type, e.body, e.state, e.attempts, o.webhook_url
	FROM webhook_events e JOIN operators o ON o.id = e.operator_id WHERE e.id = ANY($1::uuid[])`

// QueueWebhooksForDelivery adds to a batch the load of events with their operators' current
// webhook URLs; when the batch's results are read, found holds the events that exist.
func QueueWebhooksForDelivery(b *pgx.Batch, ids []string, found map[string]WebhookTarget) {
	b.Queue(webhooksForDeliverySQL, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var t WebhookTarget
			e := &t.Event
			if err := rows.Scan(&e.ID, &e.OperatorID, &e.EventType, &e.Body, &e.State, &e.Attempts, &t.URL); err != nil {
				return err
			}
			found[e.ID] = t
		}
		return rows.Err()
	})
}

// WebhookOutcome is an attempt and the state it moves its event to (pending, delivered or
// dead).
type WebhookOutcome struct {
	Attempt domain.WebhookAttempt
	State   domain.DeliveryState
}

const recordWebhookAttemptsSQL = `
	WITH input AS (
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::int[], $5::bool[], $6::int[], $7::text[], $8::int[])
			AS t (event_id, state, url, status, acked, error_code, error, duration_ms)
	), e AS (
		UPDATE webhook_events w SET
			attempts = w.attempts + 1, state = i.state, last_status = NULLIF(i.status, 0), last_error = i.error,
			last_url = i.url, last_attempt_at = now(),
			delivered_at = CASE WHEN i.state = 'delivered' THEN now() END,
			dead_at = CASE WHEN i.state = 'dead' THEN now() END
		FROM input i
		WHERE w.id = i.event_id AND w.state = 'pending'
		RETURNING w.id, w.attempts
	), a AS (
		INSERT INTO webhook_attempts (event_id, attempt, url, status, acked, error_code, error, duration_ms)
		SELECT e.id, e.attempts, i.url, NULLIF(i.status, 0), i.acked, i.error_code, i.error, i.duration_ms
		FROM e JOIN input i ON i.event_id = e.id
		WHERE NOT i.acked OR e.attempts > 1
	)
	SELECT id::text, attempts FROM e`

// QueueRecordWebhookAttempts adds to a batch one statement that records attempts of pending
// events and moves each event to its new state. A delivery that succeeds at its first attempt
// (the common case) leaves no attempts row: the event's own columns (attempts, last status,
// URL and time, delivered_at) say everything, and the outbox writes one row per webhook
// instead of two. Every attempt of an event that needed a retry is kept. each attempt is numbered after its event's
// previous ones, and the event's state and its attempt commit together. When the batch's
// results are read, recorded maps the events that were pending to their attempt numbers;
// events no longer pending are left alone. Each event may appear once per statement.
func QueueRecordWebhookAttempts(b *pgx.Batch, outcomes []WebhookOutcome, recorded map[string]int32) {
	n := len(outcomes)
	var (
		ids, states, urls, errs = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		statuses, durations     = make([]int32, n), make([]int32, n)
		acked                   = make([]bool, n)
		codes                   = make([]*int32, n)
	)
	for i, o := range outcomes {
		a := o.Attempt
		ids[i], states[i], urls[i], errs[i] = a.EventID, string(o.State), a.URL, a.Error
		statuses[i], durations[i], acked[i], codes[i] = a.Status, int32(min(a.Duration.Milliseconds(), 1<<31-1)), a.Acked, a.ErrorCode
	}
	b.Queue(recordWebhookAttemptsSQL, ids, states, urls, statuses, acked, codes, errs, durations).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var attempt int32
			if err := rows.Scan(&id, &attempt); err != nil {
				return err
			}
			recorded[id] = attempt
		}
		return rows.Err()
	})
}

// InsertSyncWebhook records a synchronous send, already finished (delivered or failed), with
// its one attempt.
func (q *Queries) InsertSyncWebhook(ctx context.Context, e domain.WebhookEvent, a domain.WebhookAttempt) error {
	_, err := q.db.Exec(ctx, `
		WITH e AS (
			INSERT INTO webhook_events (id, operator_id, event_type, subject_id, test, sync, body, state, attempts,
				last_status, last_error, last_url, last_attempt_at, delivered_at)
			VALUES ($1, $2, $3, $4, $5, true, $6, CASE WHEN $9 THEN 'delivered' ELSE 'failed' END, 1,
				NULLIF($8, 0), $11, $7, now(), CASE WHEN $9 THEN now() END)
			RETURNING id
		)
		INSERT INTO webhook_attempts (event_id, attempt, url, status, acked, error_code, error, duration_ms)
		SELECT id, 1, $7, NULLIF($8, 0), $9, $10, $11, $12 FROM e`,
		e.ID, e.OperatorID, e.EventType, e.SubjectID, e.Test, e.Body,
		a.URL, a.Status, a.Acked, a.ErrorCode, a.Error, a.Duration.Milliseconds())
	return err
}

// GetWebhookEvent returns an event whose operator is in scope (nil: every operator), locking
// its row when forUpdate.
func (q *Queries) GetWebhookEvent(ctx context.Context, scope []string, id string, forUpdate bool) (domain.WebhookEvent, error) {
	lock := ""
	if forUpdate {
		lock = " FOR UPDATE"
	}
	return scanWebhookEvent(q.db.QueryRow(ctx, `SELECT `+webhookEventColumns+` FROM webhook_events
		WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2))`+lock, id, scope))
}

// RequeueDeadWebhook moves a dead event back to pending (attempts count on).
func (q *Queries) RequeueDeadWebhook(ctx context.Context, id string) (domain.WebhookEvent, error) {
	return scanWebhookEvent(q.db.QueryRow(ctx, `UPDATE webhook_events SET state = 'pending', dead_at = NULL
		WHERE id = $1 AND state = 'dead' RETURNING `+webhookEventColumns, id))
}

// DeadWebhookCursor is the position after the last dead letter of a page.
type DeadWebhookCursor struct {
	DeadAt time.Time
	ID     string
}

// ListDeadWebhooks lists dead events of the operators in scope (nil: every operator), newest
// first, after the cursor when it is not nil.
func (q *Queries) ListDeadWebhooks(ctx context.Context, scope []string, limit int, after *DeadWebhookCursor) ([]domain.WebhookEvent, error) {
	var at *time.Time
	var id *string
	if after != nil {
		at, id = &after.DeadAt, &after.ID
	}
	rows, err := q.db.Query(ctx, `SELECT `+webhookEventColumns+` FROM webhook_events
		WHERE dead_at IS NOT NULL AND ($1::uuid[] IS NULL OR operator_id = ANY($1))
			AND ($2::timestamptz IS NULL OR (dead_at, id) < ($2, $3::uuid))
		ORDER BY dead_at DESC, id DESC LIMIT $4`, scope, at, id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []domain.WebhookEvent
	for rows.Next() {
		e, err := scanWebhookEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// WebhookAttempts returns an event's attempts in order.
func (q *Queries) WebhookAttempts(ctx context.Context, eventID string) ([]domain.WebhookAttempt, error) {
	rows, err := q.db.Query(ctx, `SELECT event_id::text, attempt, url, COALESCE(status, 0), acked, error_code, error,
		duration_ms, attempted_at FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`, eventID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []domain.WebhookAttempt
	for rows.Next() {
		var a domain.WebhookAttempt
		var ms int64
		if err := rows.Scan(&a.EventID, &a.Attempt, &a.URL, &a.Status, &a.Acked, &a.ErrorCode, &a.Error, &ms, &a.AttemptedAt); err != nil {
			return nil, err
		}
		a.Duration = time.Duration(ms) * time.Millisecond
		out = append(out, a)
	}
	return out, rows.Err()
}
