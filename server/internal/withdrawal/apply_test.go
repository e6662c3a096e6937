package withdrawal_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type fixture struct {
	pool *pgxpool.Pool
	op   domain.Operator
	sess domain.Session
}

func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	name, hook := "Op", "https://op.example/hook"
	op, _, err := operator.New(pool, box).Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook})
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(pool, session.Config{}).Open(ctx, op, session.Withdraw, session.Input{ExternalUserID: "user-1",
		Lang: "en", FiatCurrency: "usd", UserBalance: "100", Amount: "40.00"})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{pool: pool, op: op, sess: s.Session}
}

func (f fixture) withdrawal(t *testing.T, status domain.WithdrawalStatus) string {
	t.Helper()
	return testfactory.Withdrawal(context.Background(), t, f.pool, f.sess, &testfactory.WithdrawalOpts{Status: status, Amount: "40"}).ID
}

func (f fixture) apply(scope domain.Scope, c withdrawal.Change) (withdrawal.Applied, error) {
	var a withdrawal.Applied
	err := store.InTx(context.Background(), f.pool, func(tx pgx.Tx) (err error) {
		a, err = withdrawal.Apply(context.Background(), tx, scope, c)
		return err
	})
	return a, err
}

func (f fixture) trail(t *testing.T, id string) []domain.WithdrawalTransition {
	t.Helper()
	tr, err := store.New(f.pool).WithdrawalTransitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func refused(err error) bool {
	var fe *fault.Error
	return errors.As(err, &fe) && fe.Code == fault.FailedPrecondition
}

// TestAdminTwoStepOnPostgres: PENDING → PROCESSING → (payout queued) → COMPLETED, each step in
// the audit trail with its actor and note; the direct jump is refused and writes nothing.
func TestAdminTwoStepOnPostgres(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.withdrawal(t, domain.WithdrawalPending)

	if _, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.AdminComplete, Actor: "admin:a1", Note: "skip"}); !refused(err) {
		t.Fatalf("PENDING → COMPLETED: %v, want refused", err)
	}
	if tr := f.trail(t, id); len(tr) != 0 {
		t.Fatalf("a refused change wrote %v", tr)
	}
	a, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.AdminProcess, Actor: "admin:a1", Note: "checked"})
	if err != nil || a.Withdrawal.Status != "PROCESSING" {
		t.Fatalf("PROCESSING: %+v, %v", a, err)
	}
	a, err = f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.AdminComplete, Actor: "admin:a2", Note: "paid"})
	if err != nil || !a.Outcome.Payout || a.Withdrawal.Status != "PROCESSING" {
		t.Fatalf("COMPLETED asked: %+v, %v; want the payout queued, still PROCESSING", a, err)
	}
	if _, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.PayoutConfirmed, Actor: "system"}); err == nil {
		t.Fatal("COMPLETED without a settlement hash was accepted")
	}
	a, err = f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.PayoutConfirmed, Actor: "system", SettlementTxHash: "0xabc"})
	if err != nil || a.Withdrawal.Status != "COMPLETED" || a.Withdrawal.SettlementTxHash != "0xabc" {
		t.Fatalf("payout confirmed: %+v, %v", a, err)
	}
	if _, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.AdminReject, Actor: "admin:a1"}); !refused(err) {
		t.Errorf("REJECTED after COMPLETED: %v, want refused", err)
	}
	want := []domain.WithdrawalTransition{
		{From: "PENDING", To: "PROCESSING", Action: "admin:PROCESSING", Actor: "admin:a1", Note: "checked"},
		{From: "PROCESSING", To: "PROCESSING", Action: "admin:COMPLETED", Actor: "admin:a2", Note: "paid"},
		{From: "PROCESSING", To: "COMPLETED", Action: "payout:confirmed", Actor: "system"},
	}
	tr := f.trail(t, id)
	if len(tr) != len(want) {
		t.Fatalf("trail %+v, want %+v", tr, want)
	}
	for i := range want {
		tr[i].At = time.Time{}
		if tr[i] != want[i] {
			t.Errorf("trail[%d] = %+v, want %+v", i, tr[i], want[i])
		}
	}
}

// TestRepeatedDecisionsChangeNothing: APPROVE or REJECT on a decided withdrawal returns it as
// it is, with no payout and no audit row.
func TestRepeatedDecisionsChangeNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.withdrawal(t, domain.WithdrawalAwaitingApproval)
	if a, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.OperatorReject, Actor: "operator:x", Note: "fraud"}); err != nil || a.Withdrawal.Status != "REJECTED" {
		t.Fatalf("REJECT: %+v, %v", a, err)
	}
	for _, act := range []withdrawal.Action{withdrawal.OperatorReject, withdrawal.OperatorApprove} {
		a, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: act, Actor: "operator:x"})
		if err != nil || !a.Outcome.Unchanged || a.Outcome.Payout || a.Withdrawal.Status != "REJECTED" {
			t.Errorf("%s again: %+v, %v; want REJECTED unchanged, no payout", act, a, err)
		}
	}
	if tr := f.trail(t, id); len(tr) != 1 {
		t.Errorf("trail %+v, want the one REJECT", tr)
	}
}

// TestConcurrentChangesOneWins: twenty admins move the same PENDING withdrawal to PROCESSING at
// once; the row lock lets exactly one through, the others see it already PROCESSING.
func TestConcurrentChangesOneWins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.withdrawal(t, domain.WithdrawalPending)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refusedN := 0, 0
	for range 20 {
		wg.Go(func() {
			_, err := f.apply(domain.AllOperators(), withdrawal.Change{ID: id, Action: withdrawal.AdminProcess, Actor: "admin:a"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case refused(err):
				refusedN++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok != 1 || refusedN != 19 || len(f.trail(t, id)) != 1 {
		t.Errorf("%d applied, %d refused, trail %d; want 1, 19, 1", ok, refusedN, len(f.trail(t, id)))
	}
}

// TestScope: another operator's scope does not find the withdrawal.
func TestScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.withdrawal(t, domain.WithdrawalPending)
	_, err := f.apply(domain.Operators(uuid.NewString()), withdrawal.Change{ID: id, Action: withdrawal.AdminProcess, Actor: "admin:b"})
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.NotFound {
		t.Errorf("out of scope: %v, want NOT_FOUND", err)
	}
	if a, err := f.apply(domain.Operators(f.op.ID), withdrawal.Change{ID: id, Action: withdrawal.AdminProcess, Actor: "admin:a"}); err != nil || a.Withdrawal.Status != "PROCESSING" {
		t.Errorf("in scope: %+v, %v", a, err)
	}
}
