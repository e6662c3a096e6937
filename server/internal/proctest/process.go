// Package proctest runs the child processes of the process-level tests (e2e, chaos, bench and
// the CLI's own): it builds the coffer binary, starts and stops processes, waits for them to
// answer, picks free loopback addresses and writes the chain list a process reads.
package proctest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a running child process of a test.
type Process struct {
	Cmd *exec.Cmd
	// Stderr is what the process wrote to its standard error so far.
	Stderr *Buffer
	done   chan struct{}
	err    error
}

// Start starts bin with args, env added to the test's own environment. The process is killed
// when the test binary dies, and stopped (see Stop) when the test ends.
func Start(t testing.TB, bin string, env []string, args ...string) *Process {
	t.Helper()
	//nolint:noctx // stopped by its cleanup (SIGTERM, then kill), which runs after t.Context ends
	p := &Process{Cmd: exec.Command(bin, args...), Stderr: &Buffer{}, done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stderr = p.Stderr
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process ended (nil while it runs).
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Stop ends the process gracefully (SIGTERM; SIGKILL after 30 s) and waits for it.
func (p *Process) Stop() { Terminate(p.Cmd.Process, p.done, 30*time.Second) }

// Terminate sends a process SIGTERM and waits until done is closed (its Wait returned); after
// grace it kills the process and waits on.
func Terminate(p *os.Process, done <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM) // fails only when it already exited
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
}

// WaitFor polls ok every 100 ms until it holds; the test fails when the process exits first
// or a minute passes.
func (p *Process) WaitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("waiting for %s: the process exited: %v\n%s", what, p.err, p.Stderr)
		default:
		}
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s\n%s", what, p.Stderr)
}

// Buffer is a bytes.Buffer safe for a process (or a server's goroutines, as a log sink) to
// write while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// StatusKiB reads a "Name:   123 kB" line of /proc/<pid>/status.
func StatusKiB(t testing.TB, pid int, name string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
