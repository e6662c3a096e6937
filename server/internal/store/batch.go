package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// inBatch adds a generated :many statement to a caller's pgx.Batch, so that it shares the
// batch's round trip and still goes through the generated SQL, arguments and scanning. query
// calls the generated method on the DBTX it is given and handles the rows it returns. It is
// called twice: once now, when the method only hands over its statement (it returns
// errQueued), and again when the batch's results are read, over the statement's rows.
func inBatch(b *pgx.Batch, query func(dbsqlc.DBTX) error) {
	var q queueing
	if err := query(&q); !errors.Is(err, errQueued) {
		panic("store: inBatch needs exactly one generated :many statement")
	}
	b.Queue(q.sql, q.args...).Query(func(rows pgx.Rows) error { return query(replaying{rows}) })
}

var (
	errQueued    = errors.New("statement queued in a batch")
	errQueryOnly = errors.New("only a query (:many) runs in a batch this way")
)

// queueing takes a generated statement's SQL and arguments instead of running it.
type queueing struct {
	sql  string
	args []any
}

func (q *queueing) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	if q.sql != "" {
		return nil, errQueryOnly
	}
	q.sql, q.args = sql, args
	return nil, errQueued
}

func (*queueing) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errQueryOnly
}

func (*queueing) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{errQueryOnly} }

// replaying answers the generated statement with the rows the batch returned for it.
type replaying struct{ rows pgx.Rows }

func (r replaying) Query(context.Context, string, ...any) (pgx.Rows, error) { return r.rows, nil }

func (replaying) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errQueryOnly
}

func (replaying) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{errQueryOnly} }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
