package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A dependency that is down answers 503 UNAVAILABLE (Connect Unavailable) with Retry-After,
// not 500: what PostgreSQL says on a restart, broken and refused connections, a pool that
// cannot connect. Everything else stays what it was.
func TestDependencyDownIsUnavailable(t *testing.T) {
	t.Parallel()
	var d net.Dialer
	_, dialErr := d.DialContext(t.Context(), "tcp", "127.0.0.1:1") // nothing listens on port 1
	connectErr, cerr := pgconn.Connect(context.Background(), "postgres://u@127.0.0.1:1/db?connect_timeout=1")
	if connectErr != nil || cerr == nil {
		t.Fatal("connected to port 1")
	}
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"restart: admin_shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, Unavailable},
		{"crash_shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P02"}, Unavailable},
		{"starting up", &pgconn.PgError{Severity: "FATAL", Code: "57P03"}, Unavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, Unavailable},
		{"too many connections", &pgconn.PgError{Code: "53300"}, Unavailable},
		{"pool cannot connect", cerr, Unavailable},
		{"refused", dialErr, Unavailable},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), Unavailable},
		{"cut mid-message", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), Unavailable},
		{"closed", pgconn.ErrConnClosed, Unavailable},
		{"unique violation", &pgconn.PgError{Code: "23505"}, Internal},
		{"syntax error", &pgconn.PgError{Code: "42601"}, Internal},
		{"a plain bug", errors.New("nil map"), Internal},
		{"end of a body", io.EOF, Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for how, fe := range map[string]*Error{"As": As(c.err), "Wrap": Wrap(c.err, "load"), "As(Wrap)": As(fmt.Errorf("x: %w", Wrap(c.err, "load")))} {
				if fe.Code != c.want {
					t.Errorf("%s: %s, want %s", how, fe.Code, c.want)
				}
				if c.want == Unavailable && (fe.RetryAfter != 1 || fe.Code.HTTPStatus() != 503 || fe.Message == "" || !errors.Is(fe, c.err)) {
					t.Errorf("%s: %+v: want 503 with Retry-After 1, a message, and the cause kept for logs", how, fe)
				}
			}
		})
	}
	// A code the service chose stays: a refusal is not turned into 503.
	if fe := As(New(Conflict, "taken")); fe.Code != Conflict {
		t.Errorf("a chosen code changed to %s", fe.Code)
	}
}

// NotAvailable: UNAVAILABLE (503, Connect Unavailable) naming what is missing, the cause kept
// for logs only.
func TestNotAvailable(t *testing.T) {
	t.Parallel()
	cause := errors.New("feed 0xabc: stale price")
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{NotAvailable(cause, "price of %s", "ETH"), "the price of ETH is not available right now; try again shortly"},
		{NotAvailable(cause, "off-ramp provider"), "the off-ramp provider is not available right now; try again shortly"},
	} {
		if c.err.Code != Unavailable || c.err.Message != c.want || !errors.Is(c.err, cause) || c.err.Code.HTTPStatus() != 503 {
			t.Errorf("%+v, want UNAVAILABLE %q with the cause", c.err, c.want)
		}
		if fe := As(fmt.Errorf("quote: %w", c.err)); fe != c.err {
			t.Errorf("As changed it: %+v", fe)
		}
	}
}
