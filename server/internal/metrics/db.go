package metrics

import (
	"context"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// DBTimeout bounds the queries of one scrape: a slow database yields coffer_db_metrics_up 0,
// never a hanging scrape.
const DBTimeout = 2 * time.Second

// dbDesc are the gauges read from PostgreSQL at scrape time. They are the same from every
// process, so only worker processes export them (a fleet of API replicas would repeat the
// queries for nothing); each query reads a partial index or a small table.
var (
	descDBUp = prometheus.NewDesc("coffer_db_metrics_up",
		"1 when the last scrape's PostgreSQL-derived metrics were read in time, else 0 (and those metrics are missing).", nil, nil)
	descDeposits = prometheus.NewDesc("coffer_deposits",
		"Deposits by status, chain and currency (asset).", []string{"status", "chain_id", "currency"}, nil)
	descHead = prometheus.NewDesc("coffer_chain_head_block",
		"Latest chain head the scanner saw, per chain.", []string{"chain_id"}, nil)
	descScanned = prometheus.NewDesc("coffer_chain_scanned_block",
		"Last block the scanner has read (its cursor), per chain.", []string{"chain_id"}, nil)
	descLagBlocks = prometheus.NewDesc("coffer_chain_cursor_lag_blocks",
		"Head lag: the chain head minus the scanned cursor, in blocks, per chain.", []string{"chain_id"}, nil)
	descLagSeconds = prometheus.NewDesc("coffer_chain_scan_lag_seconds",
		"Seconds since the scanner last recorded the chain's head and its cursor, per chain (grows while scans fail or stall).", []string{"chain_id"}, nil)
	descPending = prometheus.NewDesc("coffer_chaintx_pending",
		"Signed chain transactions not mined yet, per chain and sending wallet (gas_tank, hot_wallet, deposit, other).", []string{"chain_id", "wallet"}, nil)
	descPendingAge = prometheus.NewDesc("coffer_chaintx_oldest_pending_age_seconds",
		"Age of the oldest pending chain transaction, per chain and sending wallet.", []string{"chain_id", "wallet"}, nil)
	descDead = prometheus.NewDesc("coffer_webhook_dead_letters",
		"Webhook events dead-lettered (all attempts failed) and not redelivered yet.", nil, nil)
	descWebhookDue = prometheus.NewDesc("coffer_webhook_due",
		"Outbox webhooks due for an attempt now (the backlog operators' drains work through).", nil, nil)
	descWebhookDueAge = prometheus.NewDesc("coffer_webhook_oldest_due_age_seconds",
		"How long the oldest due outbox webhook has waited past its due time (grows when drains stall or fall behind).", nil, nil)
	descQueue = prometheus.NewDesc("coffer_river_jobs",
		"River jobs not finished, by kind and state (available, scheduled, retryable, running).", []string{"kind", "state"}, nil)
	descQueueAge = prometheus.NewDesc("coffer_river_oldest_available_age_seconds",
		"How long the oldest due (available) River job has waited for a worker, per kind.", []string{"kind"}, nil)
)

// DBCollector reads the service's state from PostgreSQL at scrape time.
type DBCollector struct {
	Pool *pgxpool.Pool
	// Wallets maps a service wallet's address (any case) to its label: gas_tank, hot_wallet.
	Wallets map[string]string
	Log     *slog.Logger

	mu    sync.Mutex
	open  map[depositKey]int64 // open deposits at the last recount of all
	all   map[depositKey]int64 // every status, as last recounted
	allAt time.Time
}

type depositKey struct{ status, chain, currency string }

// DepositRecountEvery bounds how stale the counts of settled deposits (CREDITED, ORPHANED, ...)
// may get. Counting every deposit reads the whole table (measured: ~0.4 s per million rows), so
// it runs only when the open deposits changed since the last count, or after this long.
const DepositRecountEvery = time.Minute

// deposits counts deposits by status, chain and currency: the open ones (CONFIRMING,
// SWEEPING; a partial index) on every scrape, every status when the open ones moved (a
// deposit settles by leaving them) or DepositRecountEvery passed.
func (c *DBCollector) deposits(ctx context.Context, q *store.Queries) (map[depositKey]int64, error) {
	count := func(query func(context.Context) ([]store.DepositCount, error)) (map[depositKey]int64, error) {
		rows, err := query(ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[depositKey]int64, len(rows))
		for _, r := range rows {
			out[depositKey{string(r.Status), strconv.FormatInt(r.ChainID, 10), r.Currency}] = r.N
		}
		return out, nil
	}
	open, err := count(q.CountOpenDeposits)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all == nil || !maps.Equal(open, c.open) || time.Since(c.allAt) >= DepositRecountEvery {
		all, err := count(q.CountDeposits)
		if err != nil {
			return nil, err
		}
		c.open, c.all, c.allAt = open, all, time.Now()
	}
	out := maps.Clone(c.all)
	for k := range out {
		if k.status == string(domain.DepositConfirming) || k.status == string(domain.DepositSweeping) {
			delete(out, k)
		}
	}
	maps.Copy(out, open)
	return out, nil
}

// Describe implements prometheus.Collector.
func (c *DBCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descDBUp, descDeposits, descHead, descScanned, descLagBlocks, descLagSeconds,
		descPending, descPendingAge, descDead, descWebhookDue, descWebhookDueAge, descQueue, descQueueAge} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed query is logged and reported as
// coffer_db_metrics_up 0: the scrape itself still succeeds with the other metrics.
func (c *DBCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), DBTimeout)
	defer cancel()
	var out []prometheus.Metric
	err := c.collect(ctx, func(m prometheus.Metric) { out = append(out, m) })
	up := 1.0
	if err != nil {
		up = 0
		if c.Log != nil {
			c.Log.Warn("metrics: read the service's state from PostgreSQL", "error", err)
		}
	} else {
		for _, m := range out {
			ch <- m
		}
	}
	ch <- prometheus.MustNewConstMetric(descDBUp, prometheus.GaugeValue, up)
}

