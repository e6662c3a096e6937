package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestOnlyExactPathsAreServed: the spec's paths are exact. A path that only cleans to one
// (a doubled slash, a "." or ".." segment) is no endpoint: 404 NOT_FOUND in the error envelope,
// as a trailing slash is, and nothing happens. What was seen: net/http's ServeMux answered
// POST //session/deposit with 307 Temporary Redirect to /session/deposit and an HTML body (no
// envelope), and a client following it (307 keeps the method and body) opened a session.
func TestOnlyExactPathsAreServed(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	const body = `{"externalUserId":"exact","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"5"}`
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cases := []struct{ method, path string }{
		{"POST", "//session/deposit"},
		{"POST", "/session//deposit"},
		{"POST", "/session/./deposit"},
		{"POST", "/x/../session/withdraw"},
		{"GET", "//chain"},
		{"GET", "/chain/."},
		{"POST", "/session/deposit/"}, // a trailing slash: 404 already; the same answer
	}
	sessions := env.Count(t, "sessions")
	for _, c := range cases {
		req, err := http.NewRequestWithContext(t.Context(), c.method, env.URL+c.path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.URL.Opaque = "//" + req.URL.Host + c.path // sent as written, not cleaned by the client
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status string `json:"status"`
			Data   struct {
				Code string `json:"code"`
			} `json:"data"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal(raw, &got) != nil || got.Status != "error" || got.Data.Code != "NOT_FOUND" {
			t.Errorf("%s %s: %d %q (Location %q), want 404 NOT_FOUND in the envelope", c.method, c.path, res.StatusCode, raw,
				res.Header.Get("Location"))
		}
	}
	if n := env.Count(t, "sessions"); n != sessions {
		t.Errorf("%d sessions opened through paths that are no endpoint, want none", n-sessions)
	}
	// Escaped slashes are part of a segment, not doubled slashes: the user "a//b" is checked.
	if status, data := restOutcome(t, env, "GET", "/depositor/a%2F%2Fb/check", key, ""); status != 200 || data["externalUserId"] != "a//b" {
		t.Errorf("GET /depositor/a%%2F%%2Fb/check: %d %v, want 200 for the user a//b", status, data)
	}
	// The widget's own redirect to its directory stays: /widget?sid= goes to /widget/?sid=.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.URL+"/widget?sid=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTemporaryRedirect || res.Header.Get("Location") != "/widget/?sid=x" {
		t.Errorf("GET /widget?sid=x: %d to %q, want 307 to /widget/?sid=x", res.StatusCode, res.Header.Get("Location"))
	}
}
