package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/version"
)

func TestEndpointLabelDropsSecrets(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://eth-mainnet.g.alchemy.com/v2/SECRETKEY":   "eth-mainnet.g.alchemy.com",
		"https://mainnet.infura.io/v3/SECRETKEY?x=SECRET":  "mainnet.infura.io",
		"https://user:SECRET@rpc.example.com:8545/path":    "rpc.example.com:8545",
		"ws://127.0.0.1:8546":                              "127.0.0.1:8546",
		"not a url":                                        "invalid",
		"https://rpc.example.com/?apikey=SECRET#SECRET":    "rpc.example.com",
		"http://[::1]:8545":                                "[::1]:8545",
		"https://base-mainnet.example.org:443/SECRET/rest": "base-mainnet.example.org:443",
	} {
		got := EndpointLabel(raw)
		if got != want || strings.Contains(got, "SECRET") {
			t.Errorf("EndpointLabel(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestWebhookAttemptLabels(t *testing.T) {
	t.Parallel()
	before := testutil.ToFloat64(WebhookDeliveries.WithLabelValues("dead", "6+"))
	WebhookAttempt("dead", 9)
	if got := testutil.ToFloat64(WebhookDeliveries.WithLabelValues("dead", "6+")); got != before+1 {
		t.Fatalf("attempt 9 counted under 6+: %v -> %v", before, got)
	}
}

func TestRegistryExportsBuildInfo(t *testing.T) {
	t.Parallel()
	m := New()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "coffer_build_info" {
			labels := map[string]string{}
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := version.Get()
			if labels["goversion"] != v.GoVersion || labels["version"] != v.Version || labels["commit"] == "" ||
				f.GetMetric()[0].GetGauge().GetValue() != 1 {
				t.Fatalf("coffer_build_info %v = %v", labels, f.GetMetric()[0].GetGauge().GetValue())
			}
			return
		}
	}
	t.Fatal("no coffer_build_info")
}

func TestRecentGaugeDropsOldValues(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	g := NewRecentGauge("coffer_test_recent", "test", []string{"chain_id"}, 5*time.Minute)
	g.now = func() time.Time { return now }
	g.Set(3, "1")
	now = now.Add(4 * time.Minute)
	g.Set(-2, "2")
	if n := testutil.CollectAndCount(g); n != 2 {
		t.Fatalf("%d series, want 2", n)
	}
	now = now.Add(2 * time.Minute) // chain 1's value is 6 minutes old
	if err := testutil.CollectAndCompare(g, strings.NewReader(`
# HELP coffer_test_recent test
# TYPE coffer_test_recent gauge
coffer_test_recent{chain_id="2"} -2
`)); err != nil {
		t.Fatal(err)
	}
}
