package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/valyala/fasthttp"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Outbox benchmark settings: both sides run on the same River client settings.
const (
	// outboxJobs per side and round.
	outboxJobs = 20000
	// outboxWorkers is the workers of each side: COFFER_WEBHOOK_CONCURRENCY's default (the
	// webhooks queue, where deliveries run), and as many for River's no-op jobs. Comparing at
	// equal worker counts keeps concurrency out of the ratio: it measures what a delivery costs
	// over River's own work.
	outboxWorkers = jobs.DefaultWebhookConcurrency
	// outboxPoll is the fetch poll interval, and through jobs.Options the fetch cooldown.
	// River fetches at most once per cooldown, so with its default 100 ms cooldown every job
	// kind is capped at workers/cooldown (1,000 jobs/s) and both sides would measure that cap;
	// 2 ms lifts it above what this machine does.
	outboxPoll = 2 * time.Millisecond
	// productionPoll is what `coffer serve` runs River with by default (COFFER_SETTLE_POLL,
	// at most 1 s).
	productionPoll = time.Second
)

// BenchmarkOutbox compares River's own throughput on a worker that does nothing with the
// webhooks delivered per second through the outbox (sign with the operator's sealed key,
// POST to a local receiver answering {"error":0}, record the delivered state), at equal
// worker counts (outboxWorkers each: no-op jobs on the default queue, deliveries on the
// webhooks queue, and as many posts in flight for the one operator: its drain's
// OperatorConcurrency), outboxJobs jobs each, inserted before the client starts and timed from the
// first completion to the last. Each iteration is a round; the ratio is the median of the
// rounds' ratios (the machine's speed drifts). Target ratio >= 0.6. -benchtime Nx runs N
// rounds.
func BenchmarkOutbox(b *testing.B) {
	var noop, hooks []run
	var ratios []float64
	for b.Loop() {
		n := runNoop(b)
		h := runWebhooks(b, outboxPoll)
		noop, hooks = append(noop, n), append(hooks, h)
		ratios = append(ratios, h.rate/n.rate)
	}
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	n, h := mean(noop), mean(hooks)
	production := runWebhooks(b, productionPoll)
	b.ReportMetric(n.rate, "noop-jobs/s")
	b.ReportMetric(h.rate, "webhooks/s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(0, "ns/op")
	fmt.Printf("\nOutbox, %d jobs per side, %d workers each, %v poll, %d round(s): River no-op %.0f jobs/s (CPU %.0f µs/job, %.0f µs of it in Go); "+
		"webhooks delivered %.0f/s (CPU %.0f µs/webhook, %.0f µs of it in Go); median ratio %.2f (rounds %.2f..%.2f; target >= 0.60); "+
		"by CPU per item (less moved by other load on the machine) %.2f\n\n",
		outboxJobs, outboxWorkers, outboxPoll, len(ratios), n.rate, n.cpu, n.self, h.rate, h.cpu, h.self, ratio, ratios[0], ratios[len(ratios)-1],
		n.cpu/h.cpu)
	b.ReportMetric(n.cpu/h.cpu, "cpu-ratio")
	b.ReportMetric(production.rate, "webhooks/s-production")
	fmt.Printf("Outbox with the production fetch settings (poll %v; the webhooks queue fetches at most every %v): %.0f webhooks/s "+
		"(River's default 100 ms would cap %d workers at %d/s)\n\n", productionPoll, jobs.WebhookFetchCooldown, production.rate,
		outboxWorkers, outboxWorkers*10)
}

// run is one side of a round: jobs per second and CPU time per job of the benchmark (with its
// receiver) and its PostgreSQL (cpuBusy).
type run struct{ rate, cpu, self float64 }

func mean(v []run) run {
	var s run
	for _, x := range v {
		s.rate += x.rate / float64(len(v))
		s.cpu += x.cpu / float64(len(v))
		s.self += x.self / float64(len(v))
	}
	return s
}

type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func runNoop(b *testing.B) run {
	b.Helper()
	pool := testdb.New(b)
	w := river.NewWorkers()
	river.AddWorker(w, &noopWorker{})
	client := newRiver(b, pool, w, outboxPoll)
	params := make([]river.InsertManyParams, outboxJobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{N: i}}
	}
	if _, err := client.InsertManyFast(context.Background(), params); err != nil {
		b.Fatal(err)
	}
	return work(b, pool, client)
}

