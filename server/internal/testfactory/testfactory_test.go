package testfactory_test

import (
	"context"
	"os"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestFactoryRecordsAreValidAndIndependent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)

	a := testfactory.Operator(ctx, t, pool, nil)
	b := testfactory.Operator(ctx, t, pool, &testfactory.OperatorOpts{ApprovalMode: domain.ApprovalExternal})
	if a.ID == b.ID || a.Name == b.Name || a.ApprovalMode != domain.ApprovalSync || b.ApprovalMode != domain.ApprovalExternal {
		t.Fatalf("operators %+v and %+v", a, b)
	}
	sess := testfactory.Session(ctx, t, pool, b.ID, &testfactory.SessionOpts{Kind: domain.SessionWithdraw})
	if sess.OperatorID != b.ID || sess.Kind != domain.SessionWithdraw || sess.StatusAt(sess.CreatedAt) != domain.SessionOpen {
		t.Fatalf("session %+v", sess)
	}
	w := testfactory.Withdrawal(ctx, t, pool, sess, &testfactory.WithdrawalOpts{Status: domain.WithdrawalAwaitingApproval})
	got, err := store.New(pool).LockWithdrawal(ctx, nil, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != domain.WithdrawalAwaitingApproval || got.ApprovalMode != domain.ApprovalExternal || got.SessionID != sess.ID ||
		got.CryptoAmount.String() != "25000000" || got.PayoutQueuedAt != nil {
		t.Fatalf("withdrawal %+v", got)
	}
	paying := testfactory.Withdrawal(ctx, t, pool, sess, &testfactory.WithdrawalOpts{Status: domain.WithdrawalProcessing, Paying: true,
		Address: "0x00000000000000000000000000000000000000b1"})
	if got, err = store.New(pool).LockWithdrawal(ctx, nil, paying.ID); err != nil || got.PayoutQueuedAt == nil ||
		paying.PayoutQueuedAt == nil || got.Address != "0x00000000000000000000000000000000000000b1" || got.ApprovalMode != domain.ApprovalSync {
		t.Fatalf("paying withdrawal %+v %v", got, err)
	}
}
