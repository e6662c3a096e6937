package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// RunChaos runs one seed: set-up, load with faults, drain, checks, report. The test fails
// when an invariant is violated; the run's directory (logs, report, data) is then kept.
func RunChaos(t *testing.T, set Settings) *Run {
	t.Helper()
	dir := set.Dir
	if dir == "" {
		var err error
		// Not t.TempDir: a failed run keeps its logs and data for the report's reader.
		if dir, err = os.MkdirTemp("", fmt.Sprintf("coffer-chaos-seed%d-", set.Seed)); err != nil { //nolint:usetesting // kept on failure
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logf := func(format string, args ...any) {
		t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.0")}, args...)...)
	}
	schedule := Schedule(set.Seed, set.Load)
	logf("seed %d, load %s, drain up to %s, sweepMethod %s, directory %s; fault schedule:\n%s", set.Seed, set.Load, set.Drain, set.Sweep,
		dir, FormatSchedule(schedule))

	ctx := context.Background()
	tl := &Timeline{}
	inj := &Injector{tl: tl, logf: logf}
	stack, err := StartStack(t, dir, set.Sweep, set.ServeEnv, inj.Supervise)
	if err != nil {
		t.Fatalf("start: %v (directory %s)", err, dir)
	}
	recv, err := NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	api := NewAPI(stack.APIs)
	ld, err := NewLoad(ctx, stack, api, recv, set.Seed)
	if err != nil {
		t.Fatalf("set-up: %v (directory %s)", err, dir)
	}
	mon := NewMonitor(stack)
	inj.s, inj.recv, inj.mon = stack, recv, mon
	logf("set up: replicas %v, hot wallet %s, gas tank %s; load starts", names(stack.Replicas()), stack.HotWallet.Hex(), stack.GasTank.Hex())

	monCtx, stopMonitor := context.WithCancel(ctx)
	monDone := make(chan struct{})
	go func() { mon.Run(monCtx); close(monDone) }()
	start := time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, set.Load)
	defer stopLoad()
	finishCtx, stopFinish := context.WithDeadline(ctx, start.Add(set.Load+set.Drain))
	defer stopFinish()
	var wg sync.WaitGroup
	wg.Go(func() { inj.Run(loadCtx, start, schedule) })
	wg.Go(func() { ld.Run(loadCtx, finishCtx) })
	wg.Wait()
	loadEnd := time.Now()
	logf("load over; draining (at most %s)", set.Drain)
	unsettled := Drain(ctx, stack, ld, loadEnd.Add(set.Drain), logf)
	stopFinish()
	ld.Wait()
	stopMonitor()
	<-monDone
	end := time.Now()
	logf("checking")
	checks, world, err := invariants(ctx, stack, ld, tl, api, mon, set)
	if err != nil {
		t.Fatalf("read the end state: %v (directory %s)", err, dir)
	}
	run := &Run{Settings: set, Schedule: schedule, Dir: dir, Start: start, LoadEnd: loadEnd, End: end, Unsettled: unsettled,
		Stack: stack, Load: ld, API: api, Timeline: tl, Monitor: mon, Recv: recv, Checks: checks, World: world}
	text := run.Report()
	path, err := run.WriteReport(text)
	if err != nil {
		t.Errorf("write the report: %v", err)
	}
	//nolint:forbidigo // the report is the run's product, printed whole (t.Log would indent it)
	fmt.Printf("\n%s\nreport written to %s\n\n", text, path)
	if run.Failed() {
		t.Errorf("chaos seed %d: invariants violated (report above; logs and data kept in %s)", set.Seed, dir)
	} else {
		t.Cleanup(func() { // after the processes stopped: keep the logs and the report
			os.RemoveAll(filepath.Join(dir, "pg"))
			os.Remove(filepath.Join(dir, "coffer"))
		})
	}
	return run
}

func names(rs []*Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}
