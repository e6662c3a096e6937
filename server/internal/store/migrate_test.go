package store_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// SchemaMigrated holds once every embedded migration is recorded, not when one is missing,
// and is an error when Migrate never ran (no coffer_migrations table).
func TestSchemaMigrated(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := t.Context()
	q := store.New(pool)
	check := func(want bool, wantErr bool) {
		t.Helper()
		if ok, err := q.SchemaMigrated(ctx); ok != want || (err != nil) != wantErr {
			t.Fatalf("SchemaMigrated = %v, %v; want %v, error %v", ok, err, want, wantErr)
		}
	}
	check(true, false)
	// Migrating again creates no table and applies nothing.
	if applied, err := store.Migrate(ctx, pool); err != nil || len(applied) != 0 {
		t.Fatalf("Migrate again: %v, %v", applied, err)
	}
	check(true, false)
	if _, err := pool.Exec(ctx, `DELETE FROM coffer_migrations WHERE version = (SELECT max(version) FROM coffer_migrations)`); err != nil {
		t.Fatal(err)
	}
	check(false, false)
	if _, err := pool.Exec(ctx, `DROP TABLE coffer_migrations`); err != nil {
		t.Fatal(err)
	}
	check(false, true)
}