func (c *DBCollector) wallet(address string) string {
	if w, ok := c.Wallets[strings.ToLower(address)]; ok {
		return w
	}
	return "deposit"
}

func (c *DBCollector) collect(ctx context.Context, emit func(prometheus.Metric)) error {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		emit(prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	q := store.New(c.Pool)
	deposits, err := c.deposits(ctx, q)
	if err != nil {
		return err
	}
	for k, n := range deposits {
		gauge(descDeposits, float64(n), k.status, k.chain, k.currency)
	}
	cursors, err := q.ChainCursorLags(ctx)
	if err != nil {
		return err
	}
	for _, r := range cursors {
		id := strconv.FormatInt(r.ChainID, 10)
		gauge(descHead, float64(r.HeadBlock), id)
		gauge(descScanned, float64(r.ScannedBlock), id)
		gauge(descLagBlocks, float64(max(r.HeadBlock-r.ScannedBlock, 0)), id)
		gauge(descLagSeconds, max(r.AgeSeconds, 0), id)
	}
	// Pending transactions: grouped by sender in Go, since deposit addresses are many.
	senders, err := q.PendingChainTxsBySender(ctx)
	if err != nil {
		return err
	}
	type key struct{ chain, wallet string }
	pending := map[key]struct {
		n   int64
		age float64
	}{}
	for _, r := range senders {
		k := key{strconv.FormatInt(r.ChainID, 10), c.wallet(r.FromAddress)}
		p := pending[k]
		p.n += r.N
		p.age = max(p.age, r.OldestAgeSeconds)
		pending[k] = p
	}
	for k, p := range pending {
		gauge(descPending, float64(p.n), k.chain, k.wallet)
		gauge(descPendingAge, p.age, k.chain, k.wallet)
	}
	dead, err := q.CountDeadWebhooks(ctx)
	if err != nil {
		return err
	}
	gauge(descDead, float64(dead))
	due, dueAge, err := q.DueWebhookBacklog(ctx)
	if err != nil {
		return err
	}
	gauge(descWebhookDue, float64(due))
	gauge(descWebhookDueAge, max(dueAge, 0))
	jobs, err := q.RiverJobCounts(ctx)
	if err != nil {
		return err
	}
	for _, r := range jobs {
		gauge(descQueue, float64(r.N), r.Kind, r.State)
		if r.State == "available" {
			gauge(descQueueAge, max(r.OldestAvailableAgeSeconds, 0), r.Kind)
		}
	}
	return nil
}

// CollectDB adds the PostgreSQL-derived gauges to the registry (worker processes).
func (m *Metrics) CollectDB(c *DBCollector) {
	m.Registry.MustRegister(c)
}
