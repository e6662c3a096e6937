package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// webhookEventOf maps a webhook_events row to the domain.
func webhookEventOf(r dbsqlc.WebhookEvent) (domain.WebhookEvent, error) {
	return domain.WebhookEvent{ID: r.ID, OperatorID: r.OperatorID, EventType: r.EventType, SubjectID: r.SubjectID,
		Test: r.Test, Sync: r.Sync, Body: r.Body, State: r.State, Attempts: r.Attempts, LastStatus: r.LastStatus.Int32,
		LastError: r.LastError, LastURL: r.LastUrl, CreatedAt: r.CreatedAt, LastAttemptAt: r.LastAttemptAt,
		DeliveredAt: r.DeliveredAt, DeadAt: r.DeadAt, Txid: r.Txid}, nil
}

// webhookAttemptOf maps a webhook_attempts row to the domain.
func webhookAttemptOf(r dbsqlc.WebhookAttempt) (domain.WebhookAttempt, error) {
	a := domain.WebhookAttempt{EventID: r.EventID, Attempt: r.Attempt, URL: r.Url, Status: r.Status.Int32, Acked: r.Acked,
		Error: r.Error, Duration: time.Duration(r.DurationMs) * time.Millisecond, AttemptedAt: r.AttemptedAt}
	if r.ErrorCode.Valid {
		a.ErrorCode = &r.ErrorCode.Int32
	}
	return a, nil
}

// InsertWebhookEvent adds a pending outbox event. inserted is false, and nothing is written,
// when the operator already has a (non-test) event of this type for this subject.
func (q *Queries) InsertWebhookEvent(ctx context.Context, e domain.WebhookEvent) (inserted bool, err error) {
	n, err := sqlc.InsertWebhookEvent(ctx, q.db, dbsqlc.InsertWebhookEventParams{ID: e.ID, OperatorID: e.OperatorID,
		EventType: e.EventType, SubjectID: e.SubjectID, Test: e.Test, Body: e.Body})
	return n == 1, err
}

// DueWebhook is a queued event due for an attempt.
type DueWebhook struct {
	Event domain.WebhookEvent // ID, OperatorID, EventType, Body
	// AttemptsLeft before the event is dead-lettered, this attempt included.
	AttemptsLeft int32
}

// DueWebhooks returns up to limit of an operator's due events, oldest due first, leaving out
// those in posting.
func (q *Queries) DueWebhooks(ctx context.Context, operatorID string, posting []string, limit int) ([]DueWebhook, error) {
	rows, err := sqlc.DueWebhooks(ctx, q.db, dbsqlc.DueWebhooksParams{OperatorID: operatorID, Posting: posting,
		MaxRows: rowLimit(limit)})
	out := make([]DueWebhook, len(rows))
	for i, r := range rows {
		out[i] = DueWebhook{Event: domain.WebhookEvent{ID: r.ID, OperatorID: operatorID, EventType: r.EventType, Body: r.Body,
			State: domain.DeliveryPending}, AttemptsLeft: r.AttemptsLeft}
	}
	return out, err
}

// TryLockWebhookDrain takes the operator's drain lock until the transaction ends, unless an
// Enqueue of the operator is in flight (then locked is false); it never waits.
func (q *Queries) TryLockWebhookDrain(ctx context.Context, operatorID string) (locked bool, err error) {
	return sqlc.TryLockWebhookDrain(ctx, q.db, operatorID)
}

// WebhooksDue is what an operator's queue holds: whether anything is queued, whether
// something is due now or soon, and when the next event is due.
type WebhooksDue struct {
	Queued, Now, Soon bool
	Next              time.Time
}

// NextWebhookDue reports what the operator's queue holds; soon is how far ahead Soon looks.
func (q *Queries) NextWebhookDue(ctx context.Context, operatorID string, soon time.Duration) (WebhooksDue, error) {
	r, err := sqlc.NextWebhookDue(ctx, q.db, dbsqlc.NextWebhookDueParams{OperatorID: operatorID,
		Soon: pgtype.Interval{Microseconds: soon.Microseconds(), Valid: true}})
	return WebhooksDue{Queued: r.Queued, Now: r.DueNow, Soon: r.DueSoon, Next: r.Due}, err
}

// ClaimWebhookDrain is Enqueue's look at the operator's drain, after its event is queued:
// inserted when there was none (the caller inserts its job); else waitingJob is the job of a
// drain waiting for a retry, which the caller wakes (WakeWebhookDrain), or 0 when a drain is
// live. It writes and locks nothing when a drain exists.
func (q *Queries) ClaimWebhookDrain(ctx context.Context, operatorID string) (inserted bool, waiting bool, err error) {
	rows, err := sqlc.ClaimWebhookDrain(ctx, q.db, operatorID)
	if err != nil || len(rows) == 0 {
		return false, false, err
	}
	return rows[0].Inserted, rows[0].DueAt != nil, nil
}

