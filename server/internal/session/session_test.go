package session_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type fixture struct {
	sessions *session.Service
	op       store.Operator
	ops      *operator.Service
}

func setup(t *testing.T, ttl time.Duration) fixture {
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	ops := operator.New(pool, box)
	name, hook := "Op", "https://op.example/hook"
	op, _, err := ops.Create(context.Background(), store.OperatorSettings{Name: &name, WebhookURL: &hook})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{sessions: session.New(pool, session.Config{TTL: ttl, WidgetURL: "https://pay.example/widget/"}), op: op, ops: ops}
}

func input(ref string) session.Input {
	return session.Input{ExternalUserID: "user-1", Lang: "en", FiatCurrency: "usd", UserBalance: "10.00", Amount: "25.00", OperatorReference: ref}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 0)
	o, err := f.sessions.Open(ctx, f.op, session.Deposit, input(""))
	if err != nil {
		t.Fatal(err)
	}
	if o.URL != "https://pay.example/widget/?sid="+o.Session.ID || o.Existing {
		t.Fatalf("url %q existing %v", o.URL, o.Existing)
	}
	if o.Session.FiatCurrency != "USD" || o.Session.Kind != "DEPOSIT" || len(o.Session.SessionRef) != 35 {
		t.Fatalf("session %+v", o.Session)
	}
	if ttl := o.Session.ExpiresAt.Sub(o.Session.CreatedAt); ttl != session.DefaultTTL {
		t.Fatalf("default ttl %v", ttl)
	}
	if _, err := uuid.Parse(o.Session.ID); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesInactiveOperatorAndBadAmounts(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 0)
	for _, amount := range []string{"0", "-1", "abc", ""} {
		in := input("")
		in.Amount = amount
		if _, err := f.sessions.Open(ctx, f.op, session.Withdraw, in); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("amount %q: %v", amount, err)
		}
	}
	inactive := false
	op, err := f.ops.Update(ctx, f.op.ID, store.OperatorSettings{Active: &inactive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Open(ctx, op, session.Deposit, input("")); !fault.Is(err, fault.Forbidden) {
		t.Fatalf("inactive operator: %v", err)
	}
}

func TestRepeatedReferenceReturnsTheSameSession(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 0)
	// Concurrent first requests with one reference open exactly one session.
	var wg sync.WaitGroup
	ids := make([]string, 20)
	errs := make([]error, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := input("order-42")
			in.Amount = "99.99" // a changed amount does not change the existing session
			o, err := f.sessions.Open(ctx, f.op, session.Deposit, in)
			ids[i], errs[i] = o.Session.ID, err
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("call %d: id %s err %v (first %s)", i, ids[i], errs[i], ids[0])
		}
	}
	again, err := f.sessions.Open(ctx, f.op, session.Deposit, input("order-42"))
	if err != nil || !again.Existing || again.Session.ID != ids[0] || again.Session.Amount.String() != "99.99" {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	if _, err := f.sessions.Open(ctx, f.op, session.Withdraw, input("order-42")); !fault.Is(err, fault.Conflict) {
		t.Fatalf("reference reused for another kind: %v", err)
	}
}

func TestForWidget(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 50*time.Millisecond)
	dep, _ := f.sessions.Open(ctx, f.op, session.Deposit, input(""))
	wd, _ := f.sessions.Open(ctx, f.op, session.Withdraw, input(""))
	if _, err := f.sessions.ForWidget(ctx, dep.Session.ID, session.Deposit); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.ForWidget(ctx, wd.Session.ID, session.Deposit); !fault.Is(err, fault.Forbidden) {
		t.Fatalf("wrong kind: %v", err)
	}
	if _, err := f.sessions.ForWidget(ctx, uuid.NewString(), ""); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("unknown sid: %v", err)
	}
	if _, err := f.sessions.ForWidget(ctx, "nope", ""); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("malformed sid: %v", err)
	}
	if status, err := f.sessions.Cancel(ctx, wd.Session.ID); err != nil || status != "CANCELLED" {
		t.Fatalf("cancel: %s %v", status, err)
	}
	if _, err := f.sessions.ForWidget(ctx, wd.Session.ID, ""); !fault.Is(err, fault.SessionExpired) {
		t.Fatalf("cancelled: %v", err)
	}
	time.Sleep(60 * time.Millisecond)
	if _, err := f.sessions.ForWidget(ctx, dep.Session.ID, session.Deposit); !fault.Is(err, fault.SessionExpired) {
		t.Fatalf("expired: %v", err)
	}
	if status, err := f.sessions.Cancel(ctx, dep.Session.ID); err != nil || status != "EXPIRED" {
		t.Fatalf("cancel after expiry: %s %v", status, err)
	}
}

func TestForOperatorsScopesToTheTree(t *testing.T) {
	ctx := context.Background()
	f := setup(t, 0)
	name, hook := "Child", "https://child.example/hook"
	child, _, err := f.ops.Create(ctx, store.OperatorSettings{Name: &name, WebhookURL: &hook, ParentID: &f.op.ID})
	if err != nil {
		t.Fatal(err)
	}
	childSession, _ := f.sessions.Open(ctx, child, session.Deposit, input(""))
	parentSession, _ := f.sessions.Open(ctx, f.op, session.Deposit, input(""))
	tree, _ := f.ops.Tree(ctx, f.op.ID)
	if _, err := f.sessions.ForOperators(ctx, tree, childSession.Session.ID); err != nil {
		t.Fatalf("parent reaches child's session: %v", err)
	}
	childTree, _ := f.ops.Tree(ctx, child.ID)
	if _, err := f.sessions.ForOperators(ctx, childTree, parentSession.Session.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("child reaches parent's session: %v", err)
	}
}
