package jobs_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestWebhookSchedule(t *testing.T) {
	t.Parallel()
	failed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Attempts at 0, +5 s, +5 min, +30 min, +2 h after the previous failure.
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 2 * time.Hour}
	for i, d := range want {
		attempt := i + 1
		if got := jobs.WebhookSchedule().Next(attempt, failed); got != failed.Add(d) {
			t.Errorf("after attempt %d: %v, want +%v", attempt, got.Sub(failed), d)
		}
		row := &rivertype.JobRow{Attempt: attempt, AttemptedAt: &failed}
		if got := jobs.WebhookSchedule().NextRetry(row); got != failed.Add(d) {
			t.Errorf("NextRetry after attempt %d: +%v", attempt, got.Sub(failed))
		}
	}
	if got := jobs.RetrySchedule(nil).Next(3, failed); got != failed {
		t.Errorf("empty schedule: %v", got)
	}
}

func TestCleanupJobRunsOnWorkers(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `
		INSERT INTO admins (id, email, password_hash) VALUES ('00000000-0000-4000-8000-000000000001', 'a@b.c', 'x');
		INSERT INTO admin_sessions (digest, admin_id, expires_at) VALUES
			('\x01', '00000000-0000-4000-8000-000000000001', now() - interval '1 minute'),
			('\x02', '00000000-0000-4000-8000-000000000001', now() + interval '1 hour');
		INSERT INTO rate_limits (key, window_start, hits) VALUES ('old', now() - interval '2 hours', 3), ('new', now(), 1);`)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.CleanupWorker{Pool: pool, Log: log})
	client, err := jobs.NewClient(pool, log, jobs.Options{Work: true, PollInterval: 50 * time.Millisecond,
		Workers: workers, Periodic: []*river.PeriodicJob{jobs.CleanupPeriodic()}})
	if err != nil {
		t.Fatal(err)
	}
	completed, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := client.Stop(ctx); err != nil {
			t.Error(err)
		}
	}()
	select {
	case ev := <-completed:
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Kind != "cleanup" {
			t.Fatalf("event %s for %s: %v", ev.Kind, ev.Job.Kind, ev.Job.Errors)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cleanup job did not run")
	}
	var sessions, windows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM admin_sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rate_limits`).Scan(&windows); err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || windows != 1 {
		t.Fatalf("after cleanup: %d sessions, %d windows", sessions, windows)
	}
}

func TestInsertOnlyClientForAPIRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	workers := river.NewWorkers()
	river.AddWorker(workers, &jobs.CleanupWorker{Pool: pool})
	client, err := jobs.NewClient(pool, slog.New(slog.DiscardHandler), jobs.Options{Work: false, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Insert(ctx, jobs.CleanupArgs{}, nil); err != nil {
		t.Fatalf("api role cannot enqueue: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'cleanup' AND state = 'available'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d cleanup jobs available", n)
	}
}

// TestFetchCooldowns: the webhooks queue fetches at most every 10 ms under the production
// settings (River's 100 ms would cap its 100 workers at 1,000 deliveries a second), never
// less often than the client's own cooldown, and River accepts each configuration.
func TestFetchCooldowns(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	for _, tc := range []struct {
		name     string
		poll     time.Duration
		webhooks time.Duration
	}{
		{name: "production (poll 1 s)", poll: time.Second, webhooks: 10 * time.Millisecond},
		{name: "River's poll", poll: 0, webhooks: 10 * time.Millisecond},
		{name: "short poll (tests, benches)", poll: 2 * time.Millisecond, webhooks: 2 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := jobs.RiverConfig(jobs.Options{Work: true, PollInterval: tc.poll})
			if got := cfg.Queues[jobs.QueueWebhooks].FetchCooldown; got != tc.webhooks {
				t.Errorf("webhooks queue fetch cooldown %v, want %v", got, tc.webhooks)
			}
			if got := cfg.Queues[river.QueueDefault].FetchCooldown; got != 0 {
				t.Errorf("default queue fetch cooldown %v, want the client's", got)
			}
			if _, err := jobs.NewClient(pool, slog.New(slog.DiscardHandler), jobs.Options{Work: true, PollInterval: tc.poll}); err != nil {
				t.Errorf("River refuses the configuration: %v", err)
			}
		})
	}
}
