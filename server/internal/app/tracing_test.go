package app_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/tracing"
)

// logLines decodes the JSON log lines the server wrote.
func logLines(t *testing.T, logs *proctest.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestRequestTracing: a REST and a Connect request each get a request id (the caller's when
// sane), returned in X-Request-ID, written on one access log line with the operator and the
// result code, and put on the request's OpenTelemetry span (in-memory exporter).
func TestRequestTracing(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	// The global provider: otelconnect and otelhttp take it. Other tests' spans land here too;
	// this test looks only for its request ids.
	otel.SetTracerProvider(tp)
	var logs proctest.Buffer
	env := apptest.Start(t, apptest.Options{Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	op, key := env.Operator(t, domain.OperatorSettings{})

	do := func(path, requestID, body string) (int, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, env.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(tracing.Header, requestID)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	_, rest := do("/session/deposit", "trace-rest-1", `{"externalUserId":"u","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"1"}`)
	if got := rest.Get(tracing.Header); got != "trace-rest-1" {
		t.Fatalf("REST X-Request-ID %q, want the caller's", got)
	}
	// An id with a space is not sane: the server makes its own.
	status, conn := do("/coffer.v1.SessionService/CreateDepositSession", "not sane", `{"externalUserId":"u"}`)
	connID := conn.Get(tracing.Header)
	if status != http.StatusBadRequest || len(connID) != 32 {
		t.Fatalf("Connect: %d, X-Request-ID %q", status, connID)
	}

	for id, want := range map[string]map[string]any{
		"trace-rest-1": {"path": "/session/deposit", "status": float64(200), "code": "ok", "operator_id": op.ID},
		connID:         {"path": "/coffer.v1.SessionService/CreateDepositSession", "status": float64(400), "code": "invalid_argument", "operator_id": op.ID},
	} {
		var access map[string]any
		for _, l := range logLines(t, &logs) {
			if l["msg"] == "access" && l["request_id"] == id {
				access = l
			}
		}
		if access == nil {
			t.Fatalf("no access line for %s", id)
		}
		for k, v := range want {
			if access[k] != v {
				t.Errorf("%s: access %s = %v, want %v", id, k, access[k], v)
			}
		}
		if access["client_ip"] == nil || access["duration"] == nil {
			t.Errorf("%s: access line %v", id, access)
		}
		found := false
		for _, s := range spans.GetSpans() {
			for _, a := range s.Attributes {
				if a.Key == tracing.AttrRequestID && a.Value.AsString() == id {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("no span carries request id %s", id)
		}
	}
}
