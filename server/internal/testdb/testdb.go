// Package testdb gives each test its own migrated PostgreSQL database, cloned from a template.
// The server is TEST_DATABASE_URL when set; otherwise a throwaway cluster started once per
// test process (it dies with the process).
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/pgcluster"
	"github.com/cofferhq/coffer/server/internal/store"
)

var (
	once      sync.Once
	serverURL string
	template  string
	errSetup  error
	cluster   *pgcluster.Cluster
	tmpDir    string
)

// Main runs the tests of a package and stops the throwaway cluster afterwards.
// Use it as: func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if cluster != nil {
		_ = cluster.Stop() // the tests' verdict is already in code
		_ = os.RemoveAll(tmpDir)
	}
	return code
}

func setup() {
	ctx := context.Background()
	serverURL = os.Getenv("TEST_DATABASE_URL")
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "coffer-testpg-")
		if err != nil {
			errSetup = err
			return
		}
		tmpDir = dir
		cluster, errSetup = pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "pg"), Ephemeral: true, MaxConnections: 300})
		if errSetup != nil {
			return
		}
		serverURL = cluster.URL
	}
	template = "coffer_tpl_" + store.SchemaFingerprint()
	errSetup = ensureTemplate(ctx)
}

// ensureTemplate creates and migrates the template database once per schema version, even
// when several test processes share one server.
func ensureTemplate(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7331)"); err != nil {
		return err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(7331)") //nolint:errcheck
	var ready bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", template).Scan(&ready); err != nil {
		return err
	}
	if ready {
		return nil
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+template); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+template); err != nil {
		return err
	}
	if err := migrate(ctx, withDatabase(serverURL, template)); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "ALTER DATABASE "+template+" WITH IS_TEMPLATE true")
	return err
}

// Migrate applies the migrations to the database at url, as `coffer migrate` does: for a
// Cluster's database (New's come migrated).
func Migrate(t testing.TB, url string) {
	t.Helper()
	if err := migrate(t.Context(), url); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

func migrate(ctx context.Context, url string) error {
	pool, err := store.Open(ctx, url, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = store.Migrate(ctx, pool)
	return err
}

// URL creates a fresh migrated database for the test and returns its URL; it is dropped when
// the test ends.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(setup)
	if errSetup != nil {
		t.Fatalf("test database: %v", errSetup)
	}
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Clones of one template must not run concurrently with each other.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7332)"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template)
	conn.Exec(ctx, "SELECT pg_advisory_unlock(7332)") //nolint:errcheck
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
	})
	return withDatabase(serverURL, name)
}

// New returns a pool on a fresh migrated database, closed and dropped when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return Open(t, URL(t), 20)
}

// Open opens a pool of at most conns connections on the database at url (one URL gave), as
// another process would; it is closed when the test ends.
func Open(t testing.TB, url string, conns int32) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(context.Background(), url, conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Cluster starts a PostgreSQL server of the test's own, stopped when the test ends, for the
// tests that stop, restart or restore the server itself (New's databases share one).
func Cluster(t testing.TB, opts pgcluster.Options) *pgcluster.Cluster {
	t.Helper()
	c, err := pgcluster.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + db
	return u.String()
}

// Count runs a query that selects one number, a count, and returns it.
func Count(ctx context.Context, tb testing.TB, db store.DBTX, sql string, args ...any) int {
	tb.Helper()
	var n int
	if err := db.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		tb.Fatalf("count: %v", err)
	}
	return n
}
