// Package legacy serves the spec's REST paths and envelopes exactly, for operators who
// integrated against the interface specification. Each endpoint authenticates as the spec's
// table says, decodes the legacy JSON body into the operation's protobuf request, validates it
// with the same protovalidate rules as Connect, calls the same handler, and writes the
// envelope (or, for GET /chain and /admin/*, the raw value). No business rule lives here.
package legacy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/tracing"
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
		who          caller
		fn           func(http.ResponseWriter, *http.Request) error
	}{
		{"POST", "/session/deposit", operators, h.createDepositSession},
		{"POST", "/session/withdraw", operators, h.createWithdrawSession},
		{"POST", "/session/{uuid}/test-webhook", operators, h.sendTestWebhook},
		{"POST", "/depositor/create", operators, h.createDepositor},
		{"GET", "/depositor/{externalUserId}/check", operators, h.checkDepositor},
		{"POST", "/depositor/address", anyone, h.depositAddress},
		{"GET", "/chain", anyone, h.listChains},
		{"POST", "/withdraw/direct-transfer", anyone, h.submitWithdrawal},
		{"POST", "/withdraw/{id}/decision", operators, h.decideWithdrawal},
		{"GET", "/balances", operators, h.listBalances},
		{"GET", "/deposits", operators, h.listDeposits},
		{"GET", "/deposits/{depositId}", operators, h.getDeposit},
		{"GET", "/withdrawals", operators, h.listOwnWithdrawals},
		{"GET", "/withdrawals/{withdrawRequestId}", operators, h.getOwnWithdrawal},
		{"GET", "/events", operators, h.listEvents},
		{"POST", "/events/{eventId}/redeliver", operators, h.redeliverEvent},
		{"POST", "/admin/login", anyone, h.adminLogin},
		{"GET", "/admin/withdrawals", admins, h.listWithdrawals},
		{"PATCH", "/admin/withdrawals/{id}/status", admins, h.updateWithdrawalStatus},
	}
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, otelhttp.NewHandler(h.wrap(rt.method+" "+rt.path, rt.who, rt.fn), rt.method+" "+rt.path))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.Handle(path, h.wrap("405", anyone, func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return fault.New(fault.MethodNotAllowed, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow)
		}))
	}
	mux.Handle("/", h.wrap("404", anyone, func(_ http.ResponseWriter, r *http.Request) error {
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

// caller is who may call an endpoint, as the spec's table says.
type caller int

const (
	anyone    caller = iota // no credentials (the widget's calls, the chain list, admin login)
	operators               // an operator's API key
	admins                  // an admin's session token
)

// wrap turns an endpoint into a handler: it authenticates the caller first (the endpoint sees
// the authenticated context as r.Context()), errors become the error envelope, and every
// request is counted under its route.
func (h *Handler) wrap(operation string, who caller, fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		tracing.Annotate(r.Context())
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		ctx, err := h.authenticate(r, who)
		if err == nil {
			err = serve(fn, sw, r.WithContext(ctx)) //nolint:contextcheck // ctx is r.Context() with the authenticated caller (authenticate derives it)
		}
		code := fault.MetricCode(sw.status)
		if err != nil {
			envelope.Error(r.Context(), sw, h.log, err)
			code = rpc.MetricCode(err)
		}
		tracing.SetCode(r.Context(), code)
		h.metrics.Observe("rest", operation, code, time.Since(start))
	})
}

// serve runs an endpoint; a panic becomes INTERNAL in the error envelope (its stack goes to
// the log with the error), as a Connect handler's does (rpc's connect.WithRecover).
func serve(fn func(http.ResponseWriter, *http.Request) error, w http.ResponseWriter, r *http.Request) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p) // net/http's way to abort a response: not a bug
			}
			err = fault.Recovered(p)
		}
	}()
	return fn(w, r)
}

// call decodes and validates the body into the operation's request and calls the service
// with it.
func call[Req any, PReq interface {
	*Req
	proto.Message
}, Res any](r *http.Request, method func(context.Context, PReq) (Res, error)) (Res, error) {
	return callWithPath(r, method, false, nil)
}

// callWithPath is call for a path that binds fields of the request: the body must not carry
// them (pathFields), fromPath sets them, and the whole request is validated. optional allows
// an empty body.
func callWithPath[Req any, PReq interface {
	*Req
	proto.Message
}, Res any](r *http.Request, method func(context.Context, PReq) (Res, error), optional bool, fromPath func(PReq), pathFields ...string) (Res, error) {
	req := PReq(new(Req))
	if err := decodeBody(r, req, optional, pathFields...); err != nil {
		var zero Res
		return zero, err
	}
	if fromPath != nil {
		fromPath(req)
	}
	if err := rpc.Validate(req); err != nil {
		var zero Res
		return zero, err
	}
	return method(r.Context(), req)
}

func (h *Handler) authenticate(r *http.Request, who caller) (context.Context, error) {
	switch who {
	case operators:
		return h.authn.Operator(r.Context(), r.Header)
	case admins:
		return h.authn.Admin(r.Context(), r.Header)
	case anyone:
	}
	return r.Context(), nil
}
