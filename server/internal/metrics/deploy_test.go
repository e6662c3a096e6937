package metrics

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// The alert rules and the dashboard shipped under deploy/.
var (
	alertsFile    = filepath.Join("..", "..", "..", "deploy", "prometheus", "alerts.yml")
	dashboardFile = filepath.Join("..", "..", "..", "deploy", "grafana", "coffer.json")
)

// ExportedNames is every metric name a worker process's registry exports (the PostgreSQL
// gauges included), with the _bucket, _sum and _count series of histograms.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	m := New()
	m.CollectDB(&DBCollector{})
	m.CollectPayouts(func(context.Context) ([]PauseLabels, error) { return nil, nil })
	ch := make(chan *prometheus.Desc, 512)
	m.Registry.Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]bool{}
	for d := range ch {
		match := fqName.FindStringSubmatch(d.String())
		if match == nil {
			t.Fatalf("no name in %s", d)
		}
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			names[match[1]+suffix] = true
		}
	}
	return names
}

// metricNames are the metric names an expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs.Name)
		}
		return nil
	})
	return out
}

func loadRules(t *testing.T) map[string]rulefmt.Rule {
	t.Helper()
	groups, errs := rulefmt.ParseFile(alertsFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("%s: %v", alertsFile, errs)
	}
	rules := map[string]rulefmt.Rule{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			rules[r.Alert] = r
		}
	}
	return rules
}

// TestAlertRulesParse: the rule file loads with Prometheus's own rule parser, covers what an
// on-call engineer must hear about, and selects only metrics Coffer exports.
func TestAlertRulesParse(t *testing.T) {
	t.Parallel()
	rules := loadRules(t)
	for _, want := range []string{"CofferHeadLag", "CofferStuckTransaction", "CofferGasTankLow", "CofferHotWalletLow",
		"CofferWebhookDeadLetters", "CofferReconciliationGap", "CofferPayoutsPaused", "CofferWalletBelowThreshold", "CofferWorkerDown", "CofferWebhookFailureRate"} {
		if _, ok := rules[want]; !ok {
			t.Errorf("no alert %s", want)
		}
	}
	exported := exportedNames(t)
	for name, r := range rules {
		if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
			t.Errorf("%s: needs a severity label and a summary", name)
		}
		for _, m := range metricNames(t, r.Expr) {
			if !exported[m] {
				t.Errorf("%s selects %s, which Coffer does not export", name, m)
			}
		}
	}
}

