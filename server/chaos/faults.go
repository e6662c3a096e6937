package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Injected is a fault as it happened: from its start to the moment the system was whole again
// (the replica or PostgreSQL answering, the receiver healthy).
type Injected struct {
	Fault

	Start, End time.Time
	Note       string
	Err        string // the injector could not do it (or restore from it)
}

// Timeline is what was injected, and the processes that ended on their own.
type Timeline struct {
	mu       sync.Mutex
	injected []*Injected
	crashes  []string
}

// Injected is every fault so far.
func (tl *Timeline) Injected() []Injected {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return values(tl.injected)
}

// Overlapping is the faults whose window, widened by slack on both sides, meets [from, to].
func (tl *Timeline) Overlapping(from, to time.Time, slack time.Duration) []Injected {
	var out []Injected
	for _, f := range tl.Injected() {
		end := f.End
		if end.IsZero() {
			end = time.Now()
		}
		if !f.Start.Add(-slack).After(to) && !end.Add(slack).Before(from) {
			out = append(out, f)
		}
	}
	return out
}

// Crashed records a process that ended without being asked to.
func (tl *Timeline) Crashed(what string) {
	tl.mu.Lock()
	tl.crashes = append(tl.crashes, what)
	tl.mu.Unlock()
}

// Crashes are the processes that ended on their own.
func (tl *Timeline) Crashes() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]string(nil), tl.crashes...)
}

// Injector carries out a schedule.
type Injector struct {
	s    *Stack
	recv *Receiver
	mon  *Monitor
	tl   *Timeline
	logf func(format string, args ...any)
}

// Run injects the faults in order, each at its time after start (or once the previous one is
// over), until the schedule or ctx ends. A fault that has started is always carried to its
// end: every replica runs and PostgreSQL answers when Run returns.
func (in *Injector) Run(ctx context.Context, start time.Time, faults []Fault) {
	for _, f := range faults {
		if !sleep(ctx, time.Until(start.Add(f.At))) {
			return
		}
		rec := &Injected{Fault: f, Start: time.Now()}
		in.tl.mu.Lock()
		in.tl.injected = append(in.tl.injected, rec)
		in.tl.mu.Unlock()
		in.logf("fault: %s", f)
		// Not ctx: a fault is always carried out and restored, even when the run ends meanwhile.
		note, err := in.inject(f) //nolint:contextcheck // see above
		in.tl.mu.Lock()
		rec.End, rec.Note = time.Now(), note
		if err != nil {
			rec.Err = err.Error()
		}
		in.tl.mu.Unlock()
		if err != nil {
			in.logf("fault %s: %v", f.Kind, err)
		} else {
			in.logf("fault over after %s: %s", rec.End.Sub(rec.Start).Round(100*time.Millisecond), note)
		}
	}
}

func (in *Injector) inject(f Fault) (string, error) {
	switch f.Kind {
	case KillWorker, KillAPI:
		r := in.s.Replica(f.Target)
		waited := ""
		if f.Kind == KillWorker {
			waited = in.awaitBusy(r.Current())
		}
		p, err := r.Kill()
		if err != nil {
			return "", err
		}
		killed := time.Now()
		note := fmt.Sprintf("pid %d killed%s", p.PID, waited)
		if f.Kind == KillWorker {
			n, err := in.mon.WorkerKilled(context.Background(), p, killed)
			if err != nil {
				note += fmt.Sprintf("; its running jobs could not be read: %v", err)
			} else {
				note += fmt.Sprintf("; %d jobs were running on it", n)
			}
		}
		time.Sleep(time.Until(killed.Add(f.Down)))
		return note, in.restart(r)
	case RestartPostgres:
		stopped, started, err := in.s.RestartPostgres(f.Target, f.Down)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("down %s", started.Sub(stopped).Round(100*time.Millisecond)), nil
	case ReceiverFail, ReceiverHang:
		in.recv.Break(f.Kind, f.Target, f.Down)
		time.Sleep(f.Down)
		return "receiver healthy again", nil
	}
	return "", fmt.Errorf("unknown fault %s", f.Kind)
}

// busyWait is how long a worker kill waits for the worker to run a job worth measuring.
const busyWait = 10 * time.Second

// awaitBusy delays a worker's kill (at most busyWait) until it runs a job of a kind with a
// recovery target, preferring kinds no kill has caught yet, so that the report measures every
// kind; the delay is recorded.
func (in *Injector) awaitBusy(p *Proc) string {
	if p == nil {
		return ""
	}
	seen := in.mon.observed()
	fewest := -1
	for _, t := range recoveryTargets() {
		if fewest < 0 || seen[t.Kind] < fewest {
			fewest = seen[t.Kind]
		}
	}
	start := time.Now()
	for time.Since(start) < busyWait {
		kinds, err := in.mon.RunningOn(context.Background(), p)
		if err != nil {
			break
		}
		for _, k := range kinds {
			for _, t := range recoveryTargets() {
				if k == t.Kind && seen[k] == fewest {
					return fmt.Sprintf(" after %s, while running %s", time.Since(start).Round(100*time.Millisecond), k)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Sprintf(" after %s (no job of an unmeasured kind ran)", time.Since(start).Round(100*time.Millisecond))
}

// restart starts a replica again, retrying for a minute.
func (in *Injector) restart(r *Replica) error {
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := r.Start(context.Background())
		if err == nil {
			return nil
		}
		in.tl.Crashed(fmt.Sprintf("%s failed to start at %s: %v", r.Name, time.Now().Format("15:04:05"), err))
		if p != nil {
			r.Kill() //nolint:errcheck
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not start again: %w", r.Name, err)
		}
		time.Sleep(time.Second)
	}
}

// Supervise restarts a replica whose process ended on its own (an orchestrator would), after
// recording it: such an exit is a finding.
func (in *Injector) Supervise(r *Replica, p *Proc) {
	what := fmt.Sprintf("%s (pid %d) exited on its own at %s: %v\n%s", r.Name, p.PID, time.Now().Format("15:04:05"), p.err, indent(r.Tail(15)))
	in.tl.Crashed(what)
	in.logf("CRASH: %s", what)
	go func() {
		time.Sleep(time.Second)
		if err := in.restart(r); err != nil {
			in.logf("%v", err)
		}
	}()
}
