package tracing

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestSetupExportsOverOTLP: with OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach the collector
// over OTLP/HTTP when the provider shuts down (the process's exit path).
func TestSetupExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies int
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		bodies += len(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)
	shutdown, err := Setup(t.Context(), "worker")
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(t.Context(), "work")
	span.End()
	if err := shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "POST /v1/traces application/x-protobuf" || bodies == 0 {
		t.Fatalf("collector saw %v (%d bytes)", paths, bodies)
	}
}

func TestSetupRejectsUnknownProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	t.Setenv("OTEL_SDK_DISABLED", "")
	if _, err := Setup(t.Context(), "api"); err == nil {
		t.Fatal("http/json accepted")
	}
}

// TestWhenInstalled: legacy routes run otelhttp only while a tracer provider is installed.
func TestWhenInstalled(t *testing.T) {
	var served string
	handler := func(name string) http.Handler {
		return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = name })
	}
	h := WhenInstalled(handler("traced"), handler("plain"))
	serve := func() string {
		served = ""
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil))
		return served
	}
	prev := otel.GetTracerProvider()
	defer otel.SetTracerProvider(prev)
	if prev == placeholder && (Installed() || serve() != "plain") {
		t.Fatalf("no provider installed: Installed %v, served %q", Installed(), serve())
	}
	otel.SetTracerProvider(sdktrace.NewTracerProvider())
	if !Installed() || serve() != "traced" {
		t.Fatalf("a provider installed: Installed %v, served %q", Installed(), serve())
	}
}
