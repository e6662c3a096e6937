package rpc

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/proctest"
)

// TestHandlerPanicIsInternal: a handler that panics answers INTERNAL "internal error" (not a
// dropped connection), its panic and stack are logged, and the request is counted as internal.
// Without handlerOptions' recovery the client sees the connection reset by net/http.
func TestHandlerPanicIsInternal(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer // written by the server's goroutines
	m := metrics.New()
	opts := handlerOptions(m, slog.New(slog.NewTextHandler(&logs, nil)), nil)
	const unary, stream = "/coffer.test.Panic/Unary", "/coffer.test.Panic/Stream"
	mux := http.NewServeMux()
	mux.Handle(unary, connect.NewUnaryHandler(unary, func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
		panic("unary boom")
	}, opts...))
	mux.Handle(stream, connect.NewServerStreamHandler(stream, func(context.Context, *connect.Request[emptypb.Empty], *connect.ServerStream[emptypb.Empty]) error {
		panic("stream boom")
	}, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	_, err := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+unary).CallUnary(t.Context(), connect.NewRequest(&emptypb.Empty{}))
	if connect.CodeOf(err) != connect.CodeInternal || !strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "boom") {
		t.Fatalf("unary panic answered %v; want INTERNAL internal error, the panic kept from the caller", err)
	}
	s, err := connect.NewClient[emptypb.Empty, emptypb.Empty](srv.Client(), srv.URL+stream).CallServerStream(t.Context(), connect.NewRequest(&emptypb.Empty{}))
	if err != nil {
		t.Fatal(err)
	}
	for s.Receive() {
	}
	if connect.CodeOf(s.Err()) != connect.CodeInternal {
		t.Fatalf("stream panic answered %v; want INTERNAL", s.Err())
	}
	_ = s.Close()
	for _, want := range []string{"panic: unary boom", "panic: stream boom", "recover_internal_test.go"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil))
	for _, p := range []string{unary, stream} {
		if want := `coffer_requests_total{code="internal",operation="` + p + `",transport="connect"} 1`; !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
