// Package bench holds Coffer's performance figures (`make bench`). Targets live here, not in
// timed tests: REST session creation against a floor server (>= 0.85 of its throughput), and the
// idle RSS of `coffer serve` (< 60 MiB).
package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sys/unix"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// concurrency is the number of requests in flight during the load benchmarks.
const concurrency = 32

const sessionBody = `{"externalUserId":"user-1","lang":"en","platformFiatCurrency":"USD","userBalance":"10.00","amount":"25.00"}`

// window is how long each side is loaded in a round.
const window = 2 * time.Second

type sample struct {
	requests  int
	elapsed   time.Duration
	latencies []time.Duration
}

func (s *sample) add(o sample) {
	s.requests += o.requests
	s.elapsed += o.elapsed
	s.latencies = append(s.latencies, o.latencies...)
}

func (s *sample) throughput() float64 { return float64(s.requests) / s.elapsed.Seconds() }

func (s *sample) percentile(p int) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	l := slices.Clone(s.latencies)
	slices.Sort(l)
	return l[min(len(l)-1, len(l)*p/100)]
}

// BenchmarkCreateDepositSession: POST /session/deposit on Coffer and on the floor server with
// 32 requests in flight, on one machine. Each iteration is a round that loads Coffer, then the
// floor, for the same window; the ratio is the median of the rounds' ratios, so drift of the
// machine's speed during the run (PostgreSQL housekeeping, GC) cancels out. Run it with
// -benchtime Nx for N rounds.
func BenchmarkCreateDepositSession(b *testing.B) {
	// The service logs as it does by default (JSON at info: an access log line per request),
	// formatted but not written.
	//nolint:sloglint // not DiscardHandler: the access lines are formatted, as in production
	env := apptest.Start(b, apptest.Options{Log: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	_, key := env.Operator(b, domain.OperatorSettings{})
	floor := startFloor(b, env.Pool)
	targets := []string{env.URL + "/session/deposit", floor + "/session/deposit"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}}
	for _, url := range targets { // warm up connections, caches and the planner
		load(b, client, url, key, window/4)
	}
	var total [2]sample
	var ratios []float64
	for b.Loop() {
		var round [2]sample
		for i, url := range targets {
			round[i] = load(b, client, url, key, window)
			total[i].add(round[i])
		}
		ratios = append(ratios, round[0].throughput()/round[1].throughput())
	}
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	c, f := total[0], total[1]
	b.ReportMetric(c.throughput(), "coffer-req/s")
	b.ReportMetric(float64(c.percentile(50).Microseconds())/1000, "coffer-p50-ms")
	b.ReportMetric(float64(c.percentile(99).Microseconds())/1000, "coffer-p99-ms")
	b.ReportMetric(f.throughput(), "floor-req/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("\nPOST /session/deposit, %d in flight, %d rounds of %v each: coffer %.0f req/s (p50 %v, p99 %v); floor %.0f req/s (p50 %v, p99 %v); median ratio %.2f (rounds %.2f..%.2f; target >= 0.85)\n\n",
		concurrency, len(ratios), window, c.throughput(), c.percentile(50).Round(10*time.Microsecond), c.percentile(99).Round(10*time.Microsecond),
		f.throughput(), f.percentile(50).Round(10*time.Microsecond), f.percentile(99).Round(10*time.Microsecond), ratio, ratios[0], ratios[len(ratios)-1])
}

// load keeps concurrency requests in flight against url for d.
func load(b *testing.B, client *http.Client, url, key string, d time.Duration) sample {
	b.Helper()
	var mu sync.Mutex
	var out sample
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, url, strings.NewReader(sessionBody))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Errorf("%s: status %d", url, res.StatusCode)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			out.latencies = append(out.latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	out.requests = len(out.latencies)
	return out
}

// startFloor serves the bare minimum of session creation on the same pool: read the body,
// one authenticated lookup, one INSERT, a fixed answer.
func startFloor(b *testing.B, pool *pgxpool.Pool) string {
	b.Helper()
	ln, err := new(net.ListenConfig).Listen(b.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key, _ := auth.Bearer(r.Header)
		digest := sha256.Sum256([]byte(key))
		var operatorID string
		if err := pool.QueryRow(r.Context(), `SELECT operator_id::text FROM operator_keys WHERE digest = $1`, digest[:]).Scan(&operatorID); err != nil {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		_, err := pool.Exec(r.Context(), `INSERT INTO sessions (id, operator_id, kind, session_ref, external_user_id, lang,
			fiat_currency, user_balance, amount, expires_at) VALUES ($1, $2, 'DEPOSIT', $3, 'user-1', 'en', 'USD', 10, 25, now() + interval '30 minutes')`,
			uuid.NewString(), operatorID, secret.Token("sr_")[:35])
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success"}`))
	})}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed when the benchmark ends
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// BenchmarkIdleRSS starts `coffer serve` (role all: API and workers) on a migrated database,
// lets it settle, and reports its resident memory: VmRSS, and the anonymous part (heap,
// stacks) that is the process's own. The target is the release build's (make build, make
// image: -tags nodev); the default build, which links `coffer dev` and its embedded dev chain
// (a whole go-ethereum node whose package initialisation runs in every command), is measured
// beside it for comparison. The freshly linked binary is first evicted from the page cache, so
// it is paged in from disk as on a server: on kernels that cache files in large folios (this
// machine's does), a binary still cached from the linker's writes is mapped in 2 MB pieces
// and shows ~18 MiB more file-backed RSS for the same code.
func BenchmarkIdleRSS(b *testing.B) {
	for _, c := range []struct {
		name  string
		build func(context.Context, string) error
	}{
		{"release", proctest.BuildRelease},
		{"default", proctest.Build},
	} {
		b.Run(c.name, func(b *testing.B) {
			bin := filepath.Join(b.TempDir(), "coffer")
			if err := c.build(b.Context(), bin); err != nil {
				b.Fatal(err)
			}
			rss, anon := idleRSS(b, bin)
			for b.Loop() {
			}
			b.ReportMetric(rss, "MiB-RSS")
			b.ReportMetric(anon, "MiB-anon")
			target := " (target < 60)"
			if c.name != "release" {
				target = " (with coffer dev linked; for comparison)"
			}
			fmt.Printf("\nidle RSS of coffer serve (role all), %s build: %.1f MiB, of which anonymous %.1f MiB%s\n\n", c.name, rss, anon, target)
		})
	}
}

// idleRSS runs bin's `coffer serve` until it has been idle for 5 s and returns its VmRSS and
// RssAnon in MiB.
func idleRSS(b *testing.B, bin string) (rss, anon float64) {
	b.Helper()
	evictFromPageCache(b, bin)
	addr := proctest.FreeAddr(b)
	//nolint:noctx // measured until the SIGTERM below; a context would kill it instead
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+testdb.URL(b), "COFFER_MASTER_KEY="+secret.NewMasterKey(),
		"COFFER_ADDR="+addr, "COFFER_INTERNAL_ADDR=127.0.0.1:0", "COFFER_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proctest.WaitOK(ctx, "http://"+addr+"/readyz", 50*time.Millisecond)
	time.Sleep(5 * time.Second) // idle: River's leader election and periodic jobs have started
	return statusMiB(b, cmd.Process.Pid, "VmRSS"), statusMiB(b, cmd.Process.Pid, "RssAnon")
}

func statusMiB(b *testing.B, pid int, field string) float64 {
	b.Helper()
	return float64(proctest.StatusKiB(b, pid, field)) / 1024
}

// evictFromPageCache writes the file out and drops its cached pages.
func evictFromPageCache(b *testing.B, path string) {
	b.Helper()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
