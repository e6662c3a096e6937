package chaos

import (
	"context"
	"sync"
	"time"
)

// Monitor watches, while the run goes on, what the end state cannot show: how long the chain
// scan's cursor stood still while blocks came, and how long the River jobs a killed worker
// was running took to be taken up by another worker.
type Monitor struct {
	s *Stack

	mu          sync.Mutex
	stalls      []Stall
	lastNext    int64
	lastAdvance time.Time
	polls       int
	killed      []*KilledJob
}

// Stall is a stretch during which the scan cursor did not move although there were blocks to
// scan.
type Stall struct {
	From, To time.Time
	// Open: the run ended inside it.
	Open bool
}

// Length of the stall.
func (s Stall) Length() time.Duration { return s.To.Sub(s.From) }

// KilledJob is a River job that was running on a worker when it was killed.
type KilledJob struct {
	ID     int64
	Kind   string
	Worker string // replica name
	Client string // River client id of the killed process
	// AttemptStart is when the killed attempt started, KilledAt the kill.
	AttemptStart, KilledAt time.Time
	// PickedUp is when another worker started an attempt; Recovered when that run ended (the
	// job completed, or was snoozed or retried by a live worker), or when the job was
	// finalized otherwise (How says which).
	PickedUp, Recovered time.Time
	How                 string
}

// Gap is attempt start → recovered (so far, when not recovered yet).
func (k *KilledJob) Gap(now time.Time) time.Duration {
	if k.Recovered.IsZero() {
		return now.Sub(k.AttemptStart)
	}
	return k.Recovered.Sub(k.AttemptStart)
}

// NewMonitor makes a monitor; Run starts it.
func NewMonitor(s *Stack) *Monitor { return &Monitor{s: s} }

// minStall is the shortest stall recorded (with 1 s blocks and a 1 s scan interval, the
// cursor normally moves every second or two).
const minStall = 3 * time.Second

// Run polls every half second until ctx ends.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.closeStall(true)
			return
		case <-t.C:
		}
		m.pollCursor(ctx)
		m.pollKilled(ctx)
	}
}

func (m *Monitor) pollCursor(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	head, err := m.s.Node.Client.BlockNumber(qctx)
	if err != nil {
		return
	}
	var next int64
	if err := m.s.DB.QueryRow(qctx, `SELECT next_block FROM chain_cursors WHERE chain_id = $1`, m.s.ChainID).Scan(&next); err != nil {
		return // PostgreSQL down, or no cursor yet: the stall, if any, goes on
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.polls++
	switch {
	case m.lastAdvance.IsZero():
		m.lastNext, m.lastAdvance = next, now
	case next != m.lastNext:
		m.recordStall(now, false)
		m.lastNext, m.lastAdvance = next, now
	case int64(head) < next: //nolint:gosec // block numbers fit in int64
		// Nothing to scan: the cursor waits for the next block, it is not stalled.
		m.lastAdvance = now
	}
}

func (m *Monitor) recordStall(now time.Time, open bool) {
	if now.Sub(m.lastAdvance) >= minStall {
		m.stalls = append(m.stalls, Stall{From: m.lastAdvance, To: now, Open: open})
	}
}

func (m *Monitor) closeStall(open bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.lastAdvance.IsZero() {
		m.recordStall(time.Now(), open)
	}
}

// Stalls is every stall of minStall or more.
func (m *Monitor) Stalls() []Stall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Stall(nil), m.stalls...)
}

