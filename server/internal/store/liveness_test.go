package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TryWorkerLock is held by one connection at a time, for as long as that connection lives.
func TestTryWorkerLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	conn := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	first, second := conn(), conn()
	try := func(c *pgx.Conn, want bool) {
		t.Helper()
		if locked, err := store.New(c).TryWorkerLock(ctx, 77); err != nil || locked != want {
			t.Fatalf("TryWorkerLock = %v, %v; want %v", locked, err, want)
		}
	}
	try(first, true)
	try(second, false)
	try(first, true) // its own lock again
	first.Close(ctx)
	// Its backend releases the lock as it exits, shortly after the connection closes.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		locked, err := store.New(second).TryWorkerLock(ctx, 77)
		if err != nil || locked || time.Now().After(deadline) {
			if err != nil || !locked {
				t.Fatalf("after the holder closed: %v, %v", locked, err)
			}
			break
		}
	}
}

// RescueDeadWorkers rescues only workers that are gone: lock free and no beat within the
// grace. A worker that holds its lock is alive however late its beat (a slow process is never
// run twice), and one that beat recently is given its grace (live workers take their lock back
// after a PostgreSQL restart). A dead worker's running jobs become available again (discarded
// on their last attempt), other jobs are untouched, and a dead leader is deposed with the
// resignation River's electors listen for.
func TestRescueDeadWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Open(t, url, 4)
	q := store.New(pool)
	// slow holds its lock on a connection of its own, taken as a worker takes it; the others
	// hold nothing.
	slowConn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer slowConn.Close(ctx)
	if locked, err := store.New(slowConn).TryWorkerLock(ctx, 4242424242424); err != nil || !locked {
		t.Fatalf("slow's lock: %v, %v", locked, err)
	}
	for _, w := range []struct {
		id   string
		key  int64
		beat string
	}{{"slow", 4242424242424, "1 minute"}, {"dead", 11, "1 minute"}, {"restarting", 12, "0 seconds"}} {
		if err := q.RegisterWorker(ctx, w.id, w.key, "h", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE worker_liveness SET beat_at = now() - $2::interval WHERE client_id = $1`, w.id, w.beat); err != nil {
			t.Fatal(err)
		}
	}
	job := func(kind, by string, attempt, maxAttempts int, state string) int64 {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO river_job (kind, args, state, attempt, max_attempts, attempted_by, attempted_at, queue, priority, finalized_at)
			VALUES ($1, '{}', $2::river_job_state, $3, $4, ARRAY['earlier', $5], now(), 'default', 1,
				CASE WHEN $2 IN ('completed', 'discarded', 'cancelled') THEN now() END) RETURNING id`,
			kind, state, attempt, maxAttempts, by).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	deadRunning := job("payout", "dead", 1, 25, "running")
	deadLast := job("sweep", "dead", 3, 3, "running")
	deadDone := job("webhook", "dead", 1, 25, "completed")
	slowRunning := job("scan", "slow", 1, 25, "running")
	restartingRunning := job("scan", "restarting", 1, 25, "running")
	if _, err := pool.Exec(ctx, `INSERT INTO river_leader (leader_id, elected_at, expires_at) VALUES ('dead', now(), now() + interval '15 seconds')`); err != nil {
		t.Fatal(err)
	}
	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, `LISTEN "public.river_leadership"`); err != nil {
		t.Fatal(err)
	}

	got, err := q.RescueDeadWorkers(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Workers) != 1 || got.Workers[0] != "dead" || len(got.Deposed) != 1 || got.Deposed[0] != "dead" {
		t.Fatalf("rescued %+v; want only the dead worker, deposed", got)
	}
	var ids []int64
	for _, j := range got.Jobs {
		ids = append(ids, j.ID)
		if j.Discarded != (j.ID == deadLast) {
			t.Errorf("job %d discarded=%v", j.ID, j.Discarded)
		}
	}
	slices.Sort(ids)
	if len(ids) != 2 || ids[0] != deadRunning || ids[1] != deadLast {
		t.Fatalf("rescued jobs %v, want %d and %d", ids, deadRunning, deadLast)
	}
	states := map[int64]string{}
	rows, _ := pool.Query(ctx, `SELECT id, state::text FROM river_job`)
	var id int64
	var s string
	if _, err := pgx.ForEachRow(rows, []any{&id, &s}, func() error { states[id] = s; return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{deadRunning: "available", deadLast: "discarded", deadDone: "completed",
		slowRunning: "running", restartingRunning: "running"}
	for id, s := range want {
		if states[id] != s {
			t.Errorf("job %d is %s, want %s", id, states[id], s)
		}
	}
	var why string
	if err := pool.QueryRow(ctx, `SELECT errors[array_length(errors, 1)]->>'error' FROM river_job WHERE id = $1`, deadRunning).Scan(&why); err != nil || why == "" {
		t.Errorf("the rescue left no reason in the job's errors (%v)", err)
	}
	var leaders int
	pool.QueryRow(ctx, `SELECT count(*) FROM river_leader`).Scan(&leaders) //nolint:errcheck
	if leaders != 0 {
		t.Error("the dead leader's row stayed")
	}
	nctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(nctx)
	if err != nil || n.Payload != `{"leader_id" : "dead", "action" : "resigned"}` {
		t.Errorf("resignation announced: %+v, %v", n, err)
	}

	// Nothing more to do, twice over.
	if again, err := q.RescueDeadWorkers(ctx, 3*time.Second); err != nil || len(again.Workers)+len(again.Jobs) != 0 {
		t.Errorf("a second pass: %+v, %v", again, err)
	}
	// The slow worker's connection goes: now it is dead too.
	slowConn.Close(ctx)
	time.Sleep(100 * time.Millisecond)
	if later, err := q.RescueDeadWorkers(ctx, 3*time.Second); err != nil || len(later.Workers) != 1 || later.Workers[0] != "slow" || len(later.Jobs) != 1 {
		t.Errorf("after the slow worker's connection closed: %+v, %v", later, err)
	}
}
