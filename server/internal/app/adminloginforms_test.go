package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
)

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
