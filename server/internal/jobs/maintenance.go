package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/store"
)

// CleanupArgs is the periodic housekeeping job: expired admin tokens, ended rate-limit
// windows and admin login clients unused for 90 days (past admin.Limits.KnownClientFor) are
// deleted.
type CleanupArgs struct{}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return "cleanup" }

// InsertOpts keeps one cleanup queued at a time.
func (CleanupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: time.Minute}}
}

// CleanupPeriodic runs the cleanup every ten minutes (and at start).
func CleanupPeriodic() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(10*time.Minute),
		func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil },
		&river.PeriodicJobOpts{ID: "cleanup", RunOnStart: true})
}

// CleanupWorker works CleanupArgs.
type CleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]

	Pool *pgxpool.Pool
	Log  *slog.Logger
}

// Work deletes what has expired.
func (w *CleanupWorker) Work(ctx context.Context, _ *river.Job[CleanupArgs]) error {
	q := store.New(w.Pool)
	tokens, err := q.DeleteExpiredAdminSessions(ctx)
	if err != nil {
		return err
	}
	windows, err := q.DeleteOldRateLimits(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		return err
	}
	clients, err := q.DeleteOldLoginClients(ctx, time.Now().Add(-90*24*time.Hour))
	if err != nil {
		return err
	}
	if tokens+windows+clients > 0 {
		w.Log.InfoContext(ctx, "cleanup", "admin_tokens", tokens, "rate_limit_windows", windows, "admin_login_clients", clients)
	}
	return nil
}
