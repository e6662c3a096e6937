package legacy

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/metrics"
)

// TestEndpointPanicIsInternal: an endpoint that panics answers 500 in the error envelope with
// code INTERNAL (not a dropped connection), the panic and its stack are logged, the request is
// counted as internal; net/http's ErrAbortHandler still aborts.
func TestEndpointPanicIsInternal(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	m := metrics.New()
	h := &Handler{metrics: m, log: slog.New(slog.NewTextHandler(&logs, nil))}
	rec := httptest.NewRecorder()
	h.wrap("GET /boom", anyone, func(http.ResponseWriter, *http.Request) error { panic("rest boom") }, nil).
		ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/boom", nil))
	if body := rec.Body.String(); rec.Code != http.StatusInternalServerError || body !=
		`{"status":"error","message":"internal error","data":{"code":"INTERNAL"}}`+"\n" {
		t.Fatalf("panic answered %d %s", rec.Code, body)
	}
	if !strings.Contains(logs.String(), "panic: rest boom") || !strings.Contains(logs.String(), "recover_internal_test.go") {
		t.Errorf("log lacks the panic and its stack:\n%s", logs.String())
	}
	scrape := httptest.NewRecorder()
	m.Handler().ServeHTTP(scrape, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	if want := `coffer_requests_total{code="internal",operation="GET /boom",transport="rest"} 1`; !strings.Contains(scrape.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}

	defer func() {
		if err, _ := recover().(error); !errors.Is(err, http.ErrAbortHandler) {
			t.Errorf("ErrAbortHandler became %v; want it re-panicked", err)
		}
	}()
	h.wrap("GET /abort", anyone, func(http.ResponseWriter, *http.Request) error { panic(http.ErrAbortHandler) }, nil).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/abort", nil))
}
