package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

//go:embed coffer_migrations.sql
var migrationsTable string

// migrationLock serialises migrations of replicas starting together.
const migrationLock = 0x636f66666572 // "coffer"

type migration struct {
	version int32 // coffer_migrations.version is an integer
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.ParseInt(prefix, 10, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number and _", e.Name())
		}
		b, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: int32(v), name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaFingerprint identifies the migration set (tests key template databases on it).
func SchemaFingerprint() string {
	ms, _ := migrations()
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.name))
		h.Write([]byte(m.sql))
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Migrate brings the database up to date: River's tables, then Coffer's migrations, each in
// its own transaction, under an advisory lock so concurrent replicas migrate once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	if err := sqlc.LockMigrations(ctx, conn, migrationLock); err != nil {
		return nil, err
	}
	defer sqlc.UnlockMigrations(context.WithoutCancel(ctx), conn, migrationLock) //nolint:errcheck

	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, err
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	var applied []string
	for _, v := range res.Versions {
		applied = append(applied, fmt.Sprintf("river %03d %s", v.Version, v.Name))
	}

	if _, err := conn.Exec(ctx, migrationsTable); err != nil {
		return nil, err
	}
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			n, err := sqlc.RecordMigration(ctx, tx, dbsqlc.RecordMigrationParams{Version: m.version, Name: m.name})
			if err != nil || n == 0 {
				return err
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			applied = append(applied, "coffer "+m.name)
			return nil
		})
		if err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// MigrationCount is the number of Coffer migrations embedded in this binary.
func MigrationCount() int {
	ms, _ := migrations()
	return len(ms)
}

// CheckMigrated refuses a database whose schema is behind this binary (never migrated, or a
// migration short after an upgrade), naming the remedy: a process started on it would run its
// jobs and commands against tables and columns that are not there yet.
func (q *Queries) CheckMigrated(ctx context.Context) error {
	n, err := sqlc.CountAppliedMigrations(ctx, q.db)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table: never migrated
		n, err = 0, nil
	}
	if err != nil {
		return fmt.Errorf("read the applied migrations: %w", err)
	}
	if want := MigrationCount(); n < int64(want) {
		return fmt.Errorf("database schema is not migrated (%d of %d migrations applied): run `coffer migrate` (or start with COFFER_AUTO_MIGRATE=true)", n, want)
	}
	return nil
}

// SchemaMigrated reports whether the database has at least as many Coffer migrations applied
// as this binary embeds (an error also when Migrate never ran: the table is missing).
func (q *Queries) SchemaMigrated(ctx context.Context) (bool, error) {
	n, err := sqlc.CountAppliedMigrations(ctx, q.db)
	return err == nil && n >= int64(MigrationCount()), err
}
