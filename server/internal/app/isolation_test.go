package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// tenant is an operator and its API key.
type tenant struct {
	domain.Operator

	key string
}

// startTenants starts a Coffer with the cast of the isolation tests: two unrelated operators,
// a and b, and sub, a sub-operator of a.
func startTenants(t *testing.T) (env *apptest.Env, a, b, sub tenant) {
	t.Helper()
	env = apptest.Start(t, apptest.Options{})
	a.Operator, a.key = env.Operator(t, domain.OperatorSettings{})
	b.Operator, b.key = env.Operator(t, domain.OperatorSettings{})
	sub.Operator, sub.key = env.Operator(t, domain.OperatorSettings{ParentID: &a.ID})
	return env, a, b, sub
}

// tenantWithdrawal records a 10 USD withdrawal of op's user iso-user, in status, in a withdraw
// session of its own: its id.
func tenantWithdrawal(t *testing.T, env *apptest.Env, op domain.Operator, status domain.WithdrawalStatus) string {
	t.Helper()
	o, err := env.Services.Sessions.Open(t.Context(), op, session.Withdraw, session.Input{ExternalUserID: "iso-user", Lang: "en",
		FiatCurrency: "USD", UserBalance: "100", Amount: "10"})
	if err != nil {
		t.Fatal(err)
	}
	return testfactory.Withdrawal(t.Context(), t, env.Pool, o.Session, &testfactory.WithdrawalOpts{Status: status, Amount: "10",
		Address: matrixAddress}).ID
}

// restOutcome sends a REST request and returns its status and the envelope's data.
func restOutcome(t *testing.T, env *apptest.Env, method, path, bearer, body string) (int, map[string]any) {
	t.Helper()
	c := mustREST(t, env, method, path, bearer, body)
	return c.status, c.data
}

// wantConnectError checks a Connect call's code and ErrorInfo reason.
func wantConnectError(t *testing.T, what string, err error, code connect.Code, reason string) {
	t.Helper()
	if got, gotReason := connectErrorInfo(err); err == nil || got != code || gotReason != reason {
		t.Errorf("%s: err %v (code %v, reason %q), want %v / %s", what, err, got, gotReason, code, reason)
	}
}

