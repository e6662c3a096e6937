// Package fault is Coffer's error model: every failure a caller can see carries a Code,
// and each Code maps, in one table, to the HTTP status of the REST layer and the
// connect.Code of the Connect/gRPC layer. Services return *Error; transports translate.
package fault

import (
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
)

// Code is a stable, documented error code (the REST envelope's data.code and the
// ErrorInfo reason over Connect). The zero Code is no code: every real one is a constant below.
type Code int

// The codes. Adding one is a contract change: document it in the README, and decide its
// name, HTTP status and Connect code in info (exhaustive lint fails until it is decided).
const (
	InvalidArgument Code = iota + 1
	Unauthenticated
	Forbidden
	NotFound
	MethodNotAllowed
	Conflict
	SessionExpired
	PayloadTooLarge
	RequestTimeout
	UnsupportedMediaType
	WithdrawDenied
	FailedPrecondition
	RateLimited
	Internal
	NotImplemented
	Unavailable
)

// codeInfo is what a code maps to on each transport.
type codeInfo struct {
	name    string
	status  int
	connect connect.Code
}

// info is the one table from a code to its wire name, HTTP status and Connect code.
func (c Code) info() codeInfo {
	switch c {
	case InvalidArgument:
		return codeInfo{"INVALID_ARGUMENT", http.StatusBadRequest, connect.CodeInvalidArgument}
	case Unauthenticated:
		return codeInfo{"UNAUTHENTICATED", http.StatusUnauthorized, connect.CodeUnauthenticated}
	case Forbidden:
		return codeInfo{"FORBIDDEN", http.StatusForbidden, connect.CodePermissionDenied}
	case NotFound:
		return codeInfo{"NOT_FOUND", http.StatusNotFound, connect.CodeNotFound}
	case MethodNotAllowed:
		return codeInfo{"METHOD_NOT_ALLOWED", http.StatusMethodNotAllowed, connect.CodeUnimplemented}
	case Conflict:
		return codeInfo{"CONFLICT", http.StatusConflict, connect.CodeAlreadyExists}
	case SessionExpired:
		return codeInfo{"SESSION_EXPIRED", http.StatusGone, connect.CodeFailedPrecondition}
	case PayloadTooLarge:
		return codeInfo{"PAYLOAD_TOO_LARGE", http.StatusRequestEntityTooLarge, connect.CodeResourceExhausted}
	case RequestTimeout:
		return codeInfo{"REQUEST_TIMEOUT", http.StatusRequestTimeout, connect.CodeDeadlineExceeded}
	case UnsupportedMediaType:
		return codeInfo{"UNSUPPORTED_MEDIA_TYPE", http.StatusUnsupportedMediaType, connect.CodeInvalidArgument}
	case WithdrawDenied:
		return codeInfo{"WITHDRAW_DENIED", http.StatusUnprocessableEntity, connect.CodeFailedPrecondition}
	case FailedPrecondition:
		return codeInfo{"FAILED_PRECONDITION", http.StatusUnprocessableEntity, connect.CodeFailedPrecondition}
	case RateLimited:
		return codeInfo{"RATE_LIMITED", http.StatusTooManyRequests, connect.CodeResourceExhausted}
	case Internal:
		return codeInfo{"INTERNAL", http.StatusInternalServerError, connect.CodeInternal}
	case NotImplemented:
		return codeInfo{"NOT_IMPLEMENTED", http.StatusNotImplemented, connect.CodeUnimplemented}
	case Unavailable:
		return codeInfo{"UNAVAILABLE", http.StatusServiceUnavailable, connect.CodeUnavailable}
	}
	// The zero Code (or a conversion from an int): no name, as the zero struct had.
	return codeInfo{}
}

// String is the wire name, e.g. "SESSION_EXPIRED".
func (c Code) String() string { return c.info().name }

// HTTPStatus is the REST layer's status for the code.
func (c Code) HTTPStatus() int { return c.info().status }

// ConnectCode is the Connect/gRPC code for the code.
func (c Code) ConnectCode() connect.Code { return c.info().connect }

// Error is a caller-visible failure. Message is safe to show to the caller; Cause is for logs.
type Error struct {
	Code    Code
	Message string
	// Field names the offending request field (JSON name): for INVALID_ARGUMENT, and for a
	// CONFLICT caused by one field (a reused operatorReference with another amount, say).
	Field string
	// Details are extra string fields for the REST envelope's data and the ErrorInfo metadata
	// (for example errorCode of WITHDRAW_DENIED).
	Details map[string]any
	// RetryAfter, in seconds, for RATE_LIMITED.
	RetryAfter int
	Cause      error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return e.Code.String() + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an error with a code and a caller-facing message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid reports a bad request field; field is the JSON name ("amount").
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return &Error{Code: InvalidArgument, Message: msg, Field: field}
}

// Wrap hides an unexpected error behind INTERNAL, or behind UNAVAILABLE when a dependency is
// down (DependencyDown); the cause goes to logs only.
func Wrap(err error, format string, args ...any) *Error {
	cause := fmt.Errorf(format+": %w", append(args, err)...)
	if DependencyDown(err) {
		return dependencyUnavailable(cause)
	}
	return &Error{Code: Internal, Message: "internal error", Cause: cause}
}

// As returns the *Error in err's chain, or one wrapping err: UNAVAILABLE when a dependency is
// down (DependencyDown), INTERNAL otherwise. An INTERNAL error whose cause is a dependency
// failure is answered as UNAVAILABLE too.
func As(err error) *Error {
	if fe, ok := errors.AsType[*Error](err); ok {
		if fe.Code == Internal && DependencyDown(fe.Cause) {
			return dependencyUnavailable(fe.Cause)
		}
		return fe
	}
	if DependencyDown(err) {
		return dependencyUnavailable(err)
	}
	return &Error{Code: Internal, Message: "internal error", Cause: err}
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	var fe *Error
	return errors.As(err, &fe) && fe.Code == code
}

// FromHTTPStatus is the first code (in declaration order) whose HTTP status is status, the
// reverse of the table above; the zero Code when none has it.
func FromHTTPStatus(status int) Code {
	for c := Code(1); c.String() != ""; c++ {
		if c.HTTPStatus() == status {
			return c
		}
	}
	return 0
}

// MetricCode is the `code` label of request metrics and access logs for a response with an
// HTTP status: the Connect code name ("invalid_argument", "ok" below 400), one vocabulary for
// REST and Connect. A status the table does not know is "unknown".
func MetricCode(status int) string {
	if status < http.StatusBadRequest {
		return "ok"
	}
	if c := FromHTTPStatus(status); c != 0 {
		return c.ConnectCode().String()
	}
	return connect.CodeUnknown.String()
}
