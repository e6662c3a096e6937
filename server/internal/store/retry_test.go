package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// killBackends warms n pooled connections and has PostgreSQL terminate them, as a restart
// does (57P01 admin_shutdown): the pool still holds them, idle for well under the second
// after which pgxpool pings a connection before handing it out.
func killBackends(t *testing.T, url string, pool *pgxpool.Pool, n int) {
	t.Helper()
	ctx := context.Background()
	pool.Reset() // only live connections from here
	var conns []*pgxpool.Conn
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed < n {
		t.Fatalf("terminated %d backends, want %d", killed, n)
	}
}

// Statements outside transactions and BEGIN meet dead pooled connections after a
// PostgreSQL restart; they are repeated on live ones instead of failing the request.
func TestStaleConnectionsAreRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Open(t, url, 3)

	// What was seen: a bare pooled statement answers the restart's 57P01.
	killBackends(t, url, pool, 3)
	_, err := pool.Exec(ctx, `SELECT 1`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57P01" {
		t.Fatalf("bare pool after the kill: %v, want SQLSTATE 57P01", err)
	}

	db := store.New(pool).DB()
	cases := map[string]func() error{
		"exec": func() error { _, err := db.Exec(ctx, `SELECT 1`); return err },
		"query row": func() error {
			var n int
			return db.QueryRow(ctx, `SELECT 41 + 1`).Scan(&n)
		},
		"query": func() error {
			rows, err := db.Query(ctx, `SELECT generate_series(1, 3)`)
			if err != nil {
				return err
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err == nil && len(got) != 3 {
				return errors.New("rows lost")
			}
			return err
		},
		"query with no rows": func() error {
			rows, err := db.Query(ctx, `SELECT 1 WHERE false`)
			if err != nil {
				return err
			}
			defer rows.Close()
			if rows.Next() {
				return errors.New("a row from nowhere")
			}
			return rows.Err()
		},
		"transaction": func() error {
			return store.InTx(ctx, pool, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `SELECT 1`); return err })
		},
	}
	for name, run := range cases {
		killBackends(t, url, pool, 3)
		if err := run(); err != nil {
			t.Errorf("%s after every pooled connection died: %v", name, err)
		}
	}

	// A server that is not there is not stale: no retry, the caller answers 503.
	if store.Stale(&pgconn.ConnectError{}) {
		t.Error("a connect error counted as stale")
	}
}
