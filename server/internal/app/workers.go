package app

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/jobs"
)

// workers lists every River worker and periodic job of Coffer: the one place to look.
func workers(pool *pgxpool.Pool, log *slog.Logger) (*river.Workers, []*river.PeriodicJob) {
	w := river.NewWorkers()
	river.AddWorker(w, &jobs.CleanupWorker{Pool: pool, Log: log})
	return w, []*river.PeriodicJob{jobs.CleanupPeriodic()}
}
