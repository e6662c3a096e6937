package metrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// RecentGauge is a gauge vector whose series are exported only while younger than MaxAge.
// A periodic job's results (the reconciliation's balances) are set by whichever worker ran
// it last: the other workers' older values then drop out instead of lingering beside the
// newest, and a job that stopped running shows as absent data rather than a frozen value.
type RecentGauge struct {
	desc   *prometheus.Desc
	maxAge time.Duration
	now    func() time.Time

	mu     sync.Mutex
	values map[string]recentValue
}

type recentValue struct {
	labels []string
	value  float64
	at     time.Time
}

// NewRecentGauge makes a RecentGauge.
func NewRecentGauge(name, help string, labels []string, maxAge time.Duration) *RecentGauge {
	return &RecentGauge{desc: prometheus.NewDesc(name, help, labels, nil), maxAge: maxAge, now: time.Now, values: map[string]recentValue{}}
}

// Set records the series' value now.
func (g *RecentGauge) Set(value float64, labels ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.values[strings.Join(labels, "\x00")] = recentValue{labels: labels, value: value, at: g.now()}
}

// Describe implements prometheus.Collector.
func (g *RecentGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector: the series set within MaxAge.
func (g *RecentGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for k, v := range g.values {
		if now.Sub(v.at) > g.maxAge {
			delete(g.values, k)
			continue
		}
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v.value, v.labels...)
	}
}
