// Package liveness finds dead workers in seconds and puts their jobs back to work.
//
// River rescues the jobs of a crashed process only after its rescue window
// (COFFER_JOB_RESCUE_AFTER, minutes: long enough that no slow job is ever run twice), and only
// its elected leader schedules retries and periodic jobs, a leader whose row lives on for its
// TTL after a crash. Here every worker process holds a PostgreSQL session advisory lock over a
// connection of its own and beats a row of worker_liveness every second over it. PostgreSQL
// frees the lock the moment that connection goes, which a kill -9 does at once, while a
// process that is merely slow (CPU-starved, paused for GC) keeps its connection and its lock.
// A worker is dead when its lock is free and it has not beaten for Grace; any live worker
// that has itself been connected for Grace (so a PostgreSQL restart, which frees every lock,
// gives live workers the time to take theirs back) then rescues the dead one's running jobs,
// deposes it if it led, and forgets it. See store.RescueDeadWorkers.
//
// A job run again after a rescue may have done part of its work: like every River job in
// Coffer it is idempotent (payouts and sweeps are stored before they are broadcast, webhooks
// carry a stable id).
package liveness

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Defaults.
const (
	DefaultGrace = 3 * time.Second
	DefaultBeat  = time.Second
)

// Options configure a Member.
type Options struct {
	// ClientID is the worker's River client id: the name River records in a job's attempted_by.
	ClientID string
	// Grace is how long a worker whose lock is free may go without a beat before it is dead
	// (3 s when zero); Beat how often it beats and looks for dead workers (1 s when zero).
	Grace, Beat time.Duration
	Log         *slog.Logger
}

// Member is this process's membership: its lock, its beats, and its rescues of others.
type Member struct {
	pool    *pgxpool.Pool
	opts    Options
	lockKey int64
	host    string

	mu       sync.Mutex
	upSince  time.Time // when the lock connection last came up; zero while it is down
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan struct{}
}

// Start joins: it holds the lock and beats until Stop, reconnecting (every half second) when
// its connection breaks.
func Start(pool *pgxpool.Pool, opts Options) *Member {
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Beat <= 0 {
		opts.Beat = DefaultBeat
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	m := &Member{pool: pool, opts: opts, host: host, done: make(chan struct{}),
		lockKey: int64(binary.BigEndian.Uint64(b[:]) >> 1)} // positive: pg_locks shows it as two oids
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx)
	return m
}

// Stop leaves cleanly: the row goes and the lock with the connection. Call it after the
// worker's jobs have stopped (River stopped), or others could rescue them meanwhile.
func (m *Member) Stop() {
	m.stopOnce.Do(func() {
		m.cancel()
		<-m.done
	})
}

// Up reports whether the lock connection is up, and since when.
func (m *Member) Up() (bool, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.upSince.IsZero(), m.upSince
}

func (m *Member) setUp(at time.Time) {
	m.mu.Lock()
	m.upSince = at
	m.mu.Unlock()
}

func (m *Member) run(ctx context.Context) {
	defer close(m.done)
	for ctx.Err() == nil {
		if err := m.hold(ctx); err != nil && ctx.Err() == nil {
			m.opts.Log.Warn("worker liveness: connection lost; reconnecting", "client_id", m.opts.ClientID, "error", err)
		}
		m.setUp(time.Time{})
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// hold connects, takes the lock, registers, then beats and rescues until the connection
// breaks or ctx ends (then it unregisters).
func (m *Member) hold(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, m.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx)) // closes after ctx ends
	q := store.New(conn)
	locked, err := q.TryWorkerLock(ctx, m.lockKey)
	if err != nil {
		return err
	}
	if !locked { // the key's previous connection is still being torn down
		return nil
	}
	if err := q.RegisterWorker(ctx, m.opts.ClientID, m.lockKey, m.host, os.Getpid()); err != nil {
		return err
	}
	m.setUp(time.Now())
	tick := time.NewTicker(m.opts.Beat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// ctx is done: unregister anyway, on a context of its own.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			return q.UnregisterWorker(cctx, m.opts.ClientID)
		case <-tick.C:
		}
		bctx, cancel := context.WithTimeout(ctx, m.opts.Grace)
		alive, err := q.BeatWorker(bctx, m.opts.ClientID)
		cancel()
		if err != nil {
			return err
		}
		if !alive {
			// Declared dead while alive (its connection was gone for longer than the grace):
			// its running jobs may now run twice, which they tolerate. Join again.
			m.opts.Log.Error("worker liveness: this worker was declared dead and its running jobs rescued; joining again",
				"client_id", m.opts.ClientID)
			if err := q.RegisterWorker(ctx, m.opts.ClientID, m.lockKey, m.host, os.Getpid()); err != nil {
				return err
			}
		}
		if _, since := m.Up(); time.Since(since) >= m.opts.Grace {
			m.rescue(ctx, q)
		}
	}
}

// rescue puts the jobs of dead workers back to work.
func (m *Member) rescue(ctx context.Context, q *store.Queries) {
	rctx, cancel := context.WithTimeout(ctx, m.opts.Grace)
	defer cancel()
	dead, err := q.RescueDeadWorkers(rctx, m.opts.Grace)
	if err != nil {
		if ctx.Err() == nil {
			m.opts.Log.Warn("worker liveness: looking for dead workers failed", "error", err)
		}
		return
	}
	if len(dead.Workers) == 0 {
		return
	}
	kinds := map[string]int{}
	for _, j := range dead.Jobs {
		kinds[j.Kind]++
		metrics.JobsRescued.WithLabelValues(j.Kind).Inc()
	}
	metrics.WorkersDead.Add(float64(len(dead.Workers)))
	m.opts.Log.Warn("worker liveness: dead workers found; their running jobs are available again",
		"dead", dead.Workers, "jobs", len(dead.Jobs), "kinds", kinds, "deposed_leaders", dead.Deposed, "by", m.opts.ClientID)
}