// TestTenantIsolation: operator B's key neither sees nor touches operator A's data; the
// test-webhook scope covers an operator's sub-operators but not its parent; an operator-scoped
// admin sees and manages only its operator's themes.
func TestTenantIsolation(t *testing.T) {
	env, a, b, sub := startTenants(t)

	sessions := cofferv1connect.NewSessionServiceClient(http.DefaultClient, env.URL)
	depositors := cofferv1connect.NewDepositorServiceClient(http.DefaultClient, env.URL)
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	as := func(key string) context.Context { return withBearer(t.Context(), key) }

	openSession := func(key string) string {
		t.Helper()
		res, err := sessions.CreateDepositSession(as(key), depositSessionRequest(""))
		if err != nil {
			t.Fatal(err)
		}
		return res.Sid
	}
	sidA, sidSub := openSession(a.key), openSession(sub.key)

	t.Run("depositors", func(t *testing.T) {
		if _, err := depositors.CreateDepositor(as(a.key), &cofferv1.CreateDepositorRequest{ExternalUserId: "alice", Email: "alice@example.com"}); err != nil {
			t.Fatal(err)
		}
		if res, err := depositors.CheckDepositor(as(a.key), &cofferv1.CheckDepositorRequest{ExternalUserId: "alice"}); err != nil || !res.Exists {
			t.Fatalf("A checks its own depositor: %v, %v", res, err)
		}
		res, err := depositors.CheckDepositor(as(b.key), &cofferv1.CheckDepositorRequest{ExternalUserId: "alice"})
		if err != nil || res.Exists || res.Depositor != nil {
			t.Errorf("B checks A's depositor over Connect: %v, %v; want exists=false and no depositor", res, err)
		}
		status, data := restOutcome(t, env, "GET", "/depositor/alice/check", b.key, "")
		if status != 200 || data["exists"] != false || data["email"] != nil {
			t.Errorf("B checks A's depositor over REST: %d %v; want exists=false", status, data)
		}
		// B's "alice" is B's own user: creating it makes a new depositor, not A's.
		created, err := depositors.CreateDepositor(as(b.key), &cofferv1.CreateDepositorRequest{ExternalUserId: "alice"})
		if err != nil || !created.Created || created.Depositor.GetEmail() != "" {
			t.Errorf("B creates its own alice: %v, %v; want a new depositor without A's email", created, err)
		}
	})

	t.Run("test-webhook scope", func(t *testing.T) {
		cases := []struct {
			name       string
			key, sid   string
			status     int
			connect    connect.Code
			wantReason string
		}{
			{"another operator's session", b.key, sidA, 404, connect.CodeNotFound, "NOT_FOUND"},
			{"a sub-operator's session with the parent's key", a.key, sidSub, 200, 0, ""},
			{"the parent's session with the sub-operator's key", sub.key, sidA, 404, connect.CodeNotFound, "NOT_FOUND"},
			{"a sub-operator's session with an unrelated key", b.key, sidSub, 404, connect.CodeNotFound, "NOT_FOUND"},
		}
		for _, c := range cases {
			status, data := restOutcome(t, env, "POST", "/session/"+c.sid+"/test-webhook", c.key, "")
			if c.status == 200 {
				// Reached: a signed test DEPOSIT was sent (to a receiver this test does not run).
				if status != 200 || data["event"] != "DEPOSIT" {
					t.Errorf("REST, %s: %d %v, want 200 and a DEPOSIT sent", c.name, status, data)
				}
				if res, err := sessions.SendTestWebhook(as(c.key), &cofferv1.SendTestWebhookRequest{Sid: c.sid}); err != nil || res.Event != "DEPOSIT" {
					t.Errorf("Connect, %s: %v %v", c.name, res, err)
				}
				continue
			}
			if status != c.status || data["code"] != c.wantReason {
				t.Errorf("REST, %s: %d %v, want %d %s", c.name, status, data, c.status, c.wantReason)
			}
			_, err := sessions.SendTestWebhook(as(c.key), &cofferv1.SendTestWebhookRequest{Sid: c.sid})
			wantConnectError(t, "Connect, "+c.name, err, c.connect, c.wantReason)
		}
	})

	t.Run("admin themes", func(t *testing.T) {
		_, teamToken := env.Admin(t, "")
		_, adminA := env.Admin(t, a.ID)
		create := func(token, operatorID, slug string) (*cofferv1.Theme, error) {
			res, err := admins.CreateTheme(as(token), &cofferv1.CreateThemeRequest{OperatorId: operatorID, Slug: slug, Name: slug,
				Style: &cofferv1.ThemeStyle{PrimaryColor: "#102030", BackgroundColor: "#ffffff", TextColor: "#000000"}})
			return res.GetTheme(), err
		}
		themeA, err := create(teamToken, a.ID, "a-by-team")
		if err != nil {
			t.Fatal(err)
		}
		themeB, err := create(teamToken, b.ID, "b-by-team")
		if err != nil {
			t.Fatal(err)
		}
		ownA, err := create(adminA, "", "a-by-own-admin") // defaults to the admin's operator
		if err != nil || ownA.OperatorId != a.ID {
			t.Fatalf("A's admin creates a theme: %v, %v", ownA, err)
		}

		list, err := admins.ListThemes(as(adminA), &cofferv1.ListThemesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, th := range list.Themes {
			ids = append(ids, th.Id)
			if th.OperatorId != a.ID {
				t.Errorf("A's admin lists theme %s of operator %s", th.Slug, th.OperatorId)
			}
		}
		slices.Sort(ids)
		want := []string{themeA.Id, ownA.Id}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("A's admin lists %v, want A's themes %v", ids, want)
		}
		if all, err := admins.ListThemes(as(teamToken), &cofferv1.ListThemesRequest{}); err != nil || len(all.Themes) != 3 {
			t.Errorf("the service team lists %d themes (err %v), want all 3", len(all.GetThemes()), err)
		}

		_, err = admins.ListThemes(as(adminA), &cofferv1.ListThemesRequest{OperatorId: b.ID})
		wantConnectError(t, "A's admin lists B's themes", err, connect.CodeNotFound, "NOT_FOUND")
		_, err = create(adminA, b.ID, "a-for-b")
		wantConnectError(t, "A's admin creates a theme for B", err, connect.CodeNotFound, "NOT_FOUND")
		_, err = admins.UpdateTheme(as(adminA), &cofferv1.UpdateThemeRequest{Id: themeB.Id, Name: "taken",
			Style: &cofferv1.ThemeStyle{PrimaryColor: "#000000", BackgroundColor: "#000000", TextColor: "#000000"}})
		wantConnectError(t, "A's admin updates B's theme", err, connect.CodeNotFound, "NOT_FOUND")
		_, err = admins.DeleteTheme(as(adminA), &cofferv1.DeleteThemeRequest{Id: themeB.Id})
		wantConnectError(t, "A's admin deletes B's theme", err, connect.CodeNotFound, "NOT_FOUND")

		// B's theme is untouched.
		listB, err := admins.ListThemes(as(teamToken), &cofferv1.ListThemesRequest{OperatorId: b.ID})
		if err != nil || len(listB.Themes) != 1 || listB.Themes[0].Name != "b-by-team" {
			t.Errorf("B's themes after A's admin tried: %v, %v", listB, err)
		}
	})
}

// errOf is a unary Connect call's error alone.
func errOf[Req, Res any](ctx context.Context, call func(context.Context, *Req) (*Res, error), req *Req) error {
	_, err := call(ctx, req)
	return err
}

