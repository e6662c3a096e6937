package store_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func ptr[T any](v T) *T { return &v }

func newOperator(t *testing.T, q *store.Queries, s store.OperatorSettings) store.Operator {
	t.Helper()
	if s.Name == nil {
		s.Name = ptr("Op")
	}
	if s.WebhookURL == nil {
		s.WebhookURL = ptr("https://example.com/hook")
	}
	op, err := q.InsertOperator(context.Background(), uuid.NewString(), s)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestOperatorSettingsRoundTrip(t *testing.T) {
	ctx := context.Background()
	q := store.New(testdb.New(t))
	op := newOperator(t, q, store.OperatorSettings{PerTxCap: ptr("500.25")})
	if op.ApprovalMode != "SYNC" || !op.Active || op.FiatCurrency != "USD" || op.DailyCap.Valid {
		t.Fatalf("defaults: %+v", op)
	}
	if !op.PerTxCap.Valid || !op.PerTxCap.Decimal.Equal(decimal.RequireFromString("500.25")) {
		t.Fatalf("per-tx cap %v", op.PerTxCap)
	}
	child := newOperator(t, q, store.OperatorSettings{ParentID: &op.ID})
	up, err := q.UpdateOperator(ctx, op.ID, store.OperatorSettings{PerTxCap: ptr(""), DailyCap: ptr("1000"), ApprovalMode: ptr("EXTERNAL"), RedirectURL: ptr("https://r.example")})
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
	ctx := context.Background()
	q := store.New(testdb.New(t))
	op := newOperator(t, q, store.OperatorSettings{})
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
	ctx := context.Background()
	q := store.New(testdb.New(t))
	a := newOperator(t, q, store.OperatorSettings{})
	b := newOperator(t, q, store.OperatorSettings{})
	n := store.Session{ID: uuid.NewString(), OperatorID: a.ID, Kind: "DEPOSIT", SessionRef: "sr_1", ExternalUserID: "u1",
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
	again := n
	again.ID, again.SessionRef = uuid.NewString(), "sr_2"
	if _, err := q.InsertSession(ctx, again, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("duplicate reference inserted: %v", err)
	}
	// Another operator may use the same reference.
	other := again
	other.OperatorID = b.ID
	if _, err := q.InsertSession(ctx, other, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SessionForOperators(ctx, []string{b.ID}, s.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("operator b sees a's session: %v", err)
	}
	if got, err := q.SessionByReference(ctx, a.ID, "order-1"); err != nil || got.ID != s.ID {
		t.Fatalf("by reference: %v %v", got.ID, err)
	}
}

func TestRateLimitWindow(t *testing.T) {
	ctx := context.Background()
	q := store.New(testdb.New(t))
	for i := 1; i <= 3; i++ {
		hits, reset, err := q.HitRateLimit(ctx, "k", time.Minute)
		if err != nil || hits != i || time.Until(reset) > time.Minute || time.Until(reset) <= 0 {
			t.Fatalf("hit %d: %d %v %v", i, hits, reset, err)
		}
	}
	if hits, _, _ := q.HitRateLimit(ctx, "other", time.Minute); hits != 1 {
		t.Fatalf("keys share a counter")
	}
}
