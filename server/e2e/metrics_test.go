package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// scrape is one read of /metrics.
type scrape map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, internalURL string) scrape {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, internalURL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// sum adds the values (a histogram's count) of name's series whose labels include match
// ("k=v" pairs); ok is false when no series matches.
func (s scrape) sum(name string, match ...string) (total float64, ok bool) {
	f := s[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		matched := true
		for _, kv := range match {
			k, v, _ := strings.Cut(kv, "=")
			matched = matched && labels[k] == v
		}
		if !matched {
			continue
		}
		ok = true
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total, ok
}

// TestMetricsMoveOnDepositAndWithdrawal: on geth --dev, a USDT deposit and a payout move every
// metric an on-call engineer watches, read from /metrics as Prometheus would.
func TestMetricsMoveOnDepositAndWithdrawal(t *testing.T) {
	ctx := context.Background()
	m := startMoneyNode(t)
	env := m.env
	chainID := "chain_id=1337"
	// The balances as the periodic reconciliation reads them (it ran at start-up).
	reconcile := func() {
		t.Helper()
		w := &funds.ReconcileWorker{Reconciler: env.Services.Reconciler, Log: env.App.Log}
		if err := w.Work(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	reconcile()
	before := scrapeMetrics(t, env.InternalURL)

	// Transient gauges (a transaction pending, a job queued) are caught by scraping all along.
	var mu sync.Mutex
	peak := map[string]float64{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			s := scrapeMetrics(t, env.InternalURL)
			mu.Lock()
			for _, name := range []string{"coffer_chaintx_pending", "coffer_chaintx_oldest_pending_age_seconds", "coffer_river_jobs"} {
				v, _ := s.sum(name)
				peak[name] = max(peak[name], v)
			}
			mu.Unlock()
		}
	})

	recv := hooktest.New(t)
	external, enabled := domain.ApprovalExternal, true
	op, key := recv.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled})
	// A deposit of 50 USDT, paid from an ordinary wallet, credited once swept.
	sid, _ := openSession(t, env.URL, "deposit", key,
		`{"externalUserId":"metrics-1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"50"}`)
	m.sendUSDT(t, depositAddress(t, env.URL, sid, "USDT"), 50_000_000)
	recv.Await(1, 90*time.Second)
	// A payout of 7 USDT from the hot wallet.
	env.Fund(t, op.ID, m.node.ChainID, "USDT", "100")
	sid, _ = openSession(t, env.URL, "withdraw", key,
		`{"externalUserId":"metrics-2","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"7.00"}`)
	id := directTransfer(t, env.URL, sid, newAddress(t))["withdrawRequestId"].(string)
	if d := rest(t, "POST", env.URL+"/withdraw/"+id+"/decision", key, `{"decision":"APPROVE"}`); d["withdrawStatus"] != "COMPLETED" {
		t.Fatalf("APPROVE: %v", d)
	}
	recv.AwaitMatching(t, "WITHDRAW_COMPLETE", "withdrawRequestId", id, 1, 30*time.Second)
	time.Sleep(time.Second) // one more scan and a few scrapes
	close(stop)
	wg.Wait()
	reconcile()
	after := scrapeMetrics(t, env.InternalURL)

	value := func(s scrape, name string, match ...string) float64 {
		t.Helper()
		v, ok := s.sum(name, match...)
		if !ok {
			t.Errorf("/metrics has no %s%v", name, match)
		}
		return v
	}
	increased := func(name string, match ...string) {
		t.Helper()
		b, _ := before.sum(name, match...)
		if a := value(after, name, match...); a <= b {
			t.Errorf("%s%v did not increase: %v -> %v", name, match, b, a)
		} else {
			t.Logf("%s%v: %v -> %v", name, match, b, a)
		}
	}
	decreased := func(name string, match ...string) {
		t.Helper()
		b, a := value(before, name, match...), value(after, name, match...)
		if a >= b {
			t.Errorf("%s%v did not decrease: %v -> %v", name, match, b, a)
		} else {
			t.Logf("%s%v: %v -> %v", name, match, b, a)
		}
	}
	increased("coffer_deposits", "status=CREDITED", chainID, "currency=USDT")
	increased("coffer_chain_head_block", chainID)
	increased("coffer_chain_scanned_block", chainID)
	value(after, "coffer_chain_cursor_lag_blocks", chainID)
	if lag := value(after, "coffer_chain_scan_lag_seconds", chainID); lag > 10 {
		t.Errorf("scan lag %vs on a chain scanned every 200 ms", lag)
	}
	increased("coffer_rpc_requests_total", chainID)
	increased("coffer_rpc_request_duration_seconds", chainID)
	increased("coffer_webhook_deliveries_total", "outcome=delivered", "attempt=1")
	if dead := value(after, "coffer_webhook_dead_letters"); dead != 0 {
		t.Errorf("dead letters: %v", dead)
	}
	increased("coffer_job_duration_seconds", "outcome=ok")
	increased("coffer_job_wait_seconds")
	decreased("coffer_wallet_balance", chainID, "currency=USDT", "wallet=hot_wallet")
	increased("coffer_wallet_balance", chainID, "currency=USDT", "wallet=bankroll")
	decreased("coffer_wallet_balance", chainID, "currency=ETH", "wallet=gas_tank")
	value(after, "coffer_funds_surplus", chainID, "currency=USDT")
	increased("coffer_requests_total", "transport=rest", "code=ok")
	if up := value(after, "coffer_db_metrics_up"); up != 1 {
		t.Errorf("coffer_db_metrics_up %v", up)
	}
	if v := value(after, "coffer_build_info"); v != 1 {
		t.Errorf("coffer_build_info %v", v)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("peaks while paying: %v", peak)
	for _, name := range []string{"coffer_chaintx_pending", "coffer_chaintx_oldest_pending_age_seconds", "coffer_river_jobs"} {
		if peak[name] <= 0 {
			t.Errorf("%s never moved while paying", name)
		}
	}
}
