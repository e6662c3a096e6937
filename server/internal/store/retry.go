package store

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// staleAttempts bounds how many dead pooled connections one statement may run into: after a
// PostgreSQL restart every connection the pool holds is dead, and each is dropped on its first
// failure (those idle over a second are pinged before use by pgxpool and never reach here).
const staleAttempts = 4

// stale reports whether err came from a pooled connection that was already dead when it was
// handed out, so the statement never ran and is repeated on another connection: PostgreSQL
// terminated its backend (57P01 admin_shutdown on a restart, 57P02 crash_shutdown) or closed
// its socket, or the failure happened before anything was sent. A server that cannot be
// reached at all (a connect error) is not stale: retrying would only delay the 503.
//
// Whether the server had started the statement when the connection broke cannot be told
// apart in general; on a restart it had not (a backend finishes a commit and sends its
// answer before it acts on the shutdown), and the statements run outside transactions are
// idempotent or guarded by unique keys.
func stale(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return pgErr.Code == "57P01" || pgErr.Code == "57P02"
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// retrying runs the statements of Queries bound to a pool, repeating one that met a stale
// connection.
type retrying struct{ pool *pgxpool.Pool }

func (r retrying) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	for attempt := 1; ; attempt++ {
		tag, err := r.pool.Exec(ctx, sql, args...)
		if attempt < staleAttempts && stale(err) && ctx.Err() == nil {
			continue
		}
		return tag, err
	}
}

// Query reads the first row before it returns, so a stale connection shows (pgx reports the
// error of a cached statement only when rows are read) while the query can still be repeated.
func (r retrying) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	for attempt := 1; ; attempt++ {
		rows, err := r.pool.Query(ctx, sql, args...)
		if err != nil {
			if attempt < staleAttempts && stale(err) && ctx.Err() == nil {
				continue
			}
			return rows, err
		}
		first := rows.Next()
		if !first && attempt < staleAttempts && stale(rows.Err()) && ctx.Err() == nil {
			rows.Close()
			continue
		}
		return &primedRows{Rows: rows, primed: true, first: first}, nil
	}
}

func (r retrying) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retryingRow{pool: r.pool, ctx: ctx, sql: sql, args: args}
}

// Begin starts a transaction, repeating BEGIN on another connection when the one it got was
// dead or broke: BEGIN has no effect of its own, so this is always safe.
func (r retrying) Begin(ctx context.Context) (pgx.Tx, error) {
	for attempt := 1; ; attempt++ {
		tx, err := r.pool.Begin(ctx)
		if attempt < staleAttempts && stale(err) && ctx.Err() == nil {
			continue
		}
		return tx, err
	}
}

// BeginTx is Begin with options.
func (r retrying) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	for attempt := 1; ; attempt++ {
		tx, err := r.pool.BeginTx(ctx, opts)
		if attempt < staleAttempts && stale(err) && ctx.Err() == nil {
			continue
		}
		return tx, err
	}
}

// retryingRow runs its query when scanned, as pgx's rows do, repeating it on a stale
// connection.
type retryingRow struct {
	pool *pgxpool.Pool
	ctx  context.Context //nolint:containedctx // Row.Scan takes no context: the query runs when scanned, under QueryRow's ctx (as pgx's own rows)
	sql  string
	args []any
}

func (r retryingRow) Scan(dest ...any) error {
	for attempt := 1; ; attempt++ {
		err := r.pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
		if attempt < staleAttempts && stale(err) && r.ctx.Err() == nil {
			continue
		}
		return err
	}
}

// primedRows are rows whose first Next was already called.
type primedRows struct {
	pgx.Rows

	primed, first bool
}

func (r *primedRows) Next() bool {
	if r.primed {
		r.primed = false
		return r.first
	}
	return r.Rows.Next()
}
