// Package legacy serves the spec's REST paths and envelopes exactly, for operators who
// integrated against the interface specification. Each endpoint authenticates as the spec's
// table says, decodes the legacy JSON body into the operation's protobuf request, validates it
// with the same protovalidate rules as Connect, calls the same handler, and writes the
// envelope (or, for GET /chain and /admin/*, the raw value). No business rule lives here.
package legacy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/envelope"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/session"
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
	const deposited, withdrawn = "Deposit session created", "Withdraw session created"
	routes := []struct {
		method, path string
		who          caller
		fn           func(http.ResponseWriter, *http.Request) error
		// byKey, when set, is fn for an operator key checked in fn's own statement (one round
		// trip fewer); it answers only when it succeeds, else fn answers as usual.
		byKey func(http.ResponseWriter, *http.Request) (bool, error)
	}{
		{"POST", "/session/deposit", operators, createSession(deposited, s.Session.CreateDepositSession),
			createSessionByKey(deposited, s.Session.CreateDepositSessionByKey)},
		{"POST", "/session/withdraw", operators, createSession(withdrawn, s.Session.CreateWithdrawSession),
			createSessionByKey(withdrawn, s.Session.CreateWithdrawSessionByKey)},
		{"POST", "/session/{uuid}/test-webhook", operators, h.sendTestWebhook, nil},
		{"POST", "/depositor/create", operators, h.createDepositor, nil},
		{"GET", "/depositor/{externalUserId}/check", operators, h.checkDepositor, nil},
		{"POST", "/depositor/address", anyone, h.depositAddress, nil},
		{"GET", "/chain", anyone, h.listChains, nil},
		{"POST", "/withdraw/direct-transfer", anyone, h.submitWithdrawal, nil},
		{"POST", "/withdraw/{id}/decision", operators, h.decideWithdrawal, nil},
		{"GET", "/balances", operators, h.listBalances, nil},
		{"GET", "/deposits", operators, h.listDeposits, nil},
		{"GET", "/deposits/{depositId}", operators, h.getDeposit, nil},
		{"GET", "/withdrawals", operators, h.listOwnWithdrawals, nil},
		{"GET", "/withdrawals/{withdrawRequestId}", operators, h.getOwnWithdrawal, nil},
		{"GET", "/events", operators, h.listEvents, nil},
		{"POST", "/events/{eventId}/redeliver", operators, h.redeliverEvent, nil},
		{"POST", "/admin/login", anyone, h.adminLogin, nil},
		{"GET", "/admin/withdrawals", admins, h.listWithdrawals, nil},
		{"PATCH", "/admin/withdrawals/{id}/status", admins, h.updateWithdrawalStatus, nil},
	}
	allowed := map[string][]string{}
	for _, rt := range routes {
		plain := h.wrap(rt.method+" "+rt.path, rt.who, rt.fn, rt.byKey)
		mux.Handle(rt.method+" "+rt.path, tracing.WhenInstalled(otelhttp.NewHandler(plain, rt.method+" "+rt.path), plain))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.Handle(path, h.wrap("405", anyone, func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Allow", allow)
			return fault.New(fault.MethodNotAllowed, "method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow)
		}, nil))
	}
	mux.Handle("/", h.wrap("404", anyone, noEndpoint, nil))
}

func noEndpoint(_ http.ResponseWriter, r *http.Request) error {
	return fault.New(fault.NotFound, "no endpoint at %s %s", r.Method, r.URL.Path)
}