// WorkerKilled records the jobs that were running on p (just killed) and follows them. The
// jobs of the other worker are told apart by River's client id, which is named after the time
// the client was created, after its process started.
func (m *Monitor) WorkerKilled(ctx context.Context, p *Proc, at time.Time) (int, error) {
	rows, err := m.s.DB.Query(ctx, `SELECT id, kind, attempted_at, attempted_by[cardinality(attempted_by)]
		FROM river_job WHERE state = 'running' AND cardinality(attempted_by) > 0`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var procs []*Proc
	for _, w := range m.s.Workers {
		procs = append(procs, w.Procs()...)
	}
	n := 0
	for rows.Next() {
		k := &KilledJob{Worker: p.Replica.Name, KilledAt: at}
		if err := rows.Scan(&k.ID, &k.Kind, &k.AttemptStart, &k.Client); err != nil {
			return n, err
		}
		if owner(k.Client, procs) != p {
			continue
		}
		m.mu.Lock()
		m.killed = append(m.killed, k)
		m.mu.Unlock()
		n++
	}
	return n, rows.Err()
}

// RunningOn is the kinds of the jobs p is running now.
func (m *Monitor) RunningOn(ctx context.Context, p *Proc) ([]string, error) {
	rows, err := m.s.DB.Query(ctx, `SELECT kind, attempted_by[cardinality(attempted_by)] FROM river_job
		WHERE state = 'running' AND cardinality(attempted_by) > 0`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var procs []*Proc
	for _, w := range m.s.Workers {
		procs = append(procs, w.Procs()...)
	}
	var kinds []string
	for rows.Next() {
		var kind, client string
		if err := rows.Scan(&kind, &client); err != nil {
			return nil, err
		}
		if owner(client, procs) == p {
			kinds = append(kinds, kind)
		}
	}
	return kinds, rows.Err()
}

// observed counts the jobs of each kind caught on killed workers so far.
func (m *Monitor) observed() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, k := range m.killed {
		out[k.Kind]++
	}
	return out
}

// owner is the process a River client id belongs to: the one started last before the
// client's creation time.
func owner(clientID string, procs []*Proc) *Proc {
	created, ok := clientCreated(clientID)
	if !ok {
		return nil
	}
	var best *Proc
	for _, p := range procs {
		if !p.Started.After(created) && (best == nil || p.Started.After(best.Started)) {
			best = p
		}
	}
	return best
}

// clientCreated parses River's default client id, <host>_2006_01_02T15_04_05_000000 (UTC).
func clientCreated(id string) (time.Time, bool) {
	const layout = "2006_01_02T15_04_05_000000"
	if len(id) < len(layout) {
		return time.Time{}, false
	}
	s := id[len(id)-len(layout):]
	s = s[:len(s)-7] + "." + s[len(s)-6:]
	t, err := time.ParseInLocation("2006_01_02T15_04_05.000000", s, time.UTC)
	return t, err == nil
}

func (m *Monitor) pollKilled(ctx context.Context) {
	m.mu.Lock()
	var open []*KilledJob
	ids := []int64{}
	for _, k := range m.killed {
		if k.Recovered.IsZero() {
			open = append(open, k)
			ids = append(ids, k.ID)
		}
	}
	m.mu.Unlock()
	if len(open) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := m.s.DB.Query(qctx, `SELECT id, state, attempted_at, COALESCE(attempted_by[cardinality(attempted_by)], ''), finalized_at
		FROM river_job WHERE id = ANY($1)`, ids)
	if err != nil {
		return
	}
	defer rows.Close()
	seen := map[int64]bool{}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for rows.Next() {
		var id int64
		var state, client string
		var attempted, finalized *time.Time
		if rows.Scan(&id, &state, &attempted, &client, &finalized) != nil {
			return
		}
		seen[id] = true
		for _, k := range open {
			if k.ID != id {
				continue
			}
			final := state == "completed" || state == "cancelled" || state == "discarded"
			switch {
			case client != k.Client:
				if k.PickedUp.IsZero() && attempted != nil {
					k.PickedUp = *attempted
				}
				if state != "running" {
					k.Recovered, k.How = now, "run by another worker, then "+state
					if finalized != nil {
						k.Recovered = *finalized
					}
				}
			case final:
				k.Recovered, k.How = now, "finalized as "+state+" without another attempt"
				if finalized != nil {
					k.Recovered = *finalized
				}
			}
		}
	}
	if rows.Err() != nil {
		return
	}
	for _, k := range open {
		if !seen[k.ID] {
			k.Recovered, k.How = now, "deleted"
		}
	}
}

// Killed is every job caught on a killed worker.
func (m *Monitor) Killed() []KilledJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	return values(m.killed)
}

// values is a copy of what ps point to, for a snapshot taken under a lock.
func values[T any](ps []*T) []T {
	var out []T
	for _, p := range ps {
		out = append(out, *p)
	}
	return out
}
