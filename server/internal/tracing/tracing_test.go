package tracing

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMiddlewareRequestIDAndAccessLog(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, incoming string
		kept           bool
	}{
		{"sane id kept", "req-1.A_b:2", true},
		{"none", "", false},
		{"space", "a b", false},
		{"quote", `a"b`, false},
		{"too long", strings.Repeat("a", MaxIDLength+1), false},
		{"longest kept", strings.Repeat("a", MaxIDLength), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil)))
			var inner string
			h := Middleware(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner = ID(r.Context())
				SetOperator(r.Context(), "op-1")
				log.InfoContext(r.Context(), "inside")
				w.WriteHeader(http.StatusConflict)
			}))
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/deposits?key=SECRET", strings.NewReader(`{"secret":"body"}`))
			req.Header.Set(Header, tc.incoming)
			req.Header.Set("Authorization", "Bearer SECRET")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := rec.Header().Get(Header)
			if got != inner || got == "" {
				t.Fatalf("response id %q, handler's %q", got, inner)
			}
			if (got == tc.incoming) != tc.kept {
				t.Fatalf("incoming %q, answered %q, want kept=%v", tc.incoming, got, tc.kept)
			}
			if !tc.kept && len(got) != 32 {
				t.Fatalf("generated id %q", got)
			}
			if strings.Contains(buf.String(), "SECRET") || strings.Contains(buf.String(), "body") {
				t.Fatalf("log shows a secret: %s", buf.String())
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 2 {
				t.Fatalf("log lines: %q", lines)
			}
			var inside, access map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &inside); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(lines[1]), &access); err != nil {
				t.Fatal(err)
			}
			if inside["request_id"] != got {
				t.Errorf("handler's log line: %v", inside)
			}
			want := map[string]any{"msg": "access", "method": "POST", "path": "/deposits", "status": float64(409),
				"code": "already_exists", "request_id": got, "operator_id": "op-1", "client_ip": nil}
			for k, v := range want {
				if v != nil && access[k] != v {
					t.Errorf("access %s = %v, want %v (%v)", k, access[k], v, access)
				}
			}
			if _, ok := access["duration"]; !ok {
				t.Errorf("access line has no duration: %v", access)
			}
		})
	}
}

func TestLogHandlerOutsideRequest(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "x")
	log.InfoContext(t.Context(), "job")
	if strings.Contains(buf.String(), "request_id") || !strings.Contains(buf.String(), "component=x") {
		t.Fatalf("log: %s", buf.String())
	}
}

func TestEnabled(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		if got := Enabled(env(tc.env)); got != tc.want {
			t.Errorf("Enabled(%v) = %v", tc.env, got)
		}
	}
}
