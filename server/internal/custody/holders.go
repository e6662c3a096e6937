package custody

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
)

// Heartbeat timing of key_holders: a process refreshes its row every HeartbeatEvery and
// counts as live for LiveWithin after its last refresh (a killed process stops counting then).
const (
	HeartbeatEvery = 5 * time.Second
	LiveWithin     = 20 * time.Second
)

// Holder is a running process and the master keys it holds.
type Holder struct {
	ProcessID    string
	Host         string
	PID          int
	Role         string
	PrimaryKeyID string
	KeyIDs       []string
	SeenAt       time.Time
}

// Announce records this process and its master keys in key_holders until ctx ends, then
// removes the record. It returns once the first record is written, so a rotation started after
// a process is up sees it.
func Announce(ctx context.Context, pool *pgxpool.Pool, box *secret.Box, role string, log *slog.Logger) (done <-chan struct{}, err error) {
	host, _ := os.Hostname()
	id := uuid.NewString()
	beat := func(ctx context.Context) error {
		_, err := pool.Exec(ctx, `INSERT INTO key_holders (process_id, host, pid, role, primary_key_id, key_ids)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (process_id) DO UPDATE SET seen_at = now()`, id, host, os.Getpid(), role, box.PrimaryID(), box.KeyIDs())
		return err
	}
	if err := beat(ctx); err != nil {
		return nil, err
	}
	log.Info("master keys", "seals_with", box.PrimaryID(), "opens_with", box.KeyIDs())
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				pool.Exec(cctx, `DELETE FROM key_holders WHERE process_id = $1 OR seen_at < now() - interval '1 day'`, id) //nolint:errcheck
				return
			case <-t.C:
				if err := beat(ctx); err != nil && ctx.Err() == nil {
					log.Warn("key holder heartbeat", "error", err)
				}
			}
		}
	}()
	return ch, nil
}

// LiveHolders lists the processes seen within LiveWithin.
func LiveHolders(ctx context.Context, q db) ([]Holder, error) {
	rows, err := q.Query(ctx, `SELECT process_id::text, host, pid, role, primary_key_id, key_ids, seen_at FROM key_holders
		WHERE seen_at > now() - make_interval(secs => $1) ORDER BY host, pid`, LiveWithin.Seconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Holder, error) {
		var h Holder
		return h, r.Scan(&h.ProcessID, &h.Host, &h.PID, &h.Role, &h.PrimaryKeyID, &h.KeyIDs, &h.SeenAt)
	})
}
