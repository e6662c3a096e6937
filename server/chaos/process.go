package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cofferhq/coffer/server/internal/proctest"
)

// Replica is one slot of `coffer serve` (api-1, worker-2, …): its role, addresses and log,
// and the process now running in it. A killed replica is started again in the same slot, on
// the same addresses; every process it ran is kept, to tell River clients apart.
type Replica struct {
	Name string
	Role string // api or worker
	// Addr is the public listener (API replicas only); Internal the internal one (/readyz,
	// /metrics, OpsService).
	Addr, Internal string
	LogPath        string

	bin string
	env []string
	log *os.File
	// onExit is called when a process ends without the harness asking, on the goroutine that
	// waited for it (its err is set).
	onExit func(r *Replica, p *Proc)

	mu    sync.Mutex
	cur   *Proc
	procs []*Proc
}

// Proc is one process of a replica.
type Proc struct {
	Replica *Replica
	PID     int
	// Started is taken just before the process is started: River names its client after the
	// time the client is created, which is later.
	Started time.Time
	cmd     *exec.Cmd
	done    chan struct{}
	err     error // Wait's, set before done is closed
	// expected is set before the harness kills or stops it.
	mu       sync.Mutex
	expected bool
	ready    bool // it answered /readyz: an exit from then on is a crash
	Ended    time.Time
}

func newReplica(name, role, addr, internal, bin string, env []string, logPath string) (*Replica, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Replica{Name: name, Role: role, Addr: addr, Internal: internal, LogPath: logPath, bin: bin, env: env, log: f}, nil
}

// URL is the public base URL of an API replica.
func (r *Replica) URL() string { return "http://" + r.Addr }

// InternalURL is the base URL of the internal listener.
func (r *Replica) InternalURL() string { return "http://" + r.Internal }

// Start starts a process in the slot and waits until it is ready (/readyz answers 200).
func (r *Replica) Start(ctx context.Context) (*Proc, error) {
	fmt.Fprintf(r.log, "\n===== %s: start %s =====\n", r.Name, time.Now().Format(time.RFC3339Nano))
	//nolint:noctx // a replica outlives Start; the harness kills or stops it itself
	cmd := exec.Command(r.bin, "serve", "--role", r.Role)
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &Proc{Replica: r, cmd: cmd, done: make(chan struct{}), Started: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.PID = cmd.Process.Pid
	r.mu.Lock()
	r.cur = p
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	go func() {
		p.err = cmd.Wait()
		p.mu.Lock()
		p.Ended = time.Now()
		crashed := !p.expected && p.ready
		p.mu.Unlock()
		close(p.done)
		if crashed && r.onExit != nil {
			r.onExit(r, p)
		}
	}()
	ready := r.InternalURL() + "/readyz"
	if r.Role == "api" {
		ready = r.URL() + "/readyz"
	}
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-p.done:
			return p, fmt.Errorf("%s exited while starting: %w\n%s", r.Name, p.err, r.Tail(20))
		case <-ctx.Done():
			return p, ctx.Err()
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		if err != nil {
			return p, err
		}
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				p.mu.Lock()
				p.ready = true
				p.mu.Unlock()
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("%s not ready after 2 minutes\n%s", r.Name, r.Tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Current is the process now in the slot (nil before the first start).
func (r *Replica) Current() *Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

// Procs is every process the slot ran.
func (r *Replica) Procs() []*Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Proc(nil), r.procs...)
}

// Kill sends SIGKILL to the current process and waits for it to be gone.
func (r *Replica) Kill() (*Proc, error) {
	p := r.Current()
	if p == nil {
		return nil, errors.New(r.Name + " is not running")
	}
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
	fmt.Fprintf(r.log, "\n===== %s: SIGKILL pid %d at %s =====\n", r.Name, p.PID, time.Now().Format(time.RFC3339Nano))
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return p, err
	}
	<-p.done
	return p, nil
}

// Stop ends the current process gracefully (SIGTERM; SIGKILL after 30 s).
func (r *Replica) Stop() {
	p := r.Current()
	if p == nil {
		return
	}
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
	proctest.Terminate(p.cmd.Process, p.done, 30*time.Second)
}

// Tail returns the last n lines of the slot's log.
func (r *Replica) Tail(n int) string {
	b, _ := os.ReadFile(r.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