// WakeWebhookDrain marks the operator's drain as wanted now, when it waits for a retry, and
// returns its job (to make available now); 0 when another Enqueue woke it first.
func (q *Queries) WakeWebhookDrain(ctx context.Context, operatorID string) (int64, error) {
	ids, err := sqlc.WakeWebhookDrain(ctx, q.db, operatorID)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

// SetWebhookDrainJob records the operator's drain job, waiting until due when it is not nil.
func (q *Queries) SetWebhookDrainJob(ctx context.Context, operatorID string, jobID int64, due *time.Time) error {
	return sqlc.SetWebhookDrainJob(ctx, q.db, dbsqlc.SetWebhookDrainJobParams{OperatorID: operatorID,
		JobID: pgtype.Int8{Int64: jobID, Valid: true}, DueAt: due})
}

// EndWebhookDrain forgets the operator's drain: the next Enqueue starts one.
func (q *Queries) EndWebhookDrain(ctx context.Context, operatorID string) error {
	return sqlc.EndWebhookDrain(ctx, q.db, operatorID)
}

// LostWebhookDrains lists the operators with queued events whose drain is missing or whose
// job will not run again (discarded or cancelled by hand, or gone): the periodic repair starts
// them again.
func (q *Queries) LostWebhookDrains(ctx context.Context) ([]string, error) {
	ids, err := sqlc.LostWebhookDrains(ctx, q.db)
	return nonNil(ids), err
}

// WebhookOutcome is an attempt and the state it moves its event to (pending, delivered or
// dead); a pending event is due again after RetryIn.
type WebhookOutcome struct {
	Attempt domain.WebhookAttempt
	State   domain.DeliveryState
	RetryIn time.Duration
}

// QueueRecordWebhookAttempts adds to a batch one statement that records attempts of pending
// events and moves each event to its new state. A delivery that succeeds at its first attempt
// (the common case) leaves no attempts row: the event's own columns (attempts, last status,
// URL and time, delivered_at) say everything, and the outbox writes one row per webhook
// instead of two. Every attempt of an event that needed a retry is kept. each attempt is numbered after its event's
// previous ones, and the event's state and its attempt commit together. When the batch's
// results are read, recorded maps the events that were pending to their attempt numbers;
// events no longer pending are left alone. Each event may appear once per statement.
func QueueRecordWebhookAttempts(ctx context.Context, b *pgx.Batch, outcomes []WebhookOutcome, recorded map[string]int32) {
	n := len(outcomes)
	p := dbsqlc.RecordWebhookAttemptsParams{EventIds: make([]string, n), States: make([]string, n), Urls: make([]string, n),
		Errors: make([]string, n), Statuses: make([]int32, n), DurationsMs: make([]int32, n), Acked: make([]bool, n),
		ErrorCodes: make([]int32, n), HasErrorCodes: make([]bool, n), RetryMs: make([]int64, n)}
	for i, o := range outcomes {
		a := o.Attempt
		p.EventIds[i], p.States[i], p.Urls[i], p.Errors[i] = a.EventID, string(o.State), a.URL, a.Error
		p.Statuses[i], p.DurationsMs[i], p.Acked[i] = a.Status, int4(a.Duration.Milliseconds()), a.Acked
		p.RetryMs[i] = o.RetryIn.Milliseconds()
		if a.ErrorCode != nil {
			p.ErrorCodes[i], p.HasErrorCodes[i] = *a.ErrorCode, true
		}
	}
	inBatch(b, func(db dbsqlc.DBTX) error {
		rows, err := sqlc.RecordWebhookAttempts(ctx, db, p)
		for _, r := range rows {
			recorded[r.ID] = r.Attempts
		}
		return err
	})
}

// InsertSyncWebhook records a synchronous send, already finished (delivered or failed), with
// its one attempt.
func (q *Queries) InsertSyncWebhook(ctx context.Context, e domain.WebhookEvent, a domain.WebhookAttempt) error {
	var code pgtype.Int4
	if a.ErrorCode != nil {
		code = pgtype.Int4{Int32: *a.ErrorCode, Valid: true}
	}
	return sqlc.InsertSyncWebhook(ctx, q.db, dbsqlc.InsertSyncWebhookParams{ID: e.ID, OperatorID: e.OperatorID,
		EventType: e.EventType, SubjectID: e.SubjectID, Test: e.Test, Body: e.Body, Url: a.URL, Status: a.Status,
		Acked: a.Acked, ErrorCode: code, Error: a.Error, DurationMs: int4(a.Duration.Milliseconds())})
}

// GetWebhookEvent returns an event whose operator is in scope (nil: every operator), locking
// its row when forUpdate.
func (q *Queries) GetWebhookEvent(ctx context.Context, scope []string, id string, forUpdate bool) (domain.WebhookEvent, error) {
	var r dbsqlc.WebhookEvent
	var err error
	if forUpdate {
		r, err = sqlc.LockWebhookEvent(ctx, q.db, dbsqlc.LockWebhookEventParams{ID: id, OperatorIDs: scope})
	} else {
		r, err = sqlc.GetWebhookEvent(ctx, q.db, dbsqlc.GetWebhookEventParams{ID: id, OperatorIDs: scope})
	}
	if err != nil {
		return domain.WebhookEvent{}, notFound(err)
	}
	return webhookEventOf(r)
}

// RequeueDeadWebhook moves a dead event back to pending (attempts count on) and queues it,
// due now with five attempts. q must be a transaction.
func (q *Queries) RequeueDeadWebhook(ctx context.Context, id string) (domain.WebhookEvent, error) {
	r, err := sqlc.RequeueDeadWebhook(ctx, q.db, id)
	if err != nil {
		return domain.WebhookEvent{}, notFound(err)
	}
	return q.queue(ctx, r)
}

// queue puts a requeued event in the outbox's queue, due now with five attempts; q must be a
// transaction, so the event is pending exactly when it is queued.
func (q *Queries) queue(ctx context.Context, r dbsqlc.WebhookEvent) (domain.WebhookEvent, error) {
	if err := sqlc.QueueWebhook(ctx, q.db, dbsqlc.QueueWebhookParams{EventID: r.ID, OperatorID: r.OperatorID}); err != nil {
		return domain.WebhookEvent{}, err
	}
	return webhookEventOf(r)
}

// DeadWebhookCursor is the position after the last dead letter of a page.
type DeadWebhookCursor struct {
	DeadAt time.Time
	ID     string
}

// ListDeadWebhooks lists dead events of the operators in scope (nil: every operator), newest
// first, after the cursor when it is not nil.
func (q *Queries) ListDeadWebhooks(ctx context.Context, scope []string, limit int, after *DeadWebhookCursor) ([]domain.WebhookEvent, error) {
	p := dbsqlc.ListDeadWebhooksParams{OperatorIDs: scope, MaxRows: rowLimit(limit)}
	if after != nil {
		p.AfterDeadAt, p.AfterID = &after.DeadAt, &after.ID
	}
	rows, err := sqlc.ListDeadWebhooks(ctx, q.db, p)
	if err != nil || rows == nil {
		return nil, err
	}
	return mapAll(rows, webhookEventOf)
}

// WebhookAttempts returns an event's attempts in order.
func (q *Queries) WebhookAttempts(ctx context.Context, eventID string) ([]domain.WebhookAttempt, error) {
	rows, err := sqlc.WebhookAttempts(ctx, q.db, eventID)
	if err != nil || rows == nil {
		return nil, err
	}
	return mapAll(rows, webhookAttemptOf)
}

// RequeueWebhook moves an event in one of the states from back to pending (attempts count
// on) and queues it, due now with five attempts; ErrNotFound when it is in none of them. q
// must be a transaction.
func (q *Queries) RequeueWebhook(ctx context.Context, id string, from ...domain.DeliveryState) (domain.WebhookEvent, error) {
	states := make([]string, len(from))
	for i, s := range from {
		states[i] = string(s)
	}
	r, err := sqlc.RequeueWebhook(ctx, q.db, dbsqlc.RequeueWebhookParams{ID: id, FromStates: states})
	if err != nil {
		return domain.WebhookEvent{}, notFound(err)
	}
	return q.queue(ctx, r)
}

// FeedPosition is a place in the event feed: after the event (Txid, ID). The zero Txid with
// the nil UUID is the start.
type FeedPosition struct {
	Txid uint64
	ID   string
}

// ListEventFeed reads an operator's event feed after a position, in (txid, id) order: only
// events whose inserting transaction is below the snapshot's xmin, so no event can later commit
// before the last one returned.
func (q *Queries) ListEventFeed(ctx context.Context, operatorID string, after FeedPosition, limit int) ([]domain.WebhookEvent, error) {
	rows, err := sqlc.ListEventFeed(ctx, q.db, dbsqlc.ListEventFeedParams{OperatorID: operatorID, AfterTxid: after.Txid,
		AfterID: after.ID, MaxRows: rowLimit(limit)})
	if err != nil || rows == nil {
		return nil, err
	}
	return mapAll(rows, webhookEventOf)
}