// TestAlertConditionsFireAndClear evaluates rules' expressions with Prometheus's engine over
// series made for each: the condition holds at one time and no longer at a later one.
func TestAlertConditionsFireAndClear(t *testing.T) {
	t.Parallel()
	rules := loadRules(t)
	for _, tc := range []struct {
		alert       string
		series      string // promqltest load lines, one sample a minute from 0
		fire, clear time.Duration
		labels      map[string]string // of the firing sample
	}{
		{
			alert: "CofferReconciliationGap",
			// Two workers: one ran the reconciliation that found the gap, the other's gauge is older.
			series: `coffer_funds_surplus{chain_id="1",currency="USDT",instance="w1"} 5 5 -3 -3 2 2
				coffer_funds_surplus{chain_id="1",currency="USDT",instance="w2"} 5 5 5 5 5 5`,
			fire: 3 * time.Minute, clear: 5 * time.Minute,
			labels: map[string]string{"chain_id": "1", "currency": "USDT"},
		},
		{
			alert: "CofferStuckTransaction",
			// A payout pending for 40 minutes, then mined: the series goes away.
			series: `coffer_chaintx_oldest_pending_age_seconds{chain_id="8453",wallet="hot_wallet",instance="w1"} 1200 1800 2400 stale`,
			fire:   2 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"chain_id": "8453", "wallet": "hot_wallet"},
		},
		{
			alert:  "CofferHeadLag",
			series: `coffer_chain_cursor_lag_blocks{chain_id="1",instance="w1"} 3 250 400 2`,
			fire:   2 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"chain_id": "1"},
		},
		{
			alert: "CofferSweepWaitingForGas",
			// Steps find the sweep overdue for a few minutes, then its top-up is mined.
			series: `coffer_gas_topup_overdue_total{chain_id="1",instance="w1"} 0 0 3 6 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9 9`,
			fire:   5 * time.Minute, clear: 23 * time.Minute,
			labels: map[string]string{"chain_id": "1"},
		},
		{
			alert: "CofferWithdrawalNotClosed",
			// One expiry refused on an unactioned withdrawal, then none.
			series: `coffer_withdrawals_not_closed_total{action="system:expire",instance="w1"} 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1`,
			fire:   3 * time.Minute, clear: 20 * time.Minute,
			labels: map[string]string{"action": "system:expire"},
		},
		{
			alert:  "CofferGasTankLow",
			series: `coffer_wallet_balance{chain_id="1",currency="ETH",wallet="gas_tank",instance="w1"} 1 0.01 0.01 2`,
			fire:   1 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"chain_id": "1", "currency": "ETH"},
		},
		{
			alert:  "CofferWalletBelowThreshold",
			series: `coffer_wallet_below_threshold{chain_id="1",wallet="0x00000000000000000000000000000000000000aa",currency="ETH",instance="w1"} 0 1 1 0`,
			fire:   1 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"chain_id": "1", "wallet": "0x00000000000000000000000000000000000000aa", "currency": "ETH"},
		},
		{
			alert:  "CofferPayoutsPaused",
			series: `coffer_payouts_paused{scope="chain",chain_id="1",operator_id="",instance="w1"} 0 1 1 0`,
			fire:   1 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"scope": "chain", "chain_id": "1"},
		},
		{
			alert:  "CofferWorkerDown",
			series: `coffer_db_metrics_up{instance="w1"} 1 0 0 1`,
			fire:   1 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{},
		},
		{
			alert: "CofferWebhookFailureRate",
			// 10 attempts a minute; failures climb to 6 a minute, then stop.
			series: `coffer_webhook_deliveries_total{outcome="delivered",attempt="1",instance="w1"} 0+10x10 100+10x10
				coffer_webhook_deliveries_total{outcome="failed",attempt="1",instance="w1"} 0+6x10 60+0x10`,
			fire: 10 * time.Minute, clear: 21 * time.Minute,
			labels: map[string]string{},
		},
		{
			alert: "CofferReconciliationStale",
			// Reconciled, then no worker reconciles: the gauge drops out after 5 minutes.
			series: `coffer_funds_surplus{chain_id="1",currency="USDT",instance="w1"} 1 1 stale`,
			fire:   3 * time.Minute, clear: 1 * time.Minute,
			labels: map[string]string{},
		},
		{
			alert: "CofferReconciliationChainUnread",
			// Two workers: the one that reconciles now cannot read chain 8453; the other's gauge is older.
			series: `coffer_reconcile_chain_unread{chain_id="8453",instance="w1"} 0 1 1 0
				coffer_reconcile_chain_unread{chain_id="8453",instance="w2"} 0 0 0 0`,
			fire: 2 * time.Minute, clear: 3 * time.Minute,
			labels: map[string]string{"chain_id": "8453"},
		},
		{
			alert:  "CofferWebhookBacklog",
			series: `coffer_webhook_oldest_due_age_seconds{instance="w1"} 0 200 260 320 380 440 500 560 0`,
			fire:   6 * time.Minute, clear: 8 * time.Minute,
			labels: map[string]string{},
		},
		{
			alert:  "CofferWebhookDeadLetters",
			series: `coffer_webhook_dead_letters{instance="w1"} 0 2 0`,
			fire:   1 * time.Minute, clear: 2 * time.Minute,
			labels: map[string]string{},
		},
	} {
		t.Run(tc.alert, func(t *testing.T) {
			t.Parallel()
			rule, ok := rules[tc.alert]
			if !ok {
				t.Fatalf("no alert %s", tc.alert)
			}
			storage := promqltest.LoadedStorage(t, "load 1m\n"+tc.series)
			engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
			eval := func(at time.Duration) promql.Vector {
				q, err := engine.NewInstantQuery(t.Context(), storage, nil, rule.Expr, time.Unix(0, 0).Add(at))
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close()
				res := q.Exec(t.Context())
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				v, err := res.Vector()
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			fired := eval(tc.fire)
			if len(fired) != 1 {
				t.Fatalf("at %v: %d samples %v, want the condition to hold once", tc.fire, len(fired), fired)
			}
			for k, v := range tc.labels {
				if got := fired[0].Metric.Get(k); got != v {
					t.Errorf("at %v: label %s = %q, want %q (%v)", tc.fire, k, got, v, fired[0].Metric)
				}
			}
			if cleared := eval(tc.clear); len(cleared) != 0 {
				t.Fatalf("at %v: still %v, want the condition cleared", tc.clear, cleared)
			}
		})
	}
}

// TestDashboard: the Grafana dashboard is valid JSON whose every panel query selects only
// metrics the registry exports.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Fatalf("dashboard needs a title and a uid")
	}
	exported := exportedNames(t)
	var used []string
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricNames(t, tg.Expr) {
				if !exported[m] {
					t.Errorf("panel %q selects %s, which Coffer does not export", p.Title, m)
				}
				used = append(used, m)
			}
		}
	}
	for _, want := range []string{"coffer_deposits", "coffer_chain_cursor_lag_blocks", "coffer_rpc_errors_total", "coffer_chaintx_pending",
		"coffer_wallet_balance", "coffer_funds_surplus", "coffer_webhook_deliveries_total", "coffer_river_jobs", "coffer_build_info"} {
		if !slices.Contains(used, want) {
			t.Errorf("the dashboard shows no %s", want)
		}
	}
}
