// Package rpc serves Coffer's Connect services (Connect, gRPC and gRPC-Web on one handler each).
// Handlers are thin: protobuf in, one service-layer call, protobuf out. Requests pass, in
// order, the OpenTelemetry, metrics, error-mapping, authentication and protovalidate interceptors. The REST
// layer (package legacy) calls the same handler methods after its own decoding.
package rpc

import (
	"context"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"connectrpc.com/otelconnect"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
)

// MaxRequestBytes bounds every request body; MaxSmallRequestBytes those of the operations
// whose requests are a few hundred bytes (logins, the deposit stream's opening message).
const (
	MaxRequestBytes      = 64 << 10
	MaxSmallRequestBytes = 4 << 10
)

// Servers are the service implementations.
type Servers struct {
	Session    *SessionServer
	Depositor  *DepositorServer
	Chain      *ChainServer
	Widget     *WidgetServer
	Withdrawal *WithdrawalServer
	Admin      *AdminServer
	Ops        *OpsServer
	Balance    *BalanceServer
	Deposit    *DepositServer
	Event      *EventServer
}

//nolint:gochecknoglobals // one interceptor for every handler; it reads the global tracer provider per call
var otelInterceptor = func() *otelconnect.Interceptor {
	i, err := otelconnect.NewInterceptor(otelconnect.WithoutMetrics())
	if err != nil {
		panic(err) // only for invalid options
	}
	return i
}()

func handlerOptions(m *metrics.Metrics, log *slog.Logger, authenticate connect.Interceptor) []connect.HandlerOption {
	// otelconnect first: the span covers the whole call and the metrics interceptor can put
	// the request id on it. Callers are outside the trust boundary: their trace context links
	// to the server span rather than parenting it (otelconnect's default).
	chain := []connect.Interceptor{otelInterceptor, metricsInterceptor{m}, errorInterceptor{log}}
	if authenticate != nil {
		chain = append(chain, authenticate)
	}
	chain = append(chain, validateInterceptor{})
	// Recovery is the innermost interceptor: a handler's panic becomes INTERNAL, which the
	// error interceptor logs (with the stack) and the metrics count like any other failure.
	recovered := connect.WithRecover(func(_ context.Context, _ connect.Spec, _ http.Header, p any) error { return fault.Recovered(p) })
	return []connect.HandlerOption{connect.WithInterceptors(chain...), recovered, connect.WithReadMaxBytes(MaxRequestBytes)}
}

// Mount registers the public services on mux: everything operators, users and admins call.
func Mount(mux *http.ServeMux, s Servers, authn *Authenticator, m *metrics.Metrics, log *slog.Logger) {
	opts := func(authenticate connect.Interceptor) []connect.HandlerOption {
		return handlerOptions(m, log, authenticate)
	}
	operatorAuth := newAuthInterceptor(authn.Operator)
	mux.Handle(cofferv1connect.NewSessionServiceHandler(s.Session, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewDepositorServiceHandler(s.Depositor, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewWithdrawalServiceHandler(s.Withdrawal, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewBalanceServiceHandler(s.Balance, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewDepositServiceHandler(s.Deposit, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewEventServiceHandler(s.Event, opts(operatorAuth)...))
	mux.Handle(cofferv1connect.NewChainServiceHandler(s.Chain, opts(nil)...))
	mux.Handle(cofferv1connect.NewWidgetServiceHandler(s.Widget, opts(nil)...))
	mux.Handle(cofferv1connect.NewAdminServiceHandler(s.Admin, opts(newAuthInterceptor(authn.Admin, cofferv1connect.AdminServiceLoginProcedure))...))
}

// MountInternal registers the service team's internal services on mux (the internal
// listener): OpsService and gRPC reflection, which lets `buf curl` and grpcurl discover the
// schema of every service.
func MountInternal(mux *http.ServeMux, s Servers, authn *Authenticator, m *metrics.Metrics, log *slog.Logger) {
	mux.Handle(cofferv1connect.NewOpsServiceHandler(s.Ops, handlerOptions(m, log, newAuthInterceptor(authn.Ops))...))
	reflector := grpcreflect.NewStaticReflector(
		cofferv1connect.SessionServiceName, cofferv1connect.DepositorServiceName, cofferv1connect.WithdrawalServiceName,
		cofferv1connect.ChainServiceName, cofferv1connect.WidgetServiceName, cofferv1connect.AdminServiceName,
		cofferv1connect.OpsServiceName, cofferv1connect.BalanceServiceName, cofferv1connect.DepositServiceName,
		cofferv1connect.EventServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
}
