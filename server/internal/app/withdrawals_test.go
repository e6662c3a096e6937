package app_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/session"
)

// TestPanelWithdrawals drives the panel's withdrawal operations over Connect: an operator
// admin sees its operator's withdrawals only (paged), moves one PENDING → PROCESSING →
// REJECTED with notes, and reads its audit trail; another operator's withdrawal is not found;
// a mode-B withdrawal is rejected with the panel override; cancelling the session cancels an
// open withdrawal.
func TestPanelWithdrawals(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ctx := context.Background()
	receiver := hooktest.New(t)
	external, enabled := domain.ApprovalExternal, true
	opA, _ := receiver.Operator(t, env, domain.OperatorSettings{})
	opB, _ := receiver.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled})
	_, tokenA := env.Admin(t, opA.ID)
	_, tokenAll := env.Admin(t, "")
	submit := func(op domain.Operator, user string) (string, string) {
		t.Helper()
		o, err := env.Services.Sessions.Open(ctx, op, session.Withdraw, session.Input{ExternalUserID: user, Lang: "en",
			FiatCurrency: "USD", UserBalance: "100", Amount: "12.00"})
		if err != nil {
			t.Fatal(err)
		}
		widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
		q, err := widget.QuoteWithdrawal(ctx, &cofferv1.QuoteWithdrawalRequest{Sid: o.Session.ID, Currency: "USDT", ChainId: 1337})
		if err != nil || q.CryptoAmount != "12.000000" || q.FiatAmount != "12.00" {
			t.Fatalf("quote: %v %v", q, err)
		}
		res, err := widget.SubmitWithdrawal(ctx, &cofferv1.SubmitWithdrawalRequest{Sid: o.Session.ID,
			Address: "0x52908400098527886E0F7030069857D2E4169EE7", Currency: "USDT", ChainId: 1337})
		if err != nil || res.CryptoAmountSent != "12.000000" {
			t.Fatalf("submit: %v %v", res, err)
		}
		return res.WithdrawRequestId, o.Session.ID
	}
	var idsA []string
	for _, u := range []string{"a1", "a2", "a3"} {
		id, _ := submit(opA, u)
		idsA = append(idsA, id)
	}
	idB, _ := submit(opB, "b1")

	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	a, asA, asAll := admins, withBearer(ctx, tokenA), withBearer(ctx, tokenAll)
	page1, err := a.ListWithdrawals(asA, &cofferv1.ListWithdrawalsRequest{PageSize: 2})
	if err != nil || len(page1.Withdrawals) != 2 || page1.NextPageToken == "" {
		t.Fatalf("page 1: %d %q %v", len(page1.GetWithdrawals()), page1.GetNextPageToken(), err)
	}
	page2, err := a.ListWithdrawals(asA, &cofferv1.ListWithdrawalsRequest{PageSize: 2, PageToken: page1.NextPageToken})
	if err != nil || len(page2.Withdrawals) != 1 {
		t.Fatalf("page 2: %v %v", page2, err)
	}
	seen := map[string]bool{}
	for _, w := range append(page1.Withdrawals, page2.Withdrawals...) {
		if w.OperatorId != opA.ID || w.Status != cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PENDING {
			t.Fatalf("listed %+v", w)
		}
		seen[w.WithdrawRequestId] = true
	}
	if len(seen) != 3 {
		t.Fatalf("pages hold %d distinct withdrawals", len(seen))
	}
	if _, err := a.GetAdminWithdrawal(asA, &cofferv1.GetAdminWithdrawalRequest{WithdrawRequestId: idB}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("another operator's withdrawal: %v", err)
	}
	for _, step := range []struct {
		status cofferv1.WithdrawalStatus
		note   string
	}{{cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING, "looking"}, {cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_REJECTED, "KYC failed"}} {
		res, err := a.UpdateWithdrawalStatus(asA, &cofferv1.UpdateWithdrawalStatusRequest{WithdrawRequestId: idsA[0],
			Status: step.status, AdminNote: step.note})
		if err != nil || res.Withdrawal.Status != step.status || res.Withdrawal.AdminNote != step.note {
			t.Fatalf("%s: %v %v", step.status, res, err)
		}
	}
	detail, err := a.GetAdminWithdrawal(asA, &cofferv1.GetAdminWithdrawalRequest{WithdrawRequestId: idsA[0]})
	if err != nil || len(detail.History) != 2 || detail.History[1].Note != "admin:REJECTED: KYC failed" ||
		detail.History[1].ToStatus != cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_REJECTED {
		t.Fatalf("history: %v %v", detail, err)
	}
	// The direct jump is refused with the reason.
	_, err = a.UpdateWithdrawalStatus(asA, &cofferv1.UpdateWithdrawalStatusRequest{WithdrawRequestId: idsA[1],
		Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_COMPLETED})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("PENDING → COMPLETED: %v", err)
	}
	// Panel override on mode B: REJECT (no chain involved).
	over, err := admins.OverrideDecision(asAll, &cofferv1.OverrideDecisionRequest{WithdrawRequestId: idB,
		Decision: cofferv1.Decision_DECISION_REJECT, AdminNote: "fraud"})
	if err != nil || over.WithdrawStatus != cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_REJECTED || over.Held {
		t.Fatalf("override: %v %v", over, err)
	}
	// Cancelling the session cancels its open withdrawal.
	_, sidA := submit(opA, "a4")
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	if _, err := widget.CancelSession(ctx, &cofferv1.CancelSessionRequest{Sid: sidA}); err != nil {
		t.Fatal(err)
	}
	var status string
	if err := env.Pool.QueryRow(ctx, `SELECT status FROM withdrawals WHERE session_id = $1`, sidA).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != "CANCELLED" {
		t.Fatalf("withdrawal of a cancelled session is %s", status)
	}
}
