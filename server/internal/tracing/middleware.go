package tracing

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// AttrRequestID is the span attribute carrying the request id.
const AttrRequestID = attribute.Key("coffer.request_id")

// Middleware gives each request its id (a sane incoming X-Request-ID, else a new one), returns
// it in the X-Request-ID response header, and writes one access log line when the request
// ends: method, path (the procedure for Connect), HTTP status, result code, duration, request
// id, operator id when one authenticated, client address. Never a body, a query string or a
// header value: they can carry credentials.
func Middleware(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(Header)
		if !saneID(id) {
			id = newID()
		}
		req := &Request{ID: id}
		w.Header().Set(Header, id)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(With(r.Context(), req)))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		operatorID, code := req.snapshot()
		if code == "" {
			code = fault.MetricCode(status)
		}
		attrs := []slog.Attr{
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", status),
			slog.String("code", code), slog.Duration("duration", time.Since(start)), slog.String("request_id", id),
		}
		if operatorID != "" {
			attrs = append(attrs, slog.String("operator_id", operatorID))
		}
		if a := clientip.From(r.Context()); a.IsValid() {
			attrs = append(attrs, slog.String("client_ip", a.String()))
		}
		level := slog.LevelInfo
		if quiet[r.URL.Path] && status < http.StatusBadRequest {
			level = slog.LevelDebug // probes and scrapes every few seconds
		}
		log.LogAttrs(r.Context(), level, "access", attrs...)
	})
}

//nolint:gochecknoglobals // a constant set
var quiet = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// Annotate puts the request id on ctx's span (the transports call it once their span exists).
func Annotate(ctx context.Context) {
	if id := ID(ctx); id != "" {
		trace.SpanFromContext(ctx).SetAttributes(AttrRequestID.String(id))
	}
}

// statusWriter remembers the status written; Unwrap keeps http.ResponseController (flushes
// of event streams, deadlines) working through it.
type statusWriter struct {
	http.ResponseWriter

	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
