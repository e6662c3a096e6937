// Package metrics exposes Coffer's Prometheus metrics at /metrics: request counts and latency
// per operation and transport, domain metrics the services update (this file, chain.go,
// jobs.go, webhook.go), gauges read from PostgreSQL at scrape time (db.go, worker processes
// only), build information, plus the Go runtime and process collectors.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReconciledMaxAge is how long a reconciliation's gauges are exported: it runs every minute on
// some worker, so older values are another worker's, or a sign it stopped.
const ReconciledMaxAge = 5 * time.Minute

// Domain metrics, updated by the service layer and registered in every registry New makes.
var (
	// DepositsUnpriced counts deposits credited without a rate (the source stayed down).
	DepositsUnpriced = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_deposits_unpriced_total",
		Help: "Deposits whose DEPOSIT went out with null USD/local values because no rate could be read in time.",
	}, []string{"chain_id", "currency"})
	// FundsSurplus is on-chain holdings minus operators' funds, per chain and asset, in token
	// units, from the latest reconciliation; negative means the books are not covered.
	FundsSurplus = NewRecentGauge("coffer_funds_surplus",
		"Latest reconciliation: service holdings (bankroll + hot wallet) minus all operators' available and reserved funds, in token units (absent when no reconciliation ran in the last 5 minutes).",
		[]string{"chain_id", "currency"}, ReconciledMaxAge)
	// ReconcileChainUnread is 1 for a chain whose holdings the latest reconciliation could not
	// read (its coffer_funds_surplus lines are then missing, not proven), 0 for one it read.
	ReconcileChainUnread = NewRecentGauge("coffer_reconcile_chain_unread",
		"Latest periodic reconciliation: 1 when a chain's holdings could not be read (its coffer_funds_surplus lines are not checked), 0 when they were (absent when no reconciliation ran in the last 5 minutes).",
		[]string{"chain_id"}, ReconciledMaxAge)
	// GasTopUpOverdue counts settle steps that found a sweep (or a prefunding) still waiting for
	// its gas top-up past deposit.Config.GasWaitAlert; alert on any increase.
	GasTopUpOverdue = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_gas_topup_overdue_total",
		Help: "Settle steps that found a token sweep (or its prefunding) waiting for its gas top-up longer than expected (15 minutes): the gas tank is empty, its top-up is stuck, or it left the chain; each is logged at ERROR with the sweep, address and chain.",
	}, []string{"chain_id"})
	// WithdrawalsNotClosed counts expiries and session cancels the transition table refused on
	// a withdrawal still open and unactioned: it stays open past its TTL or its session's end.
	WithdrawalsNotClosed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_withdrawals_not_closed_total",
		Help: "Expiries (system:expire) and session cancels (user:session-cancelled) the transition table refused on a withdrawal nobody acted on: it stays open past its due time; each is logged at ERROR with the withdrawal.",
	}, []string{"action"})
	// WorkersDead counts worker processes found dead (lock gone, no heartbeat) by liveness.
	WorkersDead = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "coffer_workers_dead_total",
		Help: "Worker processes found dead (their liveness lock gone and no heartbeat within the grace period).",
	})
	// JobsRescued counts running jobs of dead workers made available again, by job kind.
	JobsRescued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_jobs_rescued_total",
		Help: "Running jobs of dead workers put back to work by the liveness rescuer, by River job kind.",
	}, []string{"kind"})
	// DepositsReorged counts deposits past their confirmation depth whose block left the chain.
	DepositsReorged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "coffer_deposits_reorged_total",
		Help: "Deposits past their confirmation depth (swept or credited) whose block left the chain in a reorg deeper than the depth.",
	}, []string{"chain_id", "currency"})
	// DepositsReorgedUnresolved is how many reorged deposits wait for an engineer (or for their
	// re-inclusion to confirm), per chain; alert above 0.
	DepositsReorgedUnresolved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "coffer_deposits_reorged_unresolved",
		Help: "Reorged deposits not resolved yet (OpsService.ListReorgedDeposits); their credit does not count toward operators' funds.",
	}, []string{"chain_id"})
	// WalletBalance is a service wallet's on-chain balance in token units, per chain and asset,
	// as the periodic reconciliation read it.
	WalletBalance = NewRecentGauge("coffer_wallet_balance",
		"On-chain balance of a service wallet (wallet: hot_wallet, bankroll, gas_tank) in token units, from the latest periodic reconciliation (absent when none ran in the last 5 minutes).",
		[]string{"chain_id", "currency", "wallet"}, ReconciledMaxAge)
)

// Metrics is one registry of Coffer's metrics.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// New builds a registry with the request metrics and the runtime collectors.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coffer_requests_total",
			Help: "Requests handled, by transport (rest, connect), operation and result code.",
		}, []string{"transport", "operation", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "coffer_request_duration_seconds",
			Help:    "Request latency by transport and operation.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"transport", "operation"}),
	}
	m.Registry.MustRegister(m.requests, m.latency, DepositsUnpriced, FundsSurplus, ReconcileChainUnread, GasTopUpOverdue, WithdrawalsNotClosed, WorkersDead, JobsRescued,
		DepositsReorged, DepositsReorgedUnresolved, WalletBalance, buildInfo,
		RPCRequests, RPCErrors, RPCDuration, WebhookDeliveries, JobWait, JobDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Observe records one request.
func (m *Metrics) Observe(transport, operation, code string, d time.Duration) {
	m.requests.WithLabelValues(transport, operation, code).Inc()
	m.latency.WithLabelValues(transport, operation).Observe(d.Seconds())
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
