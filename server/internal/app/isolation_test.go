package app_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
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
