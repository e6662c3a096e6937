// Package jobs wires River, Coffer's only background-job mechanism, onto the service's
// PostgreSQL pool. Every worker is registered here; API-only replicas get an insert-only
// client (no queues, no workers), worker replicas work the queues.
package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// Client is River's client on a pgx pool.
type Client = river.Client[pgx.Tx]

// Deps are what workers need.
type Deps struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
}

// Options configure the client.
type Options struct {
	// Work runs the queues (worker role); false gives an insert-only client (api role).
	Work bool
	// Workers per queue; 20 when zero.
	Concurrency int
	// PollInterval overrides River's fetch poll interval (tests use a short one).
	PollInterval time.Duration
}

// Register adds every worker. Keep this the one place where workers are listed.
func Register(workers *river.Workers, d Deps) {
	river.AddWorker(workers, &CleanupWorker{Pool: d.Pool, Log: d.Log})
}

// periodic lists the periodic jobs.
func periodic() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(10*time.Minute),
			func() (river.JobArgs, *river.InsertOpts) { return CleanupArgs{}, nil },
			&river.PeriodicJobOpts{ID: "cleanup", RunOnStart: true}),
	}
}

// NewClient builds the River client.
func NewClient(d Deps, opts Options) (*Client, error) {
	workers := river.NewWorkers()
	Register(workers, d)
	cfg := &river.Config{
		// River reports routine progress at info; keep only its warnings and errors.
		Logger:       slog.New(minLevel{d.Log.Handler(), slog.LevelWarn}).With("component", "river"),
		Workers:      workers,
		MaxAttempts:  25,
		JobTimeout:   5 * time.Minute,
		PeriodicJobs: periodic(),
	}
	if opts.Work {
		n := opts.Concurrency
		if n == 0 {
			n = 20
		}
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}}
		if opts.PollInterval > 0 {
			cfg.FetchPollInterval = opts.PollInterval
			cfg.FetchCooldown = min(opts.PollInterval, 100*time.Millisecond)
		}
	}
	return river.NewClient(riverpgxv5.New(d.Pool), cfg)
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
