package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// withdrawal inserts a withdrawal of the session in a status.
func (f fixture) withdrawal(t *testing.T, sess domain.Session, status domain.WithdrawalStatus) string {
	t.Helper()
	return testfactory.Withdrawal(context.Background(), t, f.pool, sess, &testfactory.WithdrawalOpts{Status: status}).ID
}

func (f fixture) status(t *testing.T, id string) domain.WithdrawalStatus {
	t.Helper()
	w, err := store.New(f.pool).GetWithdrawal(context.Background(), nil, id)
	if err != nil {
		t.Fatal(err)
	}
	return w.Status
}

// TestCancelCascadesToWithdrawals: cancelling a withdraw session cancels its open withdrawals
// in the same transaction: when that part fails, the session is not cancelled either.
func TestCancelCascadesToWithdrawals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	f.sessions = session.New(f.pool, session.Config{Cascade: withdrawal.SessionCascade(nil)})

	wd := f.open(t, session.Withdraw, "")
	open := f.withdrawal(t, wd.Session, domain.WithdrawalAwaitingApproval)
	rejected := f.withdrawal(t, wd.Session, domain.WithdrawalRejected)
	if status, err := f.sessions.Cancel(ctx, wd.Session.ID); err != nil || status != domain.SessionCancelled {
		t.Fatalf("cancel: %s %v", status, err)
	}
	if got := f.status(t, open); got != domain.WithdrawalCancelled {
		t.Errorf("open withdrawal of the cancelled session is %s, want CANCELLED", got)
	}
	if got := f.status(t, rejected); got != domain.WithdrawalRejected {
		t.Errorf("rejected withdrawal of the cancelled session is %s, want REJECTED", got)
	}

	// The same transaction: a cascade that fails takes the session's cancel back with it.
	again := f.open(t, session.Withdraw, "")
	pending := f.withdrawal(t, again.Session, domain.WithdrawalAwaitingApproval)
	f.sessions = session.New(f.pool, session.Config{Cascade: func(ctx context.Context, tx pgx.Tx, sid string) error {
		if err := withdrawal.SessionCascade(nil)(ctx, tx, sid); err != nil {
			return err
		}
		return errors.New("crash after the cascade")
	}})
	if _, err := f.sessions.Cancel(ctx, again.Session.ID); !fault.Is(err, fault.Internal) {
		t.Fatalf("failed cascade: %v, want INTERNAL", err)
	}
	if s, _ := f.sessions.Lookup(ctx, again.Session.ID); s.StatusAt(time.Now()) != domain.SessionOpen {
		t.Errorf("session after a failed cascade is %s, want OPEN", s.StatusAt(time.Now()))
	}
	if got := f.status(t, pending); got != domain.WithdrawalAwaitingApproval {
		t.Errorf("withdrawal after a failed cascade is %s, want AWAITING_APPROVAL", got)
	}

	// A deposit session has no withdrawals to cascade to; cancelling it never calls the cascade.
	f.sessions = session.New(f.pool, session.Config{Cascade: func(context.Context, pgx.Tx, string) error { return errors.New("called") }})
	dep := f.open(t, session.Deposit, "")
	if status, err := f.sessions.Cancel(ctx, dep.Session.ID); err != nil || status != domain.SessionCancelled {
		t.Fatalf("cancel a deposit session: %s %v", status, err)
	}
}

// TestFollow: following a session's deposits works in any state, but only for its kind and a
// known sid; acting on it needs it open.
func TestFollow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	dep, wd := f.openBoth(t)
	if _, err := f.sessions.Cancel(ctx, dep.Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Follow(ctx, dep.Session.ID, session.Deposit); err != nil {
		t.Errorf("follow a cancelled deposit session: %v", err)
	}
	if _, err := f.sessions.ForWidget(ctx, dep.Session.ID, session.Deposit); !fault.Is(err, fault.SessionExpired) {
		t.Errorf("act on a cancelled deposit session: %v, want SESSION_EXPIRED", err)
	}
	if _, err := f.sessions.Follow(ctx, wd.Session.ID, session.Deposit); !fault.Is(err, fault.Forbidden) {
		t.Errorf("follow a withdraw session's deposits: %v, want FORBIDDEN", err)
	}
	if _, err := f.sessions.Follow(ctx, uuid.NewString(), session.Deposit); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("follow an unknown sid: %v, want UNAUTHENTICATED", err)
	}
}
