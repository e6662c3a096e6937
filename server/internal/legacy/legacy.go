// Package legacy serves the spec's REST paths and envelopes exactly, for operators who
// integrated against the interface specification. Each endpoint authenticates as the spec's
// table says, decodes the legacy JSON body into the operation's protobuf request, validates it
// with the same protovalidate rules as Connect, calls the same handler, and writes the
// envelope (or, for GET /chain and /admin/*, the raw value). No business rule lives here.
package legacy

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// Handler serves the REST compatibility layer.
type Handler struct {
	s       rpc.Servers
	authn   *rpc.Authenticator
	metrics *metrics.Metrics
	log     *slog.Logger
}

// Mount registers the spec's REST paths on mux, plus enveloped 404 and 405 answers.
func Mount(mux *http.ServeMux, s rpc.Servers, authn *rpc.Authenticator, m *metrics.Metrics, log *slog.Logger) {
	h := &Handler{s: s, authn: authn, metrics: m, log: log}
	routes := []struct {
		method, path string
		fn           func(http.ResponseWriter, *http.Request) error
	}{
		{"POST", "/session/deposit", h.createDepositSession},
		{"POST", "/session/withdraw", h.createWithdrawSession},
		{"POST", "/session/{uuid}/test-webhook", h.sendTestWebhook},
		{"POST", "/depositor/create", h.createDepositor},
		{"GET", "/depositor/{externalUserId}/check", h.checkDepositor},
		{"POST", "/depositor/address", h.depositAddress},
		{"GET", "/chain", h.listChains},
		{"POST", "/withdraw/direct-transfer", h.submitWithdrawal},
		{"POST", "/withdraw/{id}/decision", h.decideWithdrawal},
		{"GET", "/balances", h.listBalances},
		{"POST", "/admin/login", h.adminLogin},
		{"GET", "/admin/withdrawals", h.listWithdrawals},
		{"PATCH", "/admin/withdrawals/{id}/status", h.updateWithdrawalStatus},
	}
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, h.wrap(rt.method+" "+rt.path, rt.fn))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.Handle(path, h.wrap("405", func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return fault.New(fault.MethodNotAllowed, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow)
		}))
	}
	mux.Handle("/", h.wrap("404", func(_ http.ResponseWriter, r *http.Request) error {
		return fault.New(fault.NotFound, "no endpoint at %s %s", r.Method, r.URL.Path)
	}))
}

type statusWriter struct {
	http.ResponseWriter

	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// wrap turns an endpoint into a handler: errors become the error envelope, and every request
// is counted under its route.
func (h *Handler) wrap(operation string, fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		if err := fn(sw, r); err != nil {
			writeError(r.Context(), sw, h.log, err)
		}
		h.metrics.Observe("rest", operation, http.StatusText(sw.status), time.Since(start))
	})
}

// bind decodes and validates a request body into msg.
func bind(r *http.Request, msg proto.Message) error {
	if err := decodeBody(r, msg, false); err != nil {
		return err
	}
	return rpc.Validate(msg)
}

// bindWithPath decodes a body that must not carry the fields the path binds (pathFields), lets
// fromPath set them, and validates the whole request. optional allows an empty body.
func bindWithPath(r *http.Request, msg proto.Message, optional bool, fromPath func(), pathFields ...string) error {
	if err := decodeBody(r, msg, optional, pathFields...); err != nil {
		return err
	}
	fromPath()
	return rpc.Validate(msg)
}

func (h *Handler) operator(r *http.Request) (context.Context, error) {
	return h.authn.Operator(r.Context(), r.Header)
}

func (h *Handler) admin(r *http.Request) (context.Context, error) {
	return h.authn.Admin(r.Context(), r.Header)
}
