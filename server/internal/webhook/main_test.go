package webhook

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// fastSchedule replaces DESIGN's retry delays in tests.
var fastSchedule = jobs.RetrySchedule{10 * time.Millisecond}

// env is a fresh database with one operator whose webhooks go to url.
type env struct {
	t     *testing.T
	pool  *pgxpool.Pool
	ops   *operator.Service
	svc   *Service
	jobs  *jobs.Inserter // bound by startRiver or bind
	opID  string
	key   string
	river *jobs.Client
}

func newEnv(t *testing.T, url string) *env {
	t.Helper()
	pool := testdb.New(t)
	box, err := secret.NewBox(secret.Random(secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ops := operator.New(pool, box)
	op, key, err := ops.Create(context.Background(), domain.OperatorSettings{Name: new("Acme"), WebhookURL: new(url)})
	if err != nil {
		t.Fatal(err)
	}
	// No cache: the tests change an operator's URL and keys between attempts.
	ins := jobs.NewInserter()
	svc := New(pool, ops, Options{Client: NewClient(ClientOptions{Reach: ReachLoopback, Timeout: 2 * time.Second}), Log: testLog(t),
		KeyCacheTTL: -1, Jobs: ins})
	return &env{t: t, pool: pool, ops: ops, svc: svc, jobs: ins, opID: op.ID, key: key}
}

// newReceivingEnv is an env whose operator's webhooks go to a new receiver answering with answer.
func newReceivingEnv(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) (*env, *receiver) {
	t.Helper()
	rc := newReceiver(t, answer)
	return newEnv(t, rc.URL), rc
}

// newIdleEnv is an env bound to a River client that works no jobs (see bindIdle): what a test
// enqueues stays queued until it starts a client that works it.
func newIdleEnv(t *testing.T, url string) *env {
	t.Helper()
	e := newEnv(t, url)
	e.bindIdle()
	return e
}

func testLog(t testing.TB) *slog.Logger {
	t.Helper()
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

// startRiver works the delivery jobs with the given retry schedule (nil: DESIGN's,
// jobs.WebhookSchedule).
func (e *env) startRiver(schedule jobs.RetrySchedule) *jobs.Client {
	e.t.Helper()
	c := e.newRiver(schedule, true)
	e.bind(c)
	e.river = c
	return c
}

// bind binds the service's job inserter to c.
func (e *env) bind(c *jobs.Client) {
	e.t.Helper()
	if err := e.jobs.Bind(c); err != nil {
		e.t.Fatal(err)
	}
}

// bindIdle binds the service's job inserter to a client that works no jobs: what is enqueued
// stays queued until the test starts a client that works it.
func (e *env) bindIdle() {
	e.t.Helper()
	e.bind(e.newRiver(nil, false))
}

// newRiver builds a River client working the webhook jobs (started when start), its options
// changed by tweaks.
func (e *env) newRiver(schedule jobs.RetrySchedule, start bool, tweaks ...func(*jobs.Options)) *jobs.Client {
	e.t.Helper()
	w := river.NewWorkers()
	river.AddWorker(w, &DrainWorker{Service: e.svc, Schedule: schedule})
	river.AddWorker(w, &DeliverWorker{})
	river.AddWorker(w, &RepairWorker{Service: e.svc})
	opts := jobs.Options{Work: start, PollInterval: 20 * time.Millisecond, Workers: w}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	c, err := jobs.NewClient(e.pool, testLog(e.t), opts)
	if err != nil {
		e.t.Fatal(err)
	}
	if start {
		if err := c.Start(context.Background()); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.Stop(ctx) //nolint:errcheck
		})
	}
	return c
}

// enqueue commits one outbox event and returns its id.
func (e *env) enqueue(msg proto.Message, subject string) string {
	e.t.Helper()
	ev := Event{ID: newID(), OperatorID: e.opID, SubjectID: subject, Message: msg}
	err := store.InTx(context.Background(), e.pool, func(tx pgx.Tx) error { return e.svc.Enqueue(context.Background(), tx, ev) })
	if err != nil {
		e.t.Fatal(err)
	}
	return ev.ID
}

func (e *env) event(id string) domain.WebhookEvent {
	e.t.Helper()
	ev, err := store.New(e.pool).GetWebhookEvent(context.Background(), nil, id, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

func (e *env) attempts(id string) []domain.WebhookAttempt {
	e.t.Helper()
	a, err := store.New(e.pool).WebhookAttempts(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// drainJobs lists the River states of an operator's drain jobs, oldest first.
func (e *env) drainJobs(operatorID string) []string {
	e.t.Helper()
	return testfactory.Column[string](context.Background(), e.t, e.pool,
		`SELECT state::text FROM river_job WHERE kind = 'webhook_drain' AND args->>'operator_id' = $1 ORDER BY id`, operatorID)
}

// waitDrainEnded waits until the operator's drain has ended with nothing queued: no
// webhook_drains row, no drain job left to run.
func (e *env) waitDrainEnded(operatorID string) {
	e.t.Helper()
	waitFor(e.t, "the drain's end", 10*time.Second, func() bool {
		var rows int
		e.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_drains WHERE operator_id = $1`, operatorID).Scan(&rows) //nolint:errcheck
		if rows != 0 {
			return false
		}
		for _, st := range e.drainJobs(operatorID) {
			if st != "completed" && st != "discarded" && st != "cancelled" {
				return false
			}
		}
		return true
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) waitState(id string, state domain.DeliveryState) domain.WebhookEvent {
	e.t.Helper()
	var ev domain.WebhookEvent
	waitFor(e.t, "event "+string(state), 20*time.Second, func() bool { ev = e.event(id); return ev.State == state })
	return ev
}

func newID() string { return uuid.NewString() }

// request is one webhook as the receiver saw it.
type request struct {
	header http.Header
	body   string
	at     time.Time
}

// receiver is a webhook endpoint whose n-th answer (0-based) is answers(n).
type receiver struct {
	*httptest.Server

	mu       sync.Mutex
	requests []request
	answer   func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.requests)
		rc.requests = append(rc.requests, request{header: r.Header.Clone(), body: string(body), at: time.Now()})
		answer := rc.answer
		rc.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) setAnswer(a func(n int, w http.ResponseWriter, r *http.Request)) {
	rc.mu.Lock()
	rc.answer = a
	rc.mu.Unlock()
}

func (rc *receiver) got() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.requests...)
}

func ok(_ int, w http.ResponseWriter, _ *http.Request) {
	reply(w, 200, `{"error":0,"description":"ok"}`)
}

func failing(_ int, w http.ResponseWriter, _ *http.Request) { reply(w, 500, `{"error":1}`) }

func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body) //nolint:errcheck
}

var confirmed = timestamppb.New(time.Date(2026, 11, 22, 5, 38, 20, 719_000_000, time.UTC))

func depositEvent(id int64) *cofferv1.DepositEvent {
	return &cofferv1.DepositEvent{
		DepositId: id, IdempotencyKey: "1337:0xabc:0", ExternalUserId: "user-1",
		SessionRef: new("sr_0123456789abcdef0123456789abcdef"), SessionAmount: new("25.00"),
		Amount: "25000000", AmountInDollar: new("25.00"), AmountInLocalCurrency: new("25.00"),
		LocalCurrencyCode: "USD", CurrentRate: "1", Pair: "USD/USD", GrossAmount: "25000000", FeeAmount: "0",
		FeeInDollar: new("0.000000"), Type: "ERC20",
		ContractAddress: new("0x5FbDB2315678afecb367f032d93F642f64180aa3"),
		TransactionHash: new("0x8d3f2c6a1b7e4f0a9c5d2e8b3a6f1c4d7e0b9a2c5f8e1d4a7b0c3f6e9d2a5b8c"),
		ChainId:         1337, ConfirmedAt: confirmed,
	}
}
