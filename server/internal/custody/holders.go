package custody

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
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
		return queries.AnnounceKeyHolder(ctx, pool, dbsqlc.AnnounceKeyHolderParams{ProcessID: id, Host: host,
			Pid:  int32(os.Getpid()), //nolint:gosec // G115: Linux caps pids at 2^22 (pid_max)
			Role: role, PrimaryKeyID: box.PrimaryID(), KeyIds: box.KeyIDs()})
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
				queries.DeleteKeyHolder(cctx, pool, id) //nolint:errcheck
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
func LiveHolders(ctx context.Context, q dbsqlc.DBTX) ([]Holder, error) {
	rows, err := queries.LiveKeyHolders(ctx, q, LiveWithin.Seconds())
	if err != nil {
		return nil, err
	}
	out := make([]Holder, 0, len(rows))
	for _, r := range rows {
		out = append(out, Holder{ProcessID: r.ProcessID, Host: r.Host, PID: int(r.Pid), Role: r.Role,
			PrimaryKeyID: r.PrimaryKeyID, KeyIDs: r.KeyIds, SeenAt: r.SeenAt})
	}
	return out, nil
}
