package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
)

// loginAnswer is what POST /admin/login answered.
type loginAnswer struct {
	status     int
	code       string // data.code of the error envelope
	token      string
	retryAfter string
}

// answer is what the tests read of a JSON answer: the REST error envelope's data.code, a
// Connect error's code, /admin/login's token.
type answer struct {
	Code  string `json:"code"`
	Token string `json:"token"`
	Data  struct {
		Code string `json:"code"`
	} `json:"data"`
}

// readAnswer reads res's body, closes it and decodes it; the raw body is for messages.
func readAnswer(t testing.TB, res *http.Response) (answer, []byte) {
	t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out answer
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%d, not JSON: %.200q", res.StatusCode, b)
	}
	return out, b
}

// restLogin posts /admin/login with X-Forwarded-For set to client (when not empty).
func restLogin(t *testing.T, env *apptest.Env, email, password, client string) loginAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]string{"email": email, "password": password})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+"/admin/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if client != "" {
		req.Header.Set("X-Forwarded-For", client)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return loginAnswer{}
	}
	out, _ := readAnswer(t, res)
	return loginAnswer{status: res.StatusCode, code: out.Data.Code, token: out.Token, retryAfter: res.Header.Get("Retry-After")}
}

// waitForLoginHits waits until the attempts counted for client against one account reach n.
func waitForLoginHits(t *testing.T, env *apptest.Env, client string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var hits int
		if err := env.Pool.QueryRow(context.Background(), `SELECT COALESCE(sum(hits), 0) FROM rate_limits
			WHERE key LIKE 'admin-login:account-client:%:' || $1`, client).Scan(&hits); err != nil {
			t.Fatal(err)
		}
		if hits >= n {
			return
		}
	}
	t.Fatalf("the attempts from %s never reached %d", client, n)
}

// The attack over HTTP behind a trusted proxy: 60 parallel guesses from one address,
// the right password last. At most 10 are verified (401), the rest and the right password are
// refused (429 RATE_LIMITED with Retry-After), no token is issued; the admin, from another
// address, logs in over REST and Connect while the attacker is still refused.
func TestAdminLoginUnderAttack(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{TrustedProxyHeader: "X-Forwarded-For"})
	adm, _ := env.Admin(t, "")
	sessionsBefore := env.Count(t, "admin_sessions")
	const attacker, home = "203.0.113.66", "198.51.100.7"

	answers := make([]loginAnswer, 60)
	var wg sync.WaitGroup
	for i := range 59 {
		wg.Go(func() { answers[i] = restLogin(t, env, adm.Email, fmt.Sprintf("guess %d", i), "6.6.6.6, "+attacker) })
	}
	waitForLoginHits(t, env, attacker, 10)
	wg.Go(func() { answers[59] = restLogin(t, env, adm.Email, apptest.AdminPassword, attacker) })
	wg.Wait()

	counts := map[int]int{}
	for i, a := range answers {
		counts[a.status]++
		if a.status == http.StatusTooManyRequests {
			if n, err := strconv.Atoi(a.retryAfter); a.code != "RATE_LIMITED" || err != nil || n < 1 || n > 2*15*60 {
				t.Errorf("answer %d: 429 with code %q, Retry-After %q", i, a.code, a.retryAfter)
			}
		}
	}
	t.Logf("60 parallel guesses over REST: %v", counts)
	if counts[http.StatusUnauthorized] > 10 || counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != 60 {
		t.Errorf("answers %v: want at most 10 × 401 and the rest 429", counts)
	}
	if a := answers[59]; a.status != http.StatusTooManyRequests || a.token != "" {
		t.Errorf("the right password beyond the limit: %+v", a)
	}
	if n := env.Count(t, "admin_sessions"); n != sessionsBefore {
		t.Errorf("%d tokens issued to the attacker", n-sessionsBefore)
	}

	// The real admin, from another address, over REST and Connect.
	a := restLogin(t, env, adm.Email, apptest.AdminPassword, home)
	if a.status != http.StatusOK || a.token == "" {
		t.Fatalf("admin from another address: %+v", a)
	}
	res := env.Do(t, "GET", "/admin/withdrawals", a.token, "")
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the admin's token: %d", res.StatusCode)
	}
	login := func(client string) (*cofferv1.LoginResponse, error) {
		ctx, info := connect.NewClientContext(t.Context())
		info.RequestHeader().Set("X-Forwarded-For", client)
		return cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL).Login(ctx,
			&cofferv1.LoginRequest{Email: adm.Email, Password: apptest.AdminPassword})
	}
	if res, err := login(home); err != nil || res.Token == "" {
		t.Fatalf("Connect login from another address: %v", err)
	}
	_, err := login(attacker)
	var ce *connect.Error
	if code, reason := connectErrorInfo(err); code != connect.CodeResourceExhausted || reason != "RATE_LIMITED" ||
		!errors.As(err, &ce) || ce.Meta().Get("Retry-After") == "" {
		t.Fatalf("Connect login from the attacker: %v", err)
	}
}

