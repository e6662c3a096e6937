// Package jobs wires River, Coffer's only background-job mechanism, onto the service's
// PostgreSQL pool. Domain packages define their job args and workers; the app registers them
// all in one place (app/workers.go). API-only replicas get an insert-only client (no queues),
// worker replicas work the queues.
package jobs

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/cofferhq/coffer/server/internal/metrics"
)

// observe records each job run's wait (from due to start) and duration per kind.
func observe(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	start := time.Now()
	metrics.JobWait.WithLabelValues(job.Kind).Observe(max(start.Sub(job.ScheduledAt), 0).Seconds())
	err := doInner(ctx)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	metrics.JobDuration.WithLabelValues(job.Kind, outcome).Observe(time.Since(start).Seconds())
	return err
}

// Client is River's client on a pgx pool.
type Client = river.Client[pgx.Tx]

// Options configure the client.
type Options struct {
	// Work runs the queues (worker role); false gives an insert-only client (api role).
	Work bool
	// Workers of the default queue; DefaultConcurrency when zero.
	Concurrency int
	// WebhookConcurrency is the workers of the webhooks queue; DefaultWebhookConcurrency when zero. Each works
	// one operator's drain (webhook/drain.go), whose posts wait on the operator's receiver (up
	// to 15 s each), so they have their own queue: slow receivers cannot starve sweeps, payouts
	// and scans, and many operators are served at once.
	WebhookConcurrency int
	// PollInterval overrides River's fetch poll interval (tests use a short one).
	PollInterval time.Duration
	// Workers and Periodic are every worker and periodic job (app.Services.workers).
	Workers  *river.Workers
	Periodic []*river.PeriodicJob
	// RescueAfter is how long a job may stay running before it is considered lost with its
	// process (a crash) and run again; jobs time out after half of it. 2 minutes when zero.
	// Every job must be idempotent: a rescued job may have done part of its work.
	RescueAfter time.Duration
	// Inserter, when set, is bound to the client built: the services insert jobs through it.
	Inserter *Inserter
}

// QueueWebhooks is the queue of webhook deliveries (operators' drains).
const QueueWebhooks = "webhooks"

// riverFetchCooldown is River's default: a queue fetches jobs at most this often, so a queue
// of n workers runs at most n jobs per cooldown.
const riverFetchCooldown = 100 * time.Millisecond

// WebhookFetchCooldown is the webhooks queue's: with River's 100 ms, an operator's drain
// inserted during a burst would wait up to 100 ms to be fetched. A fetch is one indexed query,
// so ten times as many cost little.
const WebhookFetchCooldown = 10 * time.Millisecond

// Defaults of Options (and of config's COFFER_JOB_RESCUE_AFTER, COFFER_WORKER_CONCURRENCY
// and COFFER_WEBHOOK_CONCURRENCY, which read them).
const (
	DefaultRescueAfter        = 2 * time.Minute
	DefaultConcurrency        = 20
	DefaultWebhookConcurrency = 100
)

// NewClient builds the River client.
func NewClient(pool *pgxpool.Pool, log *slog.Logger, opts Options) (*Client, error) {
	c, err := river.NewClient(riverpgxv5.New(pool), riverConfig(log, opts))
	if err != nil || opts.Inserter == nil {
		return c, err
	}
	return c, opts.Inserter.Bind(c)
}

// riverConfig is the River client's configuration for opts.
func riverConfig(log *slog.Logger, opts Options) *river.Config {
	workers := opts.Workers
	if workers == nil {
		workers = river.NewWorkers()
	}
	rescueAfter := opts.RescueAfter
	if rescueAfter <= 0 {
		rescueAfter = DefaultRescueAfter
	}
	cfg := &river.Config{
		// River reports routine progress at info; keep only its warnings and errors.
		Logger:               slog.New(minLevel{log.Handler(), slog.LevelWarn}).With("component", "river"),
		Workers:              workers,
		MaxAttempts:          25,
		JobTimeout:           rescueAfter / 2,
		RescueStuckJobsAfter: rescueAfter,
		PeriodicJobs:         opts.Periodic,
		Middleware:           []rivertype.Middleware{river.WorkerMiddlewareFunc(observe)},
	}
	if opts.Work {
		n := opts.Concurrency
		if n == 0 {
			n = DefaultConcurrency
		}
		hooks := opts.WebhookConcurrency
		if hooks == 0 {
			hooks = DefaultWebhookConcurrency
		}
		if opts.PollInterval > 0 {
			cfg.FetchPollInterval = opts.PollInterval
			cfg.FetchCooldown = min(opts.PollInterval, riverFetchCooldown)
		}
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: n}, QueueWebhooks: {MaxWorkers: hooks,
			FetchCooldown: min(WebhookFetchCooldown, cmp.Or(cfg.FetchCooldown, riverFetchCooldown))}}
	}
	return cfg
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
