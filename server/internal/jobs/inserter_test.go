package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// Before River exists, inserting is a clear error and nothing is written; the client built
// with the inserter binds it, and jobs then commit with the caller's transaction. It binds
// once.
func TestInserterBindsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	ins := jobs.NewInserter()
	insert := func() error {
		return store.InTx(ctx, pool, func(tx pgx.Tx) error {
			_, err := ins.InsertTx(ctx, tx, jobs.CleanupArgs{}, nil)
			return err
		})
	}
	count := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, jobs.CleanupArgs{}.Kind()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := insert(); !errors.Is(err, jobs.ErrUnbound) || ins.Bound() {
		t.Fatalf("insert before binding: %v (bound %v)", err, ins.Bound())
	}
	if n := count(); n != 0 {
		t.Fatalf("%d jobs before binding", n)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.CleanupWorker{Pool: pool, Log: slog.New(slog.DiscardHandler)})
	client, err := jobs.NewClient(pool, slog.New(slog.DiscardHandler), jobs.Options{Workers: workers, Inserter: ins})
	if err != nil || !ins.Bound() {
		t.Fatalf("NewClient: %v (bound %v)", err, ins.Bound())
	}
	if err := insert(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d jobs after one insert", n)
	}
	if err := ins.Bind(client); err == nil {
		t.Fatal("a second Bind was accepted")
	}
	if _, err := jobs.NewClient(pool, slog.New(slog.DiscardHandler), jobs.Options{Workers: workers, Inserter: ins}); err == nil {
		t.Fatal("a second client bound the same inserter")
	}
	if err := jobs.NewInserter().Bind(nil); err == nil {
		t.Fatal("Bind(nil) accepted")
	}
}
