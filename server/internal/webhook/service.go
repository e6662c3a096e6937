// Package webhook sends Coffer's signed webhooks to operators.
//
// DEPOSIT, WITHDRAW_COMPLETE and external-mode WITHDRAW_REQUEST go through an outbox:
// Enqueue inserts the event (its id is the webhook-id, its body the exact form body), queued,
// in the caller's transaction, so the webhook exists exactly when the state change commits.
// The operator's drain (drain.go, one River job per operator) posts it, signed with the
// operator's current keys, to the operator's current webhookUrl: five attempts on
// jobs.WebhookSchedule, then the event is dead-lettered until an admin or the service team
// redelivers it. Test webhooks
// and the synchronous WITHDRAW_REQUEST of mode A are one attempt now (Send). Every attempt is
// recorded. The delivery table (transitions.go) is the one source of truth for every change of
// an event's delivery state.
//
// The wire format (form codec, Standard Webhooks signature) is the operators' Go SDK,
// sdk/go/webhook, so the server and the SDKs cannot disagree.
package webhook

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// KeySource yields an operator's valid signing keys in clear, newest first
// (*operator.Service).
type KeySource interface {
	SigningKeys(ctx context.Context, operatorID string) ([][]byte, error)
}

// Options configure the service.
type Options struct {
	// Client posts the webhooks; NewClient(ClientOptions{}) (public targets only) when nil.
	Client *Client
	// Log; discarded when nil.
	Log *slog.Logger
	// Now is the clock of the webhook-timestamp header; time.Now when nil.
	Now func() time.Time
	// KeyCacheTTL is how long a drain reuses its operator's signing keys and URL;
	// DefaultKeyCacheTTL when zero, a load before every batch of posts when negative. Send
	// always loads them.
	KeyCacheTTL time.Duration
	// Jobs inserts the delivery jobs (required; bound to River once the client exists).
	Jobs *jobs.Inserter
	// OperatorConcurrency is how many of one operator's webhooks are posted at once;
	// DefaultOperatorConcurrency when zero.
	OperatorConcurrency int
}

// Service is the webhook service.
type Service struct {
	pool     *pgxpool.Pool
	keys     KeySource
	keyTTL   time.Duration
	db       *batcher[dbCall, dbResult]
	client   *Client
	log      *slog.Logger
	now      func() time.Time
	inserter *jobs.Inserter
	// perOperator bounds one operator's posts in flight.
	perOperator int
}

