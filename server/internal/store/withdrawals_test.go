package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// Withdrawals come back with their session's handle and reference, and every filter of
// ListWithdrawals (NULL or empty: no filter) narrows as it says.
func TestWithdrawalsReadAndFiltered(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	sess := testfactory.Session(ctx, t, q.DB(), op.ID, &testfactory.SessionOpts{Kind: domain.SessionWithdraw, SessionRef: "sr_w",
		ExternalUserID: "u1", OperatorReference: "order-w", TTL: time.Hour})
	var ws []domain.Withdrawal
	for i, user := range []string{"u1", "u1", "u2"} {
		w, err := q.InsertWithdrawal(ctx, domain.Withdrawal{ID: uuid.NewString(), OperatorID: op.ID, SessionID: sess.ID,
			ExternalUserID: user, Type: "DIRECT_TRANSFER", ApprovalMode: domain.ApprovalSync, Status: domain.WithdrawalPending,
			ChainID: 1, Currency: "ETH", Decimals: 18, Address: "0xabc", FiatCurrency: "USD", FiatAmount: decimal.NewFromInt(10),
			CryptoAmount: decimal.NewFromInt(int64(1000 + i)), ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	if w := ws[0]; w.SessionRef != "sr_w" || w.OperatorReference != "order-w" || w.ContractAddress != "" || w.OfframpRef != "" {
		t.Fatalf("inserted %+v", w)
	}
	done := domain.WithdrawalTransition{From: domain.WithdrawalPending, To: domain.WithdrawalCompleted, Action: "APPROVE",
		Actor: domain.AdminActor("a1"), Note: "ok"}
	if err := q.SetWithdrawalStatus(ctx, ws[1].ID, done, store.WithdrawalChange{SettlementTxHash: "0xhash", QueuePayout: true}); err != nil {
		t.Fatal(err)
	}
	got, err := q.GetWithdrawal(ctx, []string{op.ID}, ws[1].ID)
	if err != nil || got.Status != domain.WithdrawalCompleted || got.SettlementTxHash != "0xhash" || got.CompletedAt == nil ||
		got.PayoutQueuedAt == nil || got.SessionRef != "sr_w" {
		t.Fatalf("completed %+v %v", got, err)
	}
	if tr, err := q.WithdrawalTransitions(ctx, ws[1].ID); err != nil || len(tr) != 1 || tr[0].Actor != done.Actor || tr[0].To != done.To {
		t.Fatalf("transitions %+v %v", tr, err)
	}
	if _, err := q.GetWithdrawal(ctx, []string{uuid.NewString()}, ws[1].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("out of scope: %v", err)
	}

	ids := func(list []domain.Withdrawal) []string {
		var out []string
		for _, w := range list {
			out = append(out, w.ID)
		}
		return out
	}
	newest := ws[2]
	for name, c := range map[string]struct {
		f    domain.WithdrawalFilter
		want []string
	}{
		"all":          {domain.WithdrawalFilter{Limit: 10}, []string{ws[2].ID, ws[1].ID, ws[0].ID}},
		"scope":        {domain.WithdrawalFilter{OperatorIDs: []string{op.ID}, Limit: 10}, []string{ws[2].ID, ws[1].ID, ws[0].ID}},
		"other scope":  {domain.WithdrawalFilter{OperatorIDs: []string{uuid.NewString()}, Limit: 10}, nil},
		"empty scope":  {domain.WithdrawalFilter{OperatorIDs: []string{}, Limit: 10}, nil},
		"status":       {domain.WithdrawalFilter{Statuses: []domain.WithdrawalStatus{domain.WithdrawalCompleted}, Limit: 10}, []string{ws[1].ID}},
		"user":         {domain.WithdrawalFilter{ExternalUserID: "u2", Limit: 10}, []string{ws[2].ID}},
		"limit":        {domain.WithdrawalFilter{Limit: 1}, []string{ws[2].ID}},
		"page":         {domain.WithdrawalFilter{BeforeTime: &newest.CreatedAt, BeforeID: newest.ID, Limit: 10}, []string{ws[1].ID, ws[0].ID}},
		"after":        {domain.WithdrawalFilter{CreatedAfter: &newest.CreatedAt, Limit: 10}, []string{ws[2].ID}},
		"before":       {domain.WithdrawalFilter{CreatedBefore: &ws[1].CreatedAt, Limit: 10}, []string{ws[0].ID}},
		"after future": {domain.WithdrawalFilter{CreatedAfter: new(time.Now().Add(time.Hour)), Limit: 10}, nil},
	} {
		list, err := q.ListWithdrawals(ctx, c.f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if g := ids(list); len(g) != len(c.want) || len(g) > 0 && g[0] != c.want[0] || len(g) > 1 && g[len(g)-1] != c.want[len(c.want)-1] {
			t.Errorf("%s: %v, want %v", name, g, c.want)
		}
	}

	open, err := q.OpenWithdrawalsOfSession(ctx, sess.ID)
	if err != nil || len(open) != 2 || open[0] != ws[0].ID {
		t.Fatalf("open %v %v", open, err)
	}
	expired, cancelled, err := q.DueWithdrawals(ctx, time.Now().Add(2*time.Hour), 10)
	if err != nil || len(expired) != 2 || len(cancelled) != 0 {
		t.Fatalf("due %v %v %v", expired, cancelled, err)
	}
}
