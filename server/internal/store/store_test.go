package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// setup gives the test a database of its own: its pool and the queries bound to it.
func setup(t *testing.T) (*pgxpool.Pool, *store.Queries) {
	t.Helper()
	pool := testdb.New(t)
	return pool, store.New(pool)
}

// setupOperator gives the test a database of its own with one operator in it.
func setupOperator(t *testing.T) (context.Context, *store.Queries, domain.Operator) {
	t.Helper()
	ctx, _, q, op := setupOperatorPool(t)
	return ctx, q, op
}

// setupOperatorPool is setupOperator with the pool, for tests that run statements of their own.
func setupOperatorPool(t *testing.T) (ctx context.Context, pool *pgxpool.Pool, q *store.Queries, op domain.Operator) {
	t.Helper()
	ctx = context.Background()
	pool, q = setup(t)
	return ctx, pool, q, testfactory.Operator(ctx, t, pool, nil)
}

// setupTwoOperators gives the test a database of its own with two operators in it, for the
// tests that check one does not reach the other's rows.
func setupTwoOperators(t *testing.T) (ctx context.Context, pool *pgxpool.Pool, q *store.Queries, a, b domain.Operator) {
	t.Helper()
	ctx = context.Background()
	pool, q = setup(t)
	return ctx, pool, q, testfactory.Operator(ctx, t, pool, nil), testfactory.Operator(ctx, t, pool, nil)
}

func TestOperatorSettingsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := store.New(testdb.New(t))
	op, err := q.InsertOperator(ctx, uuid.NewString(), domain.OperatorSettings{Name: new("Op"), WebhookURL: new("https://example.com/hook"),
		PerTxCap: new("500.25")})
	if err != nil {
		t.Fatal(err)
	}
	if op.ApprovalMode != "SYNC" || !op.Active || op.FiatCurrency != "USD" || op.DailyCap.Valid {
		t.Fatalf("defaults: %+v", op)
	}
	if !op.PerTxCap.Valid || !op.PerTxCap.Decimal.Equal(decimal.RequireFromString("500.25")) {
		t.Fatalf("per-tx cap %v", op.PerTxCap)
	}
	child := testfactory.Operator(ctx, t, q.DB(), &testfactory.OperatorOpts{ParentID: op.ID})
	up, err := q.UpdateOperator(ctx, op.ID, domain.OperatorSettings{PerTxCap: new(""), DailyCap: new("1000"), ApprovalMode: new(domain.ApprovalExternal), RedirectURL: new("https://r.example")})
	if err != nil {
		t.Fatal(err)
	}
	if up.PerTxCap.Valid || !up.DailyCap.Decimal.Equal(decimal.NewFromInt(1000)) || up.ApprovalMode != "EXTERNAL" || up.RedirectURL != "https://r.example" || up.Name != "Op" {
		t.Fatalf("update: %+v", up)
	}
	tree, err := q.OperatorTree(ctx, op.ID)
	if err != nil || len(tree) != 2 {
		t.Fatalf("tree %v %v", tree, err)
	}
	children, _ := q.ListOperators(ctx, op.ID)
	if len(children) != 1 || children[0].ID != child.ID {
		t.Fatalf("children %v", children)
	}
	if _, err := q.GetOperator(ctx, uuid.NewString()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing operator: %v", err)
	}
}

