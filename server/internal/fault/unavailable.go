package fault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// dependencyMessage is what a caller reads when PostgreSQL (or the way to it) is down: the
// request may not have taken effect, and repeating it is safe (every write is idempotent or
// answers its current state).
const dependencyMessage = "the service is temporarily unavailable (a dependency is down); retry shortly"

// dependencyRetryAfter is the Retry-After, in seconds, of a dependency failure.
const dependencyRetryAfter = 1

// DependencyDown reports whether err says a dependency is unreachable or going away rather
// than that the request was wrong or the code is: a PostgreSQL restart (SQLSTATE class 57:
// operator intervention, such as 57P01 admin_shutdown), a broken connection (class 08, an
// unexpected EOF, reset, refused), a pool that cannot connect, or the server out of connections (class 53).
func DependencyDown(err error) bool {
	if err == nil {
		return false
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		class := pgErr.Code[:min(2, len(pgErr.Code))]
		return class == "57" || class == "08" || class == "53"
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.SafeToRetry(err),
		errors.Is(err, pgconn.ErrConnClosed), errors.Is(err, net.ErrClosed),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection it closed after a failure as "conn closed" without a type.
	return strings.Contains(err.Error(), "conn closed")
}

// dependencyUnavailable is the caller-facing error of a dependency failure; the cause goes to
// logs.
func dependencyUnavailable(cause error) *Error {
	return &Error{Code: Unavailable, Message: dependencyMessage, RetryAfter: dependencyRetryAfter, Cause: cause}
}

// NotAvailable reports something a request needs that cannot be had right now, such as a
// price, a rate, a chain or a provider, as UNAVAILABLE: the caller may try again. what names
// it ("price of %s"); the cause goes to logs.
func NotAvailable(cause error, what string, args ...any) *Error {
	return &Error{Code: Unavailable, Message: fmt.Sprintf("the %s is not available right now; try again shortly", fmt.Sprintf(what, args...)),
		Cause: cause}
}
