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
//
// Hand-written, not sqlc: it updates River's tables, which are not in the migrations sqlc
// checks statements against.
func (q *Queries) RescueDeadWorkers(ctx context.Context, grace time.Duration) (DeadWorkers, error) {
	var out DeadWorkers
	rows, err := q.db.Query(ctx, `
		WITH dead AS (
			SELECT w.client_id FROM worker_liveness w
			WHERE w.beat_at < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM pg_locks l
				WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
				  AND ((l.classid::bigint << 32) | l.objid::bigint) = w.lock_key)
			FOR UPDATE SKIP LOCKED
		), gone AS (
			DELETE FROM worker_liveness w USING dead WHERE w.client_id = dead.client_id RETURNING w.client_id
		), rescued AS (
			UPDATE river_job j SET
				state = CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::river_job_state,
				scheduled_at = now(),
				finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
				errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt, 'trace', '',
					'error', 'its worker ' || gone.client_id || ' died (connection gone, no heartbeat); rescued'))
			FROM gone
			WHERE j.state = 'running' AND j.attempted_by[array_length(j.attempted_by, 1)] = gone.client_id
			RETURNING j.id, j.kind, gone.client_id, j.state = 'discarded' AS discarded
		), deposed AS (
			DELETE FROM river_leader l USING gone WHERE l.leader_id = gone.client_id RETURNING l.leader_id
		), announced AS (
			SELECT pg_notify(current_schema() || '.river_leadership',
				json_build_object('leader_id', leader_id, 'action', 'resigned')::text) FROM deposed
		)
		SELECT 'worker', client_id, 0, '', false FROM gone
		UNION ALL SELECT 'job', client_id, id, kind, discarded FROM rescued
		UNION ALL SELECT 'leader', leader_id, (SELECT count(*) FROM announced), '', false FROM deposed`, grace.Seconds())
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var what, worker, kind string
		var id int64
		var discarded bool
		if err := rows.Scan(&what, &worker, &id, &kind, &discarded); err != nil {
			return out, err
		}
		switch what {
		case "worker":
			out.Workers = append(out.Workers, worker)
		case "job":
			out.Jobs = append(out.Jobs, RescuedJob{ID: id, Kind: kind, Worker: worker, Discarded: discarded})
		case "leader":
			out.Deposed = append(out.Deposed, worker)
		}
	}
	return out, rows.Err()
}
