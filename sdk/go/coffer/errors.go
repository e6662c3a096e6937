package coffer

import (
	"errors"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// ErrorDomain is the ErrorInfo domain of Coffer's errors.
const ErrorDomain = "coffer.v1"

// Code is Coffer's error code of a failed call: the reason of the error's ErrorInfo detail,
// and the REST envelope's data.code.
type Code string

// Coffer's error codes (README, "Errors").
const (
	CodeInvalidArgument      Code = "INVALID_ARGUMENT"
	CodeUnauthenticated      Code = "UNAUTHENTICATED"
	CodeForbidden            Code = "FORBIDDEN"
	CodeNotFound             Code = "NOT_FOUND"
	CodeMethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	CodeConflict             Code = "CONFLICT"
	CodeSessionExpired       Code = "SESSION_EXPIRED"
	CodePayloadTooLarge      Code = "PAYLOAD_TOO_LARGE"
	CodeRequestTimeout       Code = "REQUEST_TIMEOUT"
	CodeUnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	CodeWithdrawDenied       Code = "WITHDRAW_DENIED"
	CodeFailedPrecondition   Code = "FAILED_PRECONDITION"
	CodeRateLimited          Code = "RATE_LIMITED"
	CodeInternal             Code = "INTERNAL"
	CodeNotImplemented       Code = "NOT_IMPLEMENTED"
	CodeUnavailable          Code = "UNAVAILABLE"
)

// Codes lists every code. It is a new slice each call.
func Codes() []Code {
	return []Code{CodeInvalidArgument, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
		CodeConflict, CodeSessionExpired, CodePayloadTooLarge, CodeRequestTimeout, CodeUnsupportedMediaType,
		CodeWithdrawDenied, CodeFailedPrecondition, CodeRateLimited, CodeInternal, CodeNotImplemented, CodeUnavailable}
}

// info returns Coffer's ErrorInfo of a failed call, or nil.
func info(err error) *errdetails.ErrorInfo {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return nil
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if i, ok := v.(*errdetails.ErrorInfo); ok && derr == nil && i.GetDomain() == ErrorDomain {
			return i
		}
	}
	return nil
}

// ErrorCode returns Coffer's code of a failed call (CodeInvalidArgument, CodeSessionExpired,
// ...), or "" when err carries none (a transport failure, a cancelled context).
func ErrorCode(err error) Code {
	return Code(info(err).GetReason())
}

// ErrorField returns the request field an INVALID_ARGUMENT (or CONFLICT) error names, in the
// API's JSON spelling ("amount", "externalUserId"), or "".
func ErrorField(err error) string {
	return info(err).GetMetadata()["field"]
}

// ErrorDetail returns one more fact a failed call carries by name, e.g. "errorCode" of a
// WITHDRAW_DENIED (the operator's WITHDRAW_REQUEST reply code), or "".
func ErrorDetail(err error, name string) string {
	return info(err).GetMetadata()[name]
}

// RetryAfter returns how long the server asked the caller to wait before trying again
// (UNAVAILABLE, RATE_LIMITED), or 0.
func RetryAfter(err error) time.Duration {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return 0
	}
	secs, perr := strconv.Atoi(ce.Meta().Get("Retry-After"))
	if perr != nil || secs <= 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}