func TestOperatorKeys(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	if err := q.InsertOperatorKey(ctx, op.ID, []byte("d1"), []byte("s1"), "sk_1"); err != nil {
		t.Fatal(err)
	}
	if got, err := q.OperatorByKeyDigest(ctx, []byte("d1")); err != nil || got.ID != op.ID {
		t.Fatalf("auth: %v %v", got.ID, err)
	}
	if _, err := q.ExpireCurrentKeys(ctx, op.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := q.InsertOperatorKey(ctx, op.ID, []byte("d2"), []byte("s2"), "sk_2"); err != nil {
		t.Fatal(err)
	}
	keys, _ := q.ValidOperatorKeys(ctx, op.ID)
	if len(keys) != 2 || keys[0].Prefix != "sk_2" {
		t.Fatalf("keys during grace: %+v", keys)
	}
	// Revoking at once leaves only the new key.
	if _, err := q.ExpireCurrentKeys(ctx, op.ID, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := q.OperatorByKeyDigest(ctx, []byte("d1")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired key still authenticates: %v", err)
	}
}

func TestSessionsScopedAndReferenceIdempotent(t *testing.T) {
	t.Parallel()
	ctx, _, q, a, b := setupTwoOperators(t)
	n := domain.Session{ID: uuid.NewString(), OperatorID: a.ID, Kind: "DEPOSIT", SessionRef: "sr_1", ExternalUserID: "u1",
		Lang: "en", FiatCurrency: "USD", UserBalance: decimal.RequireFromString("-1.5"), Amount: decimal.RequireFromString("25.00"),
		OperatorReference: "order-1"}
	s, err := q.InsertSession(ctx, n, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if d := s.ExpiresAt.Sub(s.CreatedAt); d != 30*time.Minute {
		t.Fatalf("ttl %v", d)
	}
	if !s.Amount.Equal(decimal.RequireFromString("25")) || s.Amount.String() != "25" {
		t.Fatalf("amount %v", s.Amount)
	}
	// The depositor was registered with the session.
	if _, err := q.GetDepositor(ctx, a.ID, "u1"); err != nil {
		t.Fatalf("depositor: %v", err)
	}
	// Another operator's session is invisible to b.
	if _, err := q.SessionForOperators(ctx, []string{b.ID}, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("operator b sees a's session: %v", err)
	}
}

// TestClaimReference: the first claim of a reference wins; a later claim returns the session
// the reference names; PointReference moves it; operators do not share references; the
// deferred foreign key refuses a claim whose session never comes.
func TestClaimReference(t *testing.T) {
	t.Parallel()
	ctx, pool, q, a, b := setupTwoOperators(t)
	open := func(op string) domain.Session {
		t.Helper()
		var s domain.Session
		err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
			tq := store.New(tx)
			id := uuid.NewString()
			current, err := tq.ClaimReference(ctx, op, "order-1", id)
			if err != nil {
				return err
			}
			if current != id {
				if err := tq.PointReference(ctx, op, "order-1", id); err != nil {
					return err
				}
			}
			s, err = tq.InsertSession(ctx, domain.Session{ID: id, OperatorID: op, Kind: "WITHDRAW", SessionRef: "sr_" + id[:8],
				ExternalUserID: "u1", Lang: "en", FiatCurrency: "USD", Amount: decimal.NewFromInt(5), OperatorReference: "order-1"}, time.Minute)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := open(a.ID)
	if current, err := q.ClaimReference(ctx, a.ID, "order-1", uuid.NewString()); err != nil || current != first.ID {
		t.Fatalf("claim of a used reference: %s %v (want %s)", current, err, first.ID)
	}
	second := open(a.ID)
	if current, _ := q.ClaimReference(ctx, a.ID, "order-1", uuid.NewString()); current != second.ID {
		t.Fatalf("the reference names %s, want the newer %s", current, second.ID)
	}
	// Both sessions keep the reference.
	if got, _ := q.SessionByID(ctx, first.ID); got.OperatorReference != "order-1" {
		t.Fatalf("the old session lost its reference: %+v", got)
	}
	if other := open(b.ID); other.ID == second.ID {
		t.Fatal("operators share a reference")
	}
	err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := store.New(tx).ClaimReference(ctx, a.ID, "order-2", uuid.NewString())
		return err
	})
	if err == nil {
		t.Fatal("a claim without its session committed")
	}
}

// inOneWindow runs try, which acts on rate limits of an hour window, until the window a try
// starts in is the one it ends in: a window ending mid-test makes only another try, with keys
// of its own (suffix). The fourth try is taken as it comes.
func inOneWindow(try func(suffix string) (held bool)) {
	for attempt := range 4 {
		if try(strconv.Itoa(attempt)) {
			return
		}
	}
}

// previousWindowHits stores hits for key in the hour window before the current one.
func previousWindowHits(ctx context.Context, t *testing.T, pool *pgxpool.Pool, key string, hits int) {
	t.Helper()
	if _, err := pool.Exec(ctx, `INSERT INTO rate_limits (key, window_start, hits)
		VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600) - interval '1 hour', $2)`, key, hits); err != nil {
		t.Fatal(err)
	}
}

// TakeRateLimits passes hits within every limit and refuses the first beyond one, counting
// none of a refused hit: neither against the limit it exceeded nor against those it passed.
func TestTakeRateLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, q := setup(t)
	const window = time.Hour
	hourStart := func() time.Time {
		t.Helper()
		var start time.Time
		if err := pool.QueryRow(ctx, `SELECT to_timestamp(floor(extract(epoch FROM now()) / 3600) * 3600)`).Scan(&start); err != nil {
			t.Fatal(err)
		}
		return start
	}
	var suffix string
	var wide, narrow store.RateLimit
	var refusals []*store.Refusal
	inOneWindow(func(s string) bool {
		suffix, refusals = s, nil
		wide = store.RateLimit{Key: "wide" + suffix, Max: 10, Window: window}
		narrow = store.RateLimit{Key: "narrow" + suffix, Max: 3, Window: window}
		start := hourStart()
		for range 5 {
			r, err := q.TakeRateLimits(ctx, wide, narrow)
			if err != nil {
				t.Fatal(err)
			}
			refusals = append(refusals, r)
		}
		return hourStart().Equal(start)
	})
	for i, r := range refusals {
		if (i < 3) != (r == nil) {
			t.Fatalf("hit %d: refusal %+v", i+1, r)
		}
		// The 3 hits weigh until a third of the next hour has passed (ceil(3*weight) <= 2).
		if r != nil && (r.Limit != narrow || r.RetryAfter < 1 || r.RetryAfter > int((window+window/3).Seconds())) {
			t.Fatalf("hit %d: refusal %+v, want the narrow limit, retry within 80 minutes", i+1, r)
		}
	}
	counts := map[string]int{}
	rows, err := pool.Query(ctx, `SELECT key, hits FROM rate_limits WHERE key IN ($1, $2)`, wide.Key, narrow.Key)
	if err != nil {
		t.Fatal(err)
	}
	var k string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&k, &n}, func() error { counts[k] += n; return nil })
	if err != nil || counts[wide.Key] != 3 || counts[narrow.Key] != 3 {
		t.Fatalf("counted %v (%v), want 3 each: refused hits count for nothing", counts, err)
	}
	if r, _ := q.TakeRateLimits(ctx, store.RateLimit{Key: "other" + suffix, Max: 1, Window: window}); r != nil {
		t.Fatal("keys share a counter")
	}
	// A burst does not start over when a window ends: the hits of the one before still
	// weigh (all but a sliver of them, an hour's window being minutes old at most here).
	past := store.RateLimit{Key: "past" + suffix, Max: 3, Window: window}
	previousWindowHits(ctx, t, pool, past.Key, 3)
	var elapsed float64
	if err := pool.QueryRow(ctx, `SELECT extract(epoch FROM now()) - floor(extract(epoch FROM now()) / 3600) * 3600`).Scan(&elapsed); err != nil {
		t.Fatal(err)
	}
	r, err := q.TakeRateLimits(ctx, past)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed < 3600/3 && r == nil { // within the first third the previous window's 3 weigh over 2
		t.Fatalf("%.0fs into a window after a full one: a hit passed", elapsed)
	}
}