// X-Forwarded-For is believed only when configured: without it, a guesser that writes a new
// address into the header each time is still one client (its connection's), and is limited.
// With it (and the test client on loopback as the trusted proxy), each address is a client.
func TestTrustedProxyHeaderOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		header  string
		limited bool
	}{
		{"not configured: the header is ignored", "", true},
		{"configured: each address is a client", "X-Forwarded-For", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := apptest.Start(t, apptest.Options{TrustedProxyHeader: c.header})
			adm, _ := env.Admin(t, "")
			var refused int
			for i := range 12 {
				a := restLogin(t, env, adm.Email, "guess", fmt.Sprintf("192.0.2.%d", i+1))
				if a.status == http.StatusTooManyRequests {
					refused++
				} else if a.status != http.StatusUnauthorized {
					t.Fatalf("guess %d: %+v", i+1, a)
				}
			}
			if limited := refused == 2; limited != c.limited || (!c.limited && refused != 0) {
				t.Fatalf("%d of 12 guesses refused; want limited=%t", refused, c.limited)
			}
		})
	}
}

// OpsService disables, enables and revokes an admin; tokens stop working at once.
func TestOpsDisableEnableRevokeAdmin(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ctx, ops, panel := consoles(t, env)
	adm, token := env.Admin(t, "")
	bystander, bystanderToken := env.Admin(t, "")
	works := func(token string) bool {
		_, err := panel.GetMe(withBearer(t.Context(), token), &cofferv1.GetMeRequest{})
		if err != nil && connect.CodeOf(err) != connect.CodeUnauthenticated {
			t.Fatalf("GetMe: %v", err)
		}
		return err == nil
	}
	if !works(token) {
		t.Fatal("fresh token refused")
	}

	dis, err := ops.DisableAdmin(ctx, &cofferv1.DisableAdminRequest{Admin: &cofferv1.DisableAdminRequest_Email{Email: strings.ToUpper(adm.Email)}})
	if err != nil || dis.Active || dis.RevokedSessions != 1 || dis.Admin.GetId() != adm.ID {
		t.Fatalf("DisableAdmin: %v %v", dis, err)
	}
	if works(token) {
		t.Fatal("a disabled admin's token still works")
	}
	if a := restLogin(t, env, adm.Email, apptest.AdminPassword, ""); a.status != http.StatusUnauthorized {
		t.Fatalf("disabled admin logs in: %+v", a)
	}

	en, err := ops.EnableAdmin(ctx, &cofferv1.EnableAdminRequest{Admin: &cofferv1.EnableAdminRequest_Id{Id: adm.ID}})
	if err != nil || !en.Active {
		t.Fatalf("EnableAdmin: %v %v", en, err)
	}
	if works(token) {
		t.Fatal("enabling brought a revoked token back")
	}
	a := restLogin(t, env, adm.Email, apptest.AdminPassword, "")
	if a.status != http.StatusOK || !works(a.token) {
		t.Fatalf("enabled admin: %+v", a)
	}

	rev, err := ops.RevokeAdminSessions(ctx, &cofferv1.RevokeAdminSessionsRequest{Admin: &cofferv1.RevokeAdminSessionsRequest_Id{Id: adm.ID}})
	if err != nil || !rev.Active || rev.RevokedSessions != 1 {
		t.Fatalf("RevokeAdminSessions: %v %v", rev, err)
	}
	if works(a.token) {
		t.Fatal("a revoked token still works")
	}
	if !works(bystanderToken) {
		t.Fatalf("admin %s's token was revoked too", bystander.Email)
	}

	// Bad input changes nothing.
	sessions := env.Count(t, "admin_sessions")
	for _, c := range []struct {
		name string
		req  *cofferv1.DisableAdminRequest
		want connect.Code
	}{
		{"no admin named", &cofferv1.DisableAdminRequest{}, connect.CodeInvalidArgument},
		{"id not a uuid", &cofferv1.DisableAdminRequest{Admin: &cofferv1.DisableAdminRequest_Id{Id: "42"}}, connect.CodeInvalidArgument},
		{"empty email", &cofferv1.DisableAdminRequest{Admin: &cofferv1.DisableAdminRequest_Email{}}, connect.CodeInvalidArgument},
		{"unknown id", &cofferv1.DisableAdminRequest{Admin: &cofferv1.DisableAdminRequest_Id{Id: "00000000-0000-4000-8000-000000000000"}}, connect.CodeNotFound},
		{"unknown email", &cofferv1.DisableAdminRequest{Admin: &cofferv1.DisableAdminRequest_Email{Email: "nobody@coffer.test"}}, connect.CodeNotFound},
	} {
		if _, err := ops.DisableAdmin(ctx, c.req); connect.CodeOf(err) != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
	if env.Count(t, "admin_sessions") != sessions || !works(bystanderToken) {
		t.Fatal("bad input changed the sessions")
	}
}

// Guesses at one admin's email from one client (no trusted proxy: a spoofed X-Forwarded-For
// is ignored) count against one limit however the email is written (case, surrounding
// whitespace) and whichever transport carries them (REST, Connect): after 10 failed ones,
// the rest and then the right password are RATE_LIMITED and no token is issued.
func TestAdminLoginLimitAcrossEmailFormsAndTransports(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	adm, _ := env.Admin(t, "")
	sessionsBefore := env.Count(t, "admin_sessions")
	forms := []string{adm.Email, strings.ToUpper(adm.Email), " " + adm.Email + "\t", strings.ToUpper(adm.Email[:1]) + adm.Email[1:]}
	c := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	login := func(i int, password string) int {
		email := forms[i%len(forms)]
		if i%2 == 0 {
			return restLogin(t, env, email, password, fmt.Sprintf("192.0.2.%d", i+1)).status
		}
		ctx, info := connect.NewClientContext(t.Context())
		info.RequestHeader().Set("X-Forwarded-For", fmt.Sprintf("192.0.2.%d", i+1))
		_, err := c.Login(ctx, &cofferv1.LoginRequest{Email: email, Password: password})
		if code := connect.CodeOf(err); code == connect.CodeUnauthenticated {
			return http.StatusUnauthorized
		} else if code == connect.CodeResourceExhausted {
			return http.StatusTooManyRequests
		}
		t.Fatalf("Connect login %d: %v", i, err)
		return 0
	}
	var refused int
	for i := range 12 {
		switch login(i, "guess") {
		case http.StatusTooManyRequests:
			refused++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("guess %d: unexpected answer", i)
		}
	}
	if refused != 2 {
		t.Errorf("%d of 12 guesses refused; want 2 (one limit of 10 for every form and transport)", refused)
	}
	for i := range forms {
		if got := login(i, apptest.AdminPassword); got != http.StatusTooManyRequests {
			t.Errorf("the right password as %q beyond the limit: %d; want 429", forms[i], got)
		}
	}
	if n := env.Count(t, "admin_sessions"); n != sessionsBefore {
		t.Errorf("%d tokens issued beyond the limit", n-sessionsBefore)
	}
}