// ExactPaths serves next only for paths written as the spec writes them. net/http's ServeMux
// answers a path that merely cleans to an endpoint ("//session/deposit", "/chain/.") with a
// 307 redirect and an HTML body, which a client follows with the same method and body; such a
// path is no endpoint, so it gets the enveloped 404, as a trailing slash does.
func ExactPaths(next http.Handler, m *metrics.Metrics, log *slog.Logger) http.Handler {
	notFound := (&Handler{metrics: m, log: log}).wrap("404", anyone, noEndpoint, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The escaped path, as ServeMux matches it: "a%2F%2Fb" is one segment of a user id.
		if p := r.URL.EscapedPath(); r.Method != http.MethodConnect && p != cleanPath(p) {
			notFound.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanPath is the path ServeMux would redirect to (net/http's cleanPath): rooted, without
// "." and ".." segments or doubled slashes, keeping a trailing slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
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
// request is counted under its route. byKey, when not nil, is tried first (see Mount).
func (h *Handler) wrap(operation string, who caller, fn func(http.ResponseWriter, *http.Request) error,
	byKey func(http.ResponseWriter, *http.Request) (bool, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		tracing.Annotate(r.Context())
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		var done bool
		var err error
		if byKey != nil {
			done, err = serveByKey(byKey, sw, r)
		}
		if !done {
			var ctx context.Context
			ctx, err = h.authenticate(r, who)
			if err == nil {
				err = serve(fn, sw, r.WithContext(ctx)) //nolint:contextcheck // ctx is r.Context() with the authenticated caller (authenticate derives it)
			}
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

// serveByKey is serve for an endpoint's byKey variant: done reports whether it answered (err
// is then its error, as serve's). When it did not, the request body it read is put back for
// the general path.
func serveByKey(byKey func(http.ResponseWriter, *http.Request) (bool, error), w http.ResponseWriter, r *http.Request) (done bool, err error) {
	body, readErr := io.ReadAll(http.MaxBytesReader(nil, r.Body, rpc.MaxRequestBytes))
	if errors.Is(readErr, os.ErrDeadlineExceeded) {
		// The body did not arrive within the read timeout: net/http has cancelled the request's
		// context with the connection, so the general path could not even authenticate.
		return true, bodyReadError(readErr)
	}
	if readErr != nil { // too large: the general path authenticates, then reads the same error
		r.Body = replay(body, readErr)
		return false, nil
	}
	r.Body = replay(body, nil)
	err = serve(func(w http.ResponseWriter, r *http.Request) error {
		done, err = byKey(w, r)
		return err
	}, w, r)
	if !done && err == nil {
		r.Body = replay(body, nil)
		return false, nil
	}
	return true, err // answered, or panicked (INTERNAL, as serve answers)
}

// replay reads body, then ends with err (io.EOF when nil).
func replay(body []byte, err error) io.ReadCloser {
	if err == nil {
		err = io.EOF
	}
	return io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// message is an operation's request type: a pointer to its protobuf message, which the
// endpoint allocates and decodes the body into.
type message[Req any] interface {
	*Req
	proto.Message
}

// byKey is call for an operation's byKey variant (rpc.SessionServer.CreateDepositSessionByKey):
// done is false, and nothing was written, when it declined (no Bearer credential, a body the
// general path must refuse, or the method's session.ErrNotByKey).
func byKey[Req any, PReq message[Req], Res any](r *http.Request, method func(context.Context, string, PReq) (Res, error)) (res Res, done bool, err error) {
	key, ok := auth.Bearer(r.Header)
	if !ok {
		return res, false, nil
	}
	req := PReq(new(Req))
	if decodeBody(r, req, false) != nil || rpc.Validate(req) != nil {
		return res, false, nil //nolint:nilerr // declined: the general path reads the body again and answers its error
	}
	res, err = method(r.Context(), key, req)
	if errors.Is(err, session.ErrNotByKey) {
		return res, false, nil
	}
	return res, true, err
}

// call decodes and validates the body into the operation's request and calls the service
// with it.
func call[Req any, PReq message[Req], Res any](r *http.Request, method func(context.Context, PReq) (Res, error)) (Res, error) {
	return callWithPath(r, method, false, nil)
}

// callWithPath is call for a path that binds fields of the request: the body must not carry
// them (pathFields), fromPath sets them, and the whole request is validated. optional allows
// an empty body.
func callWithPath[Req any, PReq message[Req], Res any](r *http.Request, method func(context.Context, PReq) (Res, error), optional bool, fromPath func(PReq), pathFields ...string) (Res, error) {
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