// HitSlidingRateLimit returns the current window's hits and the previous window's, and
// UnhitRateLimit takes a hit back in the window it landed in. A window boundary passing
// mid-test only makes the attempt start again.
func TestSlidingRateLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, q := setup(t)
	const window = time.Hour
	var first, second, third store.SlidingHit
	inOneWindow(func(suffix string) bool {
		key := "k" + suffix
		previousWindowHits(ctx, t, pool, key, 7)
		var err error
		if first, err = q.HitSlidingRateLimit(ctx, key, window); err != nil {
			t.Fatal(err)
		}
		second, _ = q.HitSlidingRateLimit(ctx, key, window)
		if err := q.UnhitRateLimit(ctx, key, window, second.ResetAt); err != nil {
			t.Fatal(err)
		}
		third, _ = q.HitSlidingRateLimit(ctx, key, window)
		return first.ResetAt.Equal(third.ResetAt)
	})
	for i, c := range []struct {
		got  store.SlidingHit
		want int
	}{{first, 1}, {second, 2}, {third, 2}} {
		if c.got.Current != c.want || c.got.Previous != 7 || c.got.Elapsed < 0 || c.got.Elapsed >= window ||
			!c.got.ResetAt.Equal(first.ResetAt) || time.Until(c.got.ResetAt) > window {
			t.Fatalf("hit %d: %+v, want current %d, previous 7", i+1, c.got, c.want)
		}
	}
}

// TestReferencesMigration: 0008 moves every existing session's operator reference into
// operator_references, naming that session, and drops the UNIQUE constraint, so that a
// reference can name a new session while the old one keeps it.
func TestReferencesMigration(t *testing.T) {
	t.Parallel()
	ctx, pool, q, a, b := setupTwoOperators(t)
	// The sessions schema before 0008.
	if _, err := pool.Exec(ctx, `DROP TABLE operator_references; DROP INDEX sessions_reference_idx;
		ALTER TABLE sessions DROP COLUMN submitting_until;
		ALTER TABLE sessions ADD CONSTRAINT sessions_operator_id_operator_reference_key UNIQUE (operator_id, operator_reference)`); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i, s := range []struct{ op, ref string }{{a.ID, "order-1"}, {a.ID, "order-2"}, {b.ID, "order-1"}, {a.ID, ""}} {
		id := uuid.NewString()
		if _, err := q.InsertSession(ctx, domain.Session{ID: id, OperatorID: s.op, Kind: "DEPOSIT", SessionRef: "sr_m" + strconv.Itoa(i),
			ExternalUserID: "u", Lang: "en", FiatCurrency: "USD", Amount: decimal.NewFromInt(1), OperatorReference: s.ref}, time.Minute); err != nil {
			t.Fatal(err)
		}
		if s.ref != "" {
			want[s.op+"/"+s.ref] = id
		}
	}
	sql, err := os.ReadFile(filepath.Join("migrations", "0008_session_references.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(sql)); err != nil {
		t.Fatalf("0008 on existing rows: %v", err)
	}
	rows, _ := pool.Query(ctx, `SELECT operator_id::text || '/' || reference, session_id::text FROM operator_references`)
	got := map[string]string{}
	var k, v string
	if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error { got[k] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("references %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s names %s, want %s", k, got[k], v)
		}
	}
	if _, err := q.InsertSession(ctx, domain.Session{ID: uuid.NewString(), OperatorID: a.ID, Kind: "DEPOSIT", SessionRef: "sr_m9",
		ExternalUserID: "u", Lang: "en", FiatCurrency: "USD", Amount: decimal.NewFromInt(1), OperatorReference: "order-1"}, time.Minute); err != nil {
		t.Fatalf("a second session with a reference after 0008: %v", err)
	}
}