func runWebhooks(b *testing.B, poll time.Duration) run {
	b.Helper()
	ctx := context.Background()
	pool := testdb.New(b)
	box, err := secret.NewBox(secret.Random(secret.KeySize))
	if err != nil {
		b.Fatal(err)
	}
	var first sync.Once
	var start run // time and CPU at the first webhook received
	var startAt time.Time
	received := atomic.Int64{}
	url := receive(b, func() {
		first.Do(func() { startAt, start = time.Now(), run{cpu: cpuBusy(), self: cpuSelf()} })
		received.Add(1)
	})
	ops := operator.New(pool, box)
	op, _, err := ops.Create(ctx, domain.OperatorSettings{Name: new("Bench"), WebhookURL: new(url + "/hook")})
	if err != nil {
		b.Fatal(err)
	}
	ins := jobs.NewInserter()
	svc := webhook.New(pool, ops, webhook.Options{Client: webhook.NewClient(webhook.ClientOptions{Reach: webhook.ReachLoopback}), Jobs: ins,
		OperatorConcurrency: outboxWorkers})
	w := river.NewWorkers()
	river.AddWorker(w, &webhook.DrainWorker{Service: svc})
	client := newRiver(b, pool, w, poll)
	if err := ins.Bind(client); err != nil {
		b.Fatal(err)
	}
	at := timestamppb.New(time.Date(2026, 11, 22, 5, 38, 20, 0, time.UTC))
	for start := 0; start < outboxJobs; start += 500 {
		err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
			for i := start; i < min(start+500, outboxJobs); i++ {
				msg := &cofferv1.DepositEvent{DepositId: int64(i + 1), IdempotencyKey: "1:0x" + strconv.Itoa(i) + ":0",
					ExternalUserId: "user-1", SessionRef: new("sr_1"), SessionAmount: new("25.00"),
					Amount: "25000000", AmountInDollar: new("25.00"), AmountInLocalCurrency: new("25.00"),
					LocalCurrencyCode: "USD", CurrentRate: "1", Pair: "USD/USD", GrossAmount: "25000000", FeeAmount: "0",
					FeeInDollar: new("0.000000"), Type: "ERC20", ContractAddress: new("0x5FbDB2315678afecb367f032d93F642f64180aa3"),
					TransactionHash: new("0x" + strconv.Itoa(i)), ChainId: 1, ConfirmedAt: at}
				if err := svc.Enqueue(ctx, tx, webhook.Event{OperatorID: op.ID, SubjectID: strconv.Itoa(i + 1), Message: msg}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// Timed from the first webhook received until every webhook is recorded delivered.
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for received.Load() < outboxJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	delivered := 0
	for time.Now().Before(deadline) {
		pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE state = 'delivered'`).Scan(&delivered) //nolint:errcheck
		if delivered == outboxJobs {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	elapsed := time.Since(startAt)
	end := run{cpu: cpuBusy(), self: cpuSelf()}
	if delivered != outboxJobs {
		b.Fatalf("%d of %d webhooks delivered (%d received) in 5 minutes", delivered, outboxJobs, received.Load())
	}
	stopCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	client.Stop(stopCtx) //nolint:errcheck
	pool.Reset()
	return run{rate: float64(outboxJobs-1) / elapsed.Seconds(), cpu: (end.cpu - start.cpu) * 1e6 / float64(outboxJobs-1),
		self: (end.self - start.self) * 1e6 / float64(outboxJobs-1)}
}

// receive starts the operator's receiver on loopback, answering every post {"error":0} after
// calling got, and returns its URL. It stands in for the operator's server, which in production
// runs on another machine and costs Coffer nothing; here it shares the CPUs, so it is a
// fasthttp server, whose CPU per post is about half net/http's.
func receive(b *testing.B, got func()) string {
	b.Helper()
	l, err := (&net.ListenConfig{}).Listen(b.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) {
		got()
		c.SetContentType("application/json")
		c.SetBodyString(`{"error":0}`)
	}}
	go srv.Serve(l) //nolint:errcheck // ends with the listener

	b.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	return "http://" + l.Addr().String()
}

// newRiver builds a client with outboxWorkers on each queue.
func newRiver(b *testing.B, pool *pgxpool.Pool, w *river.Workers, poll time.Duration) *jobs.Client {
	b.Helper()
	client, err := jobs.NewClient(pool, slog.New(slog.DiscardHandler), jobs.Options{
		Work: true, Concurrency: outboxWorkers, WebhookConcurrency: outboxWorkers, PollInterval: poll, Workers: w})
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// work starts the client and measures from the first completion to the last (River's
// start-up, a few hundred milliseconds, is left out).
func work(b *testing.B, pool *pgxpool.Pool, client *jobs.Client) run {
	b.Helper()
	ctx := context.Background()
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed}, ChanSize: 2 * outboxJobs})
	defer cancel()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	var first time.Time
	var busy, self float64
	done := 0
	timeout := time.After(5 * time.Minute)
	for done < outboxJobs {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				b.Fatalf("job %s failed: %v", ev.Job.Kind, ev.Job.Errors)
			}
			if done == 0 {
				first, busy, self = time.Now(), cpuBusy(), cpuSelf()
			}
			done++
		case <-timeout:
			b.Fatalf("%d of %d jobs completed in 5 minutes", done, outboxJobs)
		}
	}
	elapsed := time.Since(first)
	cpu := (cpuBusy() - busy) * 1e6 / float64(outboxJobs-1)
	self = (cpuSelf() - self) * 1e6 / float64(outboxJobs-1)
	stopCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	client.Stop(stopCtx) //nolint:errcheck
	pool.Reset()
	return run{rate: float64(outboxJobs-1) / elapsed.Seconds(), cpu: cpu, self: self}
}

// cpuSelf is this process's CPU time in seconds (user and system): the benchmark's side of
// the machine's CPU, the rest being PostgreSQL's.
func cpuSelf() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()).Seconds()
}

// cpuBusy is the CPU time in seconds of this process and every process below it (user and
// system, Linux /proc; 0 elsewhere): the benchmark and its throwaway PostgreSQL cluster, whose
// backends and autovacuum workers are its descendants (the CPU of those that exited is in their
// parent's cutime). Other load on the machine does not count. With TEST_DATABASE_URL the server
// is not a descendant: the machine's busy time is taken instead (/proc/stat).
func cpuBusy() float64 {
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return machineBusy()
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	type proc struct {
		parent int
		ticks  float64
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ... utime stime cutime cstime: fields 4 and 14-17; comm may
		// hold spaces, so fields are counted after its closing parenthesis.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 15 {
			continue
		}
		parent, _ := strconv.Atoi(f[1])
		var ticks float64
		for _, v := range f[11:15] {
			n, _ := strconv.ParseFloat(v, 64)
			ticks += n
		}
		procs[pid] = proc{parent, ticks}
	}
	self := os.Getpid()
	var total float64
	for pid, p := range procs {
		for at := pid; at > 1; at = procs[at].parent {
			if at == self {
				total += p.ticks
				break
			}
			if _, ok := procs[at]; !ok {
				break
			}
		}
	}
	return total / 100 // USER_HZ
}

// machineBusy is the machine's busy CPU time in seconds (Linux /proc/stat; 0 elsewhere).
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	var user, nice, system, idle, iowait, irq, softirq float64
	fmt.Sscanf(string(b), "cpu %f %f %f %f %f %f %f", &user, &nice, &system, &idle, &iowait, &irq, &softirq) //nolint:errcheck
	return (user + nice + system + irq + softirq) / 100                                                      // USER_HZ
}
