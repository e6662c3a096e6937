package rpc_test

import (
	"context"
	"slices"
	"testing"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

type action = cofferv1.AdminWithdrawalAction

const (
	process        = cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_PROCESS
	complete       = cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_COMPLETE
	reject         = cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_REJECT
	overrideAccept = cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_OVERRIDE_APPROVE
	overrideReject = cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_OVERRIDE_REJECT
)

// TestAdminWithdrawalAllowedActions: GetAdminWithdrawal answers, for a withdrawal in each
// state, the admin actions of its transition table, and nothing while the payout is queued
// (the panel shows buttons from this list only). An admin's own step is then in the history
// under the admin's email.
func TestAdminWithdrawalAllowedActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	env, client, ctx := b.env, b.admin, context.Background()
	op, _ := env.Operator(t, domain.OperatorSettings{})
	adm, token := env.Admin(t, "")
	opened, err := env.Services.Sessions.Open(ctx, op, domain.SessionWithdraw, session.Input{ExternalUserID: "allowed-actions",
		Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "25.00"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id string) *cofferv1.GetAdminWithdrawalResponse {
		t.Helper()
		res, err := client.GetAdminWithdrawal(bearer(ctx, token), &cofferv1.GetAdminWithdrawalRequest{WithdrawRequestId: id})
		if err != nil {
			t.Fatalf("GetAdminWithdrawal %s: %v", id, err)
		}
		return res
	}
	insert := func(status domain.WithdrawalStatus, paying bool) string {
		t.Helper()
		return testfactory.Withdrawal(t.Context(), t, env.Pool, opened.Session, &testfactory.WithdrawalOpts{Status: status, Paying: paying}).ID
	}

	cases := []struct {
		status domain.WithdrawalStatus
		paying bool
		want   []action
	}{
		{domain.WithdrawalPending, false, []action{process}},
		{domain.WithdrawalProcessing, false, []action{complete, reject}},
		{domain.WithdrawalProcessing, true, nil},
		{domain.WithdrawalAwaitingApproval, false, []action{overrideAccept, overrideReject}},
		{domain.WithdrawalAwaitingApproval, true, nil},
		// (COMPLETED needs a confirmed payout, which a fixture cannot have: the transition
		// table's test covers it.)
		{domain.WithdrawalRejected, false, nil},
		{domain.WithdrawalCancelled, false, nil},
		{domain.WithdrawalExpired, false, nil},
	}
	for _, c := range cases {
		res := get(insert(c.status, c.paying))
		if got := res.GetAllowedActions(); !slices.Equal(got, c.want) {
			t.Errorf("%s (paying %v): allowed %v; want %v", c.status, c.paying, got, c.want)
		}
	}

	// The admin's first step: PROCESSING. The history names the admin by email; the actions
	// are now the second step's.
	id := insert(domain.WithdrawalPending, false)
	if _, err := client.UpdateWithdrawalStatus(bearer(ctx, token), &cofferv1.UpdateWithdrawalStatusRequest{WithdrawRequestId: id,
		Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING, AdminNote: "identity checked"}); err != nil {
		t.Fatal(err)
	}
	res := get(id)
	if got := res.GetAllowedActions(); !slices.Equal(got, []action{complete, reject}) {
		t.Errorf("after PROCESSING: allowed %v", got)
	}
	if len(res.History) != 1 {
		t.Fatalf("history: %v", res.History)
	}
	if h := res.History[0]; h.Actor != string(domain.AdminActor(adm.ID)) || h.ActorDisplay != adm.Email ||
		h.ToStatus != cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING {
		t.Errorf("history entry: %v; want actor %s shown as %s", h, domain.AdminActor(adm.ID), adm.Email)
	}
}