// TestOperatorAdminIsolation: an operator-bound admin (a panel login of operator A) neither
// reads nor changes operator B's records on any AdminService call or on the REST admin paths:
// B's withdrawal, deposits, webhooks, funds and reorgs are NOT_FOUND (naming B, or by id),
// never listed, and nothing of B's changes. A's admin does reach its sub-operator's.
func TestOperatorAdminIsolation(t *testing.T) {
	env, a, b, sub := startTenants(t)
	_, adminA := env.Admin(t, a.ID)
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	as := func() context.Context { return withBearer(t.Context(), adminA) }
	idB, idSub := tenantWithdrawal(t, env, b.Operator, domain.WithdrawalPending), tenantWithdrawal(t, env, sub.Operator, domain.WithdrawalPending)
	env.InsertDeposit(t, domain.Deposit{OperatorID: b.ID, ExternalUserID: "iso-user", ChainID: 1337, TxHash: fmt.Sprintf("0x%064x", 7),
		LogIndex: 0, BlockNumber: 1, BlockHash: "0xb1", Address: matrixAddress, Currency: "USDT",
		ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6, GrossAmount: big.NewInt(5_000_000),
		IdempotencyKey: "iso-b"})
	eventB, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, b.ID, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	statusOf := func(id string) string {
		var s string
		if err := env.Pool.QueryRow(t.Context(), `SELECT status FROM withdrawals WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	// listsNaming runs the admin lists that take an operator filter, naming id, and returns
	// each one's error.
	listsNaming := func(id string) map[string]error {
		return map[string]error{
			"ListWithdrawals":   errOf(as(), admins.ListWithdrawals, &cofferv1.ListWithdrawalsRequest{OperatorId: id}),
			"ListDeposits":      errOf(as(), admins.ListDeposits, &cofferv1.ListDepositsRequest{OperatorId: id}),
			"ListDeadLetters":   errOf(as(), admins.ListDeadLetters, &cofferv1.ListDeadLettersRequest{OperatorId: id}),
			"ListOperatorFunds": errOf(as(), admins.ListOperatorFunds, &cofferv1.ListOperatorFundsRequest{OperatorId: id}),
			"ListDepositReorgs": errOf(as(), admins.ListDepositReorgs, &cofferv1.ListDepositReorgsRequest{OperatorId: id}),
		}
	}

	calls := []struct {
		name string
		call func() error
	}{
		{"GetAdminWithdrawal", func() error {
			_, err := admins.GetAdminWithdrawal(as(), &cofferv1.GetAdminWithdrawalRequest{WithdrawRequestId: idB})
			return err
		}},
		{"UpdateWithdrawalStatus", func() error {
			_, err := admins.UpdateWithdrawalStatus(as(), &cofferv1.UpdateWithdrawalStatusRequest{WithdrawRequestId: idB,
				Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING, AdminNote: "not mine"})
			return err
		}},
		{"OverrideDecision", func() error {
			_, err := admins.OverrideDecision(as(), &cofferv1.OverrideDecisionRequest{WithdrawRequestId: idB,
				Decision: cofferv1.Decision_DECISION_REJECT, AdminNote: "not mine"})
			return err
		}},
		{"RedeliverWebhook of B's", func() error {
			_, err := admins.RedeliverWebhook(as(), &cofferv1.RedeliverWebhookRequest{EventId: eventB})
			return err
		}},
	}
	for _, c := range calls {
		wantConnectError(t, "A's admin: "+c.name, c.call(), connect.CodeNotFound, "NOT_FOUND")
	}
	for name, err := range listsNaming(b.ID) {
		wantConnectError(t, "A's admin: "+name+" naming B", err, connect.CodeNotFound, "NOT_FOUND")
	}
	status, data := restOutcome(t, env, "PATCH", "/admin/withdrawals/"+idB+"/status", adminA, `{"status":"PROCESSING","adminNote":"not mine"}`)
	if status != http.StatusNotFound || data["code"] != "NOT_FOUND" {
		t.Errorf("A's admin: PATCH B's withdrawal: %d %v, want 404 NOT_FOUND", status, data)
	}
	if got := statusOf(idB); got != "PENDING" {
		t.Errorf("B's withdrawal is %s after A's admin tried, want PENDING", got)
	}

	// Lists without a filter hold A's and its sub-operator's records only.
	res := env.Do(t, "GET", "/admin/withdrawals", adminA, "")
	var listed []struct {
		WithdrawRequestID string `json:"withdrawRequestId"`
	}
	if err := json.NewDecoder(res.Body).Decode(&listed); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/withdrawals: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	if len(listed) != 1 || listed[0].WithdrawRequestID != idSub {
		t.Errorf("A's admin lists %v over REST, want only its sub-operator's %s", listed, idSub)
	}
	deps, err := admins.ListDeposits(as(), &cofferv1.ListDepositsRequest{})
	if err != nil || len(deps.Deposits) != 0 {
		t.Errorf("A's admin lists deposits %v %v, want none of B's", deps, err)
	}
	// The same lists naming the sub-operator answer (NOT_FOUND above is the scope, not the call).
	for name, err := range listsNaming(sub.ID) {
		if err != nil {
			t.Errorf("A's admin: %s naming its sub-operator: %v", name, err)
		}
	}
	if _, err := admins.UpdateWithdrawalStatus(as(), &cofferv1.UpdateWithdrawalStatusRequest{WithdrawRequestId: idSub,
		Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING, AdminNote: "sub"}); err != nil {
		t.Errorf("A's admin moves its sub-operator's withdrawal: %v", err)
	}
}
