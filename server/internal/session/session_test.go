package session_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type fixture struct {
	sessions *session.Service
	op       domain.Operator
	ops      *operator.Service
	pool     *pgxpool.Pool
}

func setup(t *testing.T, ttl time.Duration) fixture {
	t.Helper()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	ops := operator.New(pool, box)
	name, hook := "Op", "https://op.example/hook"
	op, _, err := ops.Create(context.Background(), domain.OperatorSettings{Name: &name, WebhookURL: &hook})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{sessions: session.New(pool, session.Config{TTL: ttl, WidgetURL: "https://pay.example/widget/",
		Currencies: rates.DevStatic()}), op: op, ops: ops, pool: pool}
}

// open opens a session of kind for the fixture's operator with input(ref).
func (f fixture) open(t *testing.T, kind domain.SessionKind, ref string) session.Opened {
	t.Helper()
	o, err := f.sessions.Open(context.Background(), f.op, kind, input(ref))
	if err != nil {
		t.Fatalf("open a %s session: %v", kind, err)
	}
	return o
}

// openBoth opens a deposit and a withdraw session of the fixture's operator.
func (f fixture) openBoth(t *testing.T) (dep, wd session.Opened) {
	t.Helper()
	return f.open(t, session.Deposit, ""), f.open(t, session.Withdraw, "")
}

