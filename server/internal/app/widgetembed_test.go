package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestWidgetURLIsEmbeddable pins the spec's "there are no embedding restrictions": the exact
// url of a session response, with or without the optional theme parameter, is an HTML page
// any origin may frame (no X-Frame-Options, CSP frame-ancestors *). The browser test checks
// the same in a cross-origin iframe, but only where chromium is installed.
func TestWidgetURLIsEmbeddable(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	cases := []struct{ name, path, suffix string }{
		{"deposit session url", "/session/deposit", ""},
		{"withdraw session url", "/session/withdraw", ""},
		{"url with a theme", "/session/deposit", "&theme=no-such-theme"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := mustREST(t, env, "POST", c.path, key,
				`{"externalUserId":"embed","lang":"en","platformFiatCurrency":"USD","userBalance":"10","amount":"5"}`)
			widgetURL, _ := s.data["url"].(string)
			if !strings.HasPrefix(widgetURL, env.URL+"/widget/?sid=") {
				t.Fatalf("session url %q, want {widget_url}/?sid=<sid>", widgetURL)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, widgetURL+c.suffix, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET %s: %d %s, want 200 text/html", widgetURL+c.suffix, res.StatusCode, res.Header.Get("Content-Type"))
			}
			if xfo := res.Header.Get("X-Frame-Options"); xfo != "" {
				t.Errorf("the widget answers X-Frame-Options %q: operators could not embed it", xfo)
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors *") {
				t.Errorf("the widget's CSP %q does not let every origin frame it", csp)
			}
		})
	}
}
