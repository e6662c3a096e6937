package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/tracing"
)

// ErrorDomain is the ErrorInfo domain of Coffer's errors.
const ErrorDomain = "coffer.v1"

// ToConnect turns any error into a *connect.Error carrying an ErrorInfo whose reason is the
// fault code (the same CODE the REST envelope shows).
func ToConnect(err error) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	fe := fault.As(err)
	ce = connect.NewError(fe.Code.ConnectCode(), errors.New(fe.Message))
	info := &errdetails.ErrorInfo{Reason: fe.Code.String(), Domain: ErrorDomain, Metadata: map[string]string{}}
	for k, v := range fe.Details {
		info.Metadata[k] = fmt.Sprint(v)
	}
	if fe.Field != "" {
		info.Metadata["field"] = fe.Field
	}
	if d, derr := connect.NewErrorDetail(info); derr == nil {
		ce.AddDetail(d)
	}
	if fe.RetryAfter > 0 {
		ce.Meta().Set("Retry-After", strconv.Itoa(fe.RetryAfter))
	}
	return ce
}

// errorInterceptor maps service errors to Connect errors and logs internal ones.
type errorInterceptor struct{ log *slog.Logger }

func (i errorInterceptor) report(ctx context.Context, procedure string, err error) error {
	if err == nil {
		return nil
	}
	switch fe := fault.As(err); {
	case errors.Is(err, context.Canceled):
	case fe.Code == fault.Internal:
		i.log.ErrorContext(ctx, "request failed", "procedure", procedure, "error", err)
	case fe.Code == fault.Unavailable && fe.Cause != nil:
		i.log.WarnContext(ctx, "request failed: a dependency is down", "procedure", procedure, "error", fe.Cause)
	}
	return ToConnect(err)
}

func (i errorInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		return res, i.report(ctx, req.Spec().Procedure, err)
	}
}

func (i errorInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i errorInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return i.report(ctx, conn.Spec().Procedure, next(ctx, conn))
	}
}

// metricsInterceptor counts requests and their latency per operation.
type metricsInterceptor struct{ m *metrics.Metrics }

func operationName(procedure string) string {
	return strings.TrimPrefix(procedure, "/coffer.v1.")
}

// MetricCode is the `code` label of request metrics and access logs for a call's error: the
// Connect code name ("ok" for none) the caller sees, on both transports.
func MetricCode(err error) string {
	if err == nil {
		return "ok"
	}
	return connect.CodeOf(ToConnect(err)).String()
}

func (i metricsInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		tracing.Annotate(ctx)
		res, err := next(ctx, req)
		code := MetricCode(err)
		tracing.SetCode(ctx, code)
		i.m.Observe("connect", operationName(req.Spec().Procedure), code, time.Since(start))
		return res, err
	}
}

func (i metricsInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i metricsInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		tracing.Annotate(ctx)
		err := next(ctx, conn)
		code := MetricCode(err)
		tracing.SetCode(ctx, code)
		i.m.Observe("connect", operationName(conn.Spec().Procedure), code, time.Since(start))
		return err
	}
}

// validateInterceptor checks unary and streaming requests against their protovalidate rules.
type validateInterceptor struct{}

func (validateInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if msg, ok := req.Any().(proto.Message); ok {
			if err := Validate(msg); err != nil {
				return nil, err
			}
		}
		return next(ctx, req)
	}
}

func (validateInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (validateInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, &validatingConn{StreamingHandlerConn: conn})
	}
}

type validatingConn struct{ connect.StreamingHandlerConn }

func (c *validatingConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	if m, ok := msg.(proto.Message); ok {
		return Validate(m)
	}
	return nil
}
