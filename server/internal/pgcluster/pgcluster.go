// Package pgcluster runs a private PostgreSQL server from the initdb/postgres binaries on the
// machine: the database of `coffer dev` and of the tests when TEST_DATABASE_URL is unset.
//
// The server is a child process that receives SIGINT (fast shutdown) when its parent dies, so
// a killed test run or dev server never leaves a stray postmaster behind. When running as
// root (initdb refuses root), the cluster runs as the "postgres" user, or "nobody".
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/freeport"
)

// Options configure a cluster.
type Options struct {
	// Dir holds the cluster's data; created and initialised when empty.
	Dir string
	// Port to listen on (loopback only); 0 picks a free one.
	Port int
	// Database is created when missing; "coffer" when empty.
	Database string
	// Ephemeral turns off durability (fsync, synchronous commit) for throwaway test clusters.
	Ephemeral bool
	// MaxConnections; 200 when zero.
	MaxConnections int
	Logger         *slog.Logger
}

// Cluster is a running server.
type Cluster struct {
	URL  string // connection URL of Database
	Port int
	Dir  string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
	logFile  *os.File
}

const superuser = "coffer"

// BinDir finds the directory of initdb and postgres: next to pg_ctl/initdb on PATH (following
// symlinks), else the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			dir := filepath.Dir(resolved)
			if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
				return dir, nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL server binaries not found (initdb, postgres): install them with `apt-get install postgresql` or set DATABASE_URL")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start initialises the cluster if needed, starts the server and waits until it accepts
// connections and Database exists.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Database == "" {
		opts.Database = "coffer"
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = 200
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		if err := makeReachable(dir, cred); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		opts.Logger.Info("initialising PostgreSQL cluster", "dir", dir)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dir, "-U", superuser,
			"--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %w: %s", err, bytes.TrimSpace(out))
		}
	}
	port := opts.Port
	if port == 0 {
		if port, err = freeport.Pick(ctx, "127.0.0.1"); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := []string{"-D", dir, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "max_connections=" + strconv.Itoa(opts.MaxConnections)}
	if opts.Ephemeral {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	//nolint:noctx // the server outlives Start's context; Stop ends it (SIGINT, fast shutdown)
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGINT, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{Port: port, Dir: dir, cmd: cmd, done: make(chan struct{}), logFile: logFile,
		URL: fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, port, opts.Database)}
	go func() { c.waitErr = cmd.Wait(); close(c.done) }()
	if err := c.waitReady(ctx, opts.Database); err != nil {
		_ = c.Stop() // the readiness error is the one to report
		return nil, fmt.Errorf("%w (log: %s)", err, tail(logPath))
	}
	opts.Logger.Info("PostgreSQL ready", "port", port, "dir", dir)
	return c, nil
}

func (c *Cluster) waitReady(ctx context.Context, database string) error {
	adminURL := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable", superuser, c.Port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited: %w", c.waitErr)
		default:
		}
		conn, err := pgx.Connect(ctx, adminURL)
		if err == nil {
			defer conn.Close(ctx)
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{database}.Sanitize()); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after 60s: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (fast mode) and waits for it.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		c.logFile.Close()
	})
	return nil
}

// runAs returns the credential to run PostgreSQL under when we are root, else nil.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil //nolint:nilnil // no credential: PostgreSQL runs as we do
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err := strconv.ParseUint(u.Uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %s: uid %q: %w", name, u.Uid, err)
		}
		gid, err := strconv.ParseUint(u.Gid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("user %s: gid %q: %w", name, u.Gid, err)
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody user exists to run PostgreSQL")
}

// makeReachable hands dir to the unprivileged user and makes sure every parent directory can
// be traversed by it.
func makeReachable(dir string, cred *syscall.Credential) error {
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid)) //nolint:gosec // G122: our own fresh directory
	})
	if err != nil {
		return err
	}
	for p := filepath.Dir(dir); p != "/" && p != "."; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o711); err != nil {
				return err
			}
		}
	}
	return nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