func input(ref string) session.Input {
	return session.Input{ExternalUserID: "user-1", Lang: "en", FiatCurrency: "usd", UserBalance: "10.00", Amount: "25.00", OperatorReference: ref}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	f := setup(t, 0)
	o := f.open(t, session.Deposit, "")
	if o.URL != "https://pay.example/widget/?sid="+o.Session.ID || o.Existing {
		t.Fatalf("url %q existing %v", o.URL, o.Existing)
	}
	if o.Session.FiatCurrency != "USD" || o.Session.Kind != "DEPOSIT" || len(o.Session.SessionRef) != 35 {
		t.Fatalf("session %+v", o.Session)
	}
	if ttl := o.Session.ExpiresAt.Sub(o.Session.CreatedAt); ttl != config.Defaults().SessionTTL {
		t.Fatalf("default ttl %v", ttl)
	}
	if _, err := uuid.Parse(o.Session.ID); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesInactiveOperatorAndBadAmounts(t *testing.T) {
	t.Parallel()
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
	op, err := f.ops.Update(ctx, f.op.ID, domain.OperatorSettings{Active: &inactive})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Open(ctx, op, session.Deposit, input("")); !fault.Is(err, fault.Forbidden) {
		t.Fatalf("inactive operator: %v", err)
	}
}

// TestRepeatedReference: the same reference with the same user, amount (numerically) and
// currency (any case) returns the live session; concurrent first uses open one session; each
// differing parameter, and the other kind, is CONFLICT naming the field, writing nothing.
func TestRepeatedReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	var wg sync.WaitGroup
	ids := make([]string, 20)
	errs := make([]error, 20)
	for i := range ids {
		wg.Go(func() {
			o, err := f.sessions.Open(ctx, f.op, session.Deposit, input("order-42"))
			ids[i], errs[i] = o.Session.ID, err
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("call %d: id %s err %v (first %s)", i, ids[i], errs[i], ids[0])
		}
	}
	if n := f.count(t); n != 1 {
		t.Fatalf("%d sessions after 20 concurrent first uses", n)
	}
	same := input("order-42")
	same.Amount, same.FiatCurrency, same.Lang, same.UserBalance = "25", "Usd", "de", "99" // lang and balance are not compared
	again, err := f.sessions.Open(ctx, f.op, session.Deposit, same)
	if err != nil || !again.Existing || again.Session.ID != ids[0] || again.URL != f.sessions.URL(ids[0]) ||
		again.Session.Lang != "en" || again.Session.Amount.String() != "25" {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	for _, c := range []struct {
		name   string
		kind   domain.SessionKind
		field  string
		change func(*session.Input)
	}{
		{"other user", session.Deposit, "externalUserId", func(in *session.Input) { in.ExternalUserID = "user-2" }},
		{"other amount", session.Deposit, "amount", func(in *session.Input) { in.Amount = "25.01" }},
		{"other currency", session.Deposit, "platformFiatCurrency", func(in *session.Input) { in.FiatCurrency = "EUR" }},
		{"other kind", session.Withdraw, "operatorReference", func(*session.Input) {}},
	} {
		in := input("order-42")
		c.change(&in)
		_, err := f.sessions.Open(ctx, f.op, c.kind, in)
		fe := fault.As(err)
		if fe.Code != fault.Conflict || fe.Field != c.field || !strings.Contains(fe.Message, "order-42") ||
			(c.field != "operatorReference" && !strings.Contains(fe.Message, c.field)) {
			t.Errorf("%s: %v (field %q), want CONFLICT on %s", c.name, err, fe.Field, c.field)
		}
	}
	if n := f.count(t); n != 1 {
		t.Fatalf("refused repeats wrote sessions: %d", n)
	}
}

// TestReferenceAfterTheSessionEnded: once the session a reference names expired or was
// cancelled, the reference opens a new session (whatever its parameters) and names it from
// then on; the old session keeps its reference.
func TestReferenceAfterTheSessionEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	first := f.open(t, session.Withdraw, "order-7")
	if _, err := f.pool.Exec(ctx, `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, first.Session.ID); err != nil {
		t.Fatal(err)
	}
	changed := input("order-7")
	changed.Amount = "30.00"
	second, err := f.sessions.Open(ctx, f.op, session.Withdraw, changed)
	if err != nil || second.Existing || second.Session.ID == first.Session.ID || second.Session.Amount.String() != "30" {
		t.Fatalf("after expiry: %+v %v", second, err)
	}
	again, err := f.sessions.Open(ctx, f.op, session.Withdraw, changed)
	if err != nil || !again.Existing || again.Session.ID != second.Session.ID {
		t.Fatalf("the reference names %+v (%v), want the new session %s", again.Session.ID, err, second.Session.ID)
	}
	if _, err := f.sessions.Open(ctx, f.op, session.Withdraw, input("order-7")); !fault.Is(err, fault.Conflict) {
		t.Fatalf("the first session's amount on the new one: %v", err)
	}
	// Cancelled counts as ended too; the kind may change with it.
	if _, err := f.sessions.Cancel(ctx, second.Session.ID); err != nil {
		t.Fatal(err)
	}
	third, err := f.sessions.Open(ctx, f.op, session.Deposit, input("order-7"))
	if err != nil || third.Existing || third.Session.Kind != session.Deposit {
		t.Fatalf("after cancel: %+v %v", third, err)
	}
	for _, id := range []string{first.Session.ID, second.Session.ID, third.Session.ID} {
		if s, _ := f.sessions.Lookup(ctx, id); s.OperatorReference != "order-7" {
			t.Errorf("session %s has reference %q", id, s.OperatorReference)
		}
	}
}

// TestPricedCurrenciesOnly: a platform currency without a rate is INVALID_ARGUMENT on
// platformFiatCurrency listing the supported ones, for both kinds, and writes nothing;
// supported ones are accepted in any case.
func TestPricedCurrenciesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	for _, kind := range []domain.SessionKind{session.Deposit, session.Withdraw} {
		for _, code := range []string{"JPY", "XYZ", "jpy"} {
			in := input("ref-" + string(kind) + code)
			in.FiatCurrency = code
			_, err := f.sessions.Open(ctx, f.op, kind, in)
			fe := fault.As(err)
			if fe.Code != fault.InvalidArgument || fe.Field != "platformFiatCurrency" ||
				!strings.Contains(fe.Message, "EUR, GBP, USD") || !strings.Contains(fe.Message, strings.ToUpper(code)) {
				t.Errorf("%s %s: %v", kind, code, err)
			}
		}
		for _, code := range []string{"usd", "EUR", "gbp"} {
			in := input("")
			in.FiatCurrency = code
			if o, err := f.sessions.Open(ctx, f.op, kind, in); err != nil || o.Session.FiatCurrency != strings.ToUpper(code) {
				t.Errorf("%s %s: %+v %v", kind, code, o.Session, err)
			}
		}
	}
	if n := f.count(t); n != 6 {
		t.Fatalf("%d sessions, want the 6 supported ones", n)
	}
	var refs int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM operator_references`).Scan(&refs); err != nil {
		t.Fatal(err)
	}
	if refs != 0 {
		t.Fatalf("refused sessions claimed %d references", refs)
	}
	// Without a rate table only USD is priced.
	bare := session.New(f.pool, session.Config{})
	in := input("")
	in.FiatCurrency = "EUR"
	if _, err := bare.Open(ctx, f.op, session.Deposit, in); !strings.Contains(fault.As(err).Message, "supported currencies: USD") {
		t.Fatalf("no table: %v", err)
	}
}

func (f fixture) count(t *testing.T) int {
	t.Helper()
	return testdb.Count(context.Background(), t, f.pool, `SELECT count(*) FROM sessions`)
}

func TestForWidget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Open sessions live for the default TTL, so no step below races their expiry on a busy
	// machine; expiry is checked on a session of its own with a short TTL.
	f := setup(t, 0)
	dep, wd := f.openBoth(t)
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

	short := session.New(f.pool, session.Config{TTL: 50 * time.Millisecond})
	expiring, err := short.Open(ctx, f.op, session.Deposit, input(""))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expiring.Session.ExpiresAt) + 10*time.Millisecond) // past its expiry, whatever the load
	if _, err := f.sessions.ForWidget(ctx, expiring.Session.ID, session.Deposit); !fault.Is(err, fault.SessionExpired) {
		t.Fatalf("expired: %v", err)
	}
	if status, err := f.sessions.Cancel(ctx, expiring.Session.ID); err != nil || status != "EXPIRED" {
		t.Fatalf("cancel after expiry: %s %v", status, err)
	}
}

func TestForOperatorsScopesToTheTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	name, hook := "Child", "https://child.example/hook"
	child, _, err := f.ops.Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook, ParentID: &f.op.ID})
	if err != nil {
		t.Fatal(err)
	}
	childSession, _ := f.sessions.Open(ctx, child, session.Deposit, input(""))
	parentSession := f.open(t, session.Deposit, "")
	tree, _ := f.ops.Tree(ctx, f.op.ID)
	if _, err := f.sessions.ForOperators(ctx, domain.Operators(tree...), childSession.Session.ID); err != nil {
		t.Fatalf("parent reaches child's session: %v", err)
	}
	childTree, _ := f.ops.Tree(ctx, child.ID)
	if _, err := f.sessions.ForOperators(ctx, domain.Operators(childTree...), parentSession.Session.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("child reaches parent's session: %v", err)
	}
	if _, err := f.sessions.ForOperators(ctx, domain.Scope{}, parentSession.Session.ID); !fault.Is(err, fault.NotFound) {
		t.Fatalf("the zero scope reaches a session: %v", err)
	}
	if _, err := f.sessions.ForOperators(ctx, domain.AllOperators(), childSession.Session.ID); err != nil {
		t.Fatalf("every operator's scope misses a session: %v", err)
	}
}