// New returns the service. Enqueue and Redeliver insert jobs through opts.Jobs, which is
// bound to the River client once that exists (it is built after the workers, which need the
// service).
func New(pool *pgxpool.Pool, keys KeySource, opts Options) *Service {
	if opts.Jobs == nil {
		panic("webhook: New without a job inserter (Options.Jobs)")
	}
	s := &Service{pool: pool, keys: keys, client: opts.Client, log: opts.Log, now: opts.Now, inserter: opts.Jobs,
		perOperator: cmp.Or(max(opts.OperatorConcurrency, 0), DefaultOperatorConcurrency)}
	if s.client == nil {
		s.client = NewClient(ClientOptions{})
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.keyTTL = opts.KeyCacheTTL
	if s.keyTTL == 0 {
		s.keyTTL = DefaultKeyCacheTTL
	}
	s.db = &batcher[dbCall, dbResult]{run: s.runDB, max: 500, parallel: 1, timeout: 10 * time.Second}
	return s
}

// destination loads an operator's webhook URL and signing keys.
func (s *Service) destination(ctx context.Context, operatorID string) (destination, error) {
	op, err := store.New(s.pool).GetOperator(ctx, operatorID)
	if err != nil {
		return destination{}, fmt.Errorf("load operator %s: %w", operatorID, err)
	}
	keys, err := s.keys.SigningKeys(ctx, operatorID)
	return destination{url: op.WebhookURL, keys: keys}, err
}

// jobs is the inserter, or jobs.ErrUnbound before River is bound (checked before any write).
func (s *Service) jobs() (jobs.TxInserter, error) {
	if !s.inserter.Bound() {
		return nil, jobs.ErrUnbound
	}
	return s.inserter, nil
}

// Event is a webhook to send.
type Event struct {
	// ID is the webhook-id; a new UUID when empty.
	ID string
	// OperatorID receives the webhook.
	OperatorID string
	// SubjectID is what the event reports: the deposit id for DEPOSIT, the withdrawal id for
	// WITHDRAW_REQUEST and WITHDRAW_COMPLETE, the session id for a test event. The outbox
	// holds one (non-test) event per operator, type and subject.
	SubjectID string
	// Message is a *cofferv1.DepositEvent, *cofferv1.WithdrawRequestEvent or
	// *cofferv1.WithdrawCompleteEvent (Test set on test events).
	Message proto.Message
}

func (e Event) row() (domain.WebhookEvent, error) {
	body, err := sdk.Encode(e.Message)
	if err != nil {
		return domain.WebhookEvent{}, err
	}
	id := e.ID
	if id == "" {
		id = newEventID()
	} else if _, err := uuid.Parse(id); err != nil {
		return domain.WebhookEvent{}, fmt.Errorf("webhook: event id %q is not a UUID", id)
	}
	if _, err := uuid.Parse(e.OperatorID); err != nil {
		return domain.WebhookEvent{}, fmt.Errorf("webhook: operator id %q is not a UUID", e.OperatorID)
	}
	return domain.WebhookEvent{ID: id, OperatorID: e.OperatorID, EventType: domain.EventType(sdk.EventName(e.Message)),
		SubjectID: e.SubjectID, Test: sdk.IsTest(e.Message), Body: string(body)}, nil
}

// Outbox queues an event in the caller's transaction (Service.Enqueue): what the services
// that report state changes need of webhooks.
type Outbox interface {
	Enqueue(ctx context.Context, tx pgx.Tx, e Event) error
}

// Enqueue adds the event to the outbox in the caller's transaction: the event row, queued,
// commits (or rolls back) with the state change the event reports, and the operator's drain
// is started or woken with it. Enqueuing an event of the same type for the same subject again
// does nothing.
func (s *Service) Enqueue(ctx context.Context, tx pgx.Tx, e Event) error {
	ins, err := s.jobs()
	if err != nil {
		return err
	}
	row, err := e.row()
	if err != nil {
		return err
	}
	if !row.Test && row.SubjectID == "" {
		return errors.New("webhook: an outbox event needs its subject id")
	}
	inserted, err := store.New(tx).InsertWebhookEvent(ctx, row)
	if err != nil {
		return fmt.Errorf("webhook: insert event: %w", err)
	}
	if !inserted {
		s.log.DebugContext(ctx, "webhook already queued", "operator_id", row.OperatorID, "event", row.EventType, "subject_id", row.SubjectID)
		return nil
	}
	return s.wake(ctx, tx, ins, row.OperatorID)
}

// post signs the body with every key (a fresh timestamp, the same id) and posts it.
func (s *Service) post(ctx context.Context, target, id string, body []byte, keys [][]byte) Result {
	return s.client.Post(ctx, target, sdk.Headers(keys, id, s.now(), body), body)
}

func attemptRecord(eventID, target string, r Result) domain.WebhookAttempt {
	a := domain.WebhookAttempt{EventID: eventID, URL: Redact(target), Acked: r.Acked, Error: printable(r.Failure()), Duration: r.Duration,
		Status: int32(r.Status)} //nolint:gosec // G115: an HTTP status, three digits
	if r.coded {
		code := int32(r.ErrorCode) //nolint:gosec // G115: parseAnswer refuses an "error" beyond int32
		a.ErrorCode = &code
	}
	return a
}

// recordContext outlives a cancelled job or request long enough to record what happened.
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// Send makes one signed attempt now, outside the outbox, and records it: test webhooks
// (timeout DefaultTimeout) and the synchronous WITHDRAW_REQUEST of mode A
// (SyncWithdrawTimeout). A failed attempt is a Result with Acked false, never an error: the
// error is for an unknown operator (NOT_FOUND) or an internal failure before sending. A
// timeout or transport failure sets Result.Err, which mode A reads as code 3 (temporarily
// unavailable), never as approval.
func (s *Service) Send(ctx context.Context, operatorID string, e Event, timeout time.Duration) (Result, error) {
	e.OperatorID = operatorID
	if _, err := uuid.Parse(operatorID); err != nil {
		return Result{}, fault.New(fault.NotFound, "operator not found")
	}
	row, err := e.row()
	if err != nil {
		return Result{}, fault.Wrap(err, "encode webhook")
	}
	row.Sync = true
	op, err := store.New(s.pool).GetOperator(ctx, operatorID)
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, fault.New(fault.NotFound, "operator not found")
	} else if err != nil {
		return Result{}, fault.Wrap(err, "load operator")
	}
	keys, err := s.keys.SigningKeys(ctx, operatorID)
	if err != nil {
		return Result{}, fault.Wrap(err, "load signing keys")
	}
	if len(keys) == 0 {
		return Result{}, fault.Wrap(errors.New("no valid key"), "sign webhook for operator %s", operatorID)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sendCtx, cancel := context.WithTimeout(ctx, timeout)
	res := s.post(sendCtx, op.WebhookURL, row.ID, []byte(row.Body), keys)
	cancel()
	rctx, cancel := recordContext(ctx)
	defer cancel()
	if err := store.New(s.pool).InsertSyncWebhook(rctx, row, attemptRecord(row.ID, op.WebhookURL, res)); err != nil {
		// The attempt happened; its answer stands even if the record is lost.
		s.log.ErrorContext(ctx, "record webhook attempt", "event_id", row.ID, "error", err)
	}
	s.logAttempt(ctx, row.ID, row.OperatorID, row.EventType, 1, res, true)
	return res, nil
}

func (s *Service) logAttempt(ctx context.Context, id, operatorID string, eventType domain.EventType, attempt int32, res Result, sync bool) {
	if res.Acked && !s.log.Enabled(ctx, slog.LevelDebug) {
		return // a delivery is logged at debug only: skip building its attributes
	}
	attrs := make([]any, 0, 16) // room for the error a failed attempt adds
	attrs = append(attrs, "event_id", id, "operator_id", operatorID, "event", eventType, "attempt", attempt,
		"status", res.Status, "duration", res.Duration.Round(time.Millisecond), "sync", sync)
	if res.Acked {
		s.log.DebugContext(ctx, "webhook delivered", attrs...)
		return
	}
	s.log.InfoContext(ctx, "webhook attempt failed", append(attrs, "error", res.Failure())...)
}

// TestDepositID is the depositId of a test DEPOSIT for a session: negative, the same for the
// same sid, and within JavaScript's safe integer range (-(2^53-1) .. -1).
func TestDepositID(sid string) int64 {
	h := sha256.Sum256([]byte("coffer test deposit\x00" + sid))
	const maxSafe = 1<<53 - 1
	return -(1 + int64(binary.BigEndian.Uint64(h[:8])%(maxSafe)))
}

// newEventID returns a UUIDv7: time-ordered, so the outbox's indexes grow at their end.
func newEventID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
