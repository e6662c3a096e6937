package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// TryWorkerLock takes the worker's session-level advisory lock on q's connection, false when
// another session holds it. Only meaningful on a dedicated connection (not a pool): the lock
// lives as long as the connection, and a free lock is how rescuers tell a worker is gone.
func (q *Queries) TryWorkerLock(ctx context.Context, lockKey int64) (bool, error) {
	return sqlc.TryWorkerLock(ctx, q.db, lockKey)
}

// RegisterWorker records a worker process and its lock key (the caller holds the lock).
func (q *Queries) RegisterWorker(ctx context.Context, clientID string, lockKey int64, host string, pid int) error {
	return sqlc.RegisterWorker(ctx, q.db, dbsqlc.RegisterWorkerParams{ClientID: clientID, LockKey: lockKey, Host: host,
		Pid: int4(int64(pid))})
}

// BeatWorker records that the worker is alive; false when its row is gone (it was declared
// dead and its jobs rescued: it must register again).
func (q *Queries) BeatWorker(ctx context.Context, clientID string) (bool, error) {
	n, err := sqlc.BeatWorker(ctx, q.db, clientID)
	return n == 1, err
}

// UnregisterWorker removes a worker that stopped cleanly.
func (q *Queries) UnregisterWorker(ctx context.Context, clientID string) error {
	return sqlc.UnregisterWorker(ctx, q.db, clientID)
}

// RescuedJob is a running job of a dead worker put back to work.
type RescuedJob struct {
	ID        int64
	Kind      string
	Worker    string
	Discarded bool // it had used its last attempt
}

// DeadWorkers is what RescueDeadWorkers did.
type DeadWorkers struct {
	Workers []string
	Jobs    []RescuedJob
	Deposed []string // dead workers that were River's leader
}

// RescueDeadWorkers finds workers whose advisory lock is free and whose last beat is older than
// grace, and in one transaction removes them, makes their running River jobs available again
// (discarded when that was their last attempt, as River's own rescuer does, with the reason in
// the job's errors), and deletes the leader row of a dead leader, announcing its resignation
// so River's electors elect a new leader at once instead of waiting out the row's TTL.
// Concurrent rescuers skip the workers another is handling.
func (q *Queries) RescueDeadWorkers(ctx context.Context, grace time.Duration) (DeadWorkers, error) {
	var out DeadWorkers
	rows, err := sqlc.RescueDeadWorkers(ctx, q.db, grace.Seconds())
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		switch r.What {
		case "worker":
			out.Workers = append(out.Workers, r.ClientID)
		case "job":
			out.Jobs = append(out.Jobs, RescuedJob{ID: r.ID, Kind: r.Kind, Worker: r.ClientID, Discarded: r.Discarded})
		case "leader":
			out.Deposed = append(out.Deposed, r.ClientID)
		}
	}
	return out, nil
}
