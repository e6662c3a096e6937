package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/proctest"
)

// What was seen: a killed worker stalled its jobs for about 2 minutes (COFFER_JOB_RESCUE_AFTER):
// the chain scan 2m23s, webhooks 2m15–2m35s. Two workers share a database; the one running the
// chain scan (of a node that keeps it busy failing over) is killed with SIGKILL. The other runs
// the scan again within seconds, and River's leadership, when the dead worker held it, moves
// as fast.
func TestKilledWorkersJobsResumeWithinSeconds(t *testing.T) {
	ctx := context.Background()
	cdb := newCofferDB(t)
	cdb.createWallet(t)
	chainsFile := proctest.ChainsFile(t, ethChain(1337, "unreachable", "http://127.0.0.1:1"))
	start := func() *proctest.Process {
		internal := proctest.FreeAddr(t)
		return serve(t, cdb.bin, "http://"+internal, cdb.env("COFFER_ROLE=worker", "COFFER_INTERNAL_ADDR="+internal, "COFFER_LOG_LEVEL=error",
			"COFFER_CHAINS_FILE="+chainsFile, "COFFER_CHAINS_VALIDATE=off")) // unreachable on purpose
	}
	a, b := start(), start()
	byPID := map[int]*proctest.Process{a.Cmd.Process.Pid: a, b.Cmd.Process.Pid: b}

	db, err := pgx.Connect(ctx, cdb.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	// The worker running the scan, and River's leader. The scan (of an unreachable chain) is
	// short: a worker seen running it may have finished it before a kill lands, leaving no job
	// to rescue. So the worker is frozen (SIGSTOP) first, the job is checked to be still
	// running on it (a frozen process changes nothing), and only then killed; otherwise it
	// resumes and another scan is awaited.
	var pid int
	var victim, leader string
	var p *proctest.Process
	deadline := time.Now().Add(60 * time.Second)
	for p == nil {
		if time.Now().After(deadline) {
			t.Fatal("no scan could be caught running within a minute")
		}
		time.Sleep(20 * time.Millisecond)
		if db.QueryRow(ctx, `SELECT w.pid, w.client_id FROM river_job j
			JOIN worker_liveness w ON w.client_id = j.attempted_by[array_length(j.attempted_by, 1)]
			WHERE j.state = 'running' AND j.kind = 'deposit.scan'`).Scan(&pid, &victim) != nil {
			continue // none running now
		}
		if err := byPID[pid].Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var running int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running' AND kind = 'deposit.scan'
			AND attempted_by[array_length(attempted_by, 1)] = $1`, victim).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			if err := byPID[pid].Cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p = byPID[pid]
	}
	db.QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&leader) //nolint:errcheck // may be none yet
	killed := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()

	// moved waits until query names a client other than the victim and reports how long it
	// took from the kill. The 15 s recovery target is reported, not asserted: a timed
	// assertion fails on a starved machine (make stress) without anything being wrong; what
	// must hold is that the work moves at all (bounded at 3 minutes), and the figure is
	// measured on a quiet machine (README, Liveness) and by the chaos suite's recovery targets.
	moved := func(what, never, query string, args ...any) {
		t.Helper()
		for {
			var by string
			db.QueryRow(ctx, query, args...).Scan(&by) //nolint:errcheck // until found
			if by != "" && by != victim {
				gap := time.Since(killed)
				t.Logf("%s %v after the kill (target 15 s, met: %v)", what, gap.Round(time.Millisecond), gap <= 15*time.Second)
				return
			}
			if time.Since(killed) > 3*time.Minute {
				t.Fatal(never)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// The scan runs again, on the survivor (target: within 15 s).
	moved("the scan ran again", "the scan never resumed", `SELECT attempted_by[array_length(attempted_by, 1)] FROM river_job
		WHERE kind = 'deposit.scan' AND attempted_at > $1 ORDER BY attempted_at DESC LIMIT 1`, killed)
	if leader == victim {
		moved("leadership moved", "the dead leader was never replaced", `SELECT leader_id FROM river_leader`)
	}
	// The scan may run again before the dead worker's job is rescued: the next periodic scan
	// can start on the survivor within the 3 s it takes to declare the victim dead. So the
	// rescue is awaited on its own (reported against the same 15 s target), rather than assumed
	// done.
	var rescued, left int
	var err1, err2 error
	for {
		err1 = db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE errors::text LIKE '%' || $1 || ' died%'`, victim).Scan(&rescued)
		err2 = db.QueryRow(ctx, `SELECT count(*) FROM worker_liveness WHERE client_id = $1`, victim).Scan(&left)
		if err1 == nil && err2 == nil && rescued > 0 && left == 0 {
			gap := time.Since(killed)
			t.Logf("the dead worker's jobs were rescued %v after the kill (target 15 s, met: %v)", gap.Round(time.Millisecond),
				gap <= 15*time.Second)
			break
		}
		if time.Since(killed) > 3*time.Minute {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err1 != nil || rescued == 0 {
		t.Errorf("no job records its rescue from %s within 3 minutes (%v)", victim, err1)
	}
	if err2 != nil || left != 0 {
		t.Errorf("the dead worker is still registered 3 minutes after the kill (%d, %v)", left, err2)
	}
}
