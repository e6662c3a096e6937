package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/liveness"
)

// Defaults is the table's defaults, parsed: what an empty environment gives, and what the
// packages that own a default say.
func TestDefaults(t *testing.T) {
	t.Parallel()
	d := Defaults()
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"session TTL 30m", d.SessionTTL == 30*time.Minute},
		{"widget under the base URL", d.BaseURL == "http://localhost:8080" && d.WidgetURL == "http://localhost:8080/widget"},
		{"rescue after: jobs", d.JobRescueAfter == jobs.DefaultRescueAfter},
		{"concurrency: jobs", d.WorkerConcurrency == jobs.DefaultConcurrency && d.WebhookConcurrency == jobs.DefaultWebhookConcurrency},
		{"worker dead after: liveness", d.WorkerDeadAfter == liveness.DefaultGrace},
		{"login: admin", d.LoginHashMemory == admin.DefaultHashMemory && d.LoginHashWait == admin.DefaultHashWait},
		{"trusted proxies: clientip", slices.Equal(d.TrustedProxies, clientip.DefaultTrusted)},
		{"settle poll is the scan interval", d.SettlePoll == time.Second && d.ScanInterval == time.Second},
		{"no chains", d.Chains != nil && len(d.Chains.Networks()) == 0},
		{"chains checked strictly", d.ChainsValidate == chain.VerifyStrict},
		{"timeouts", d.HTTPReadTimeout == 15*time.Second && d.HTTPWriteTimeout == time.Minute && d.SettleWait == 20*time.Second && d.RateWait == 10*time.Minute},
		{"role, pool, listeners", d.Role == RoleAll && d.MaxDBConns == 20 && d.Addr == ":8080" && d.InternalAddr == "127.0.0.1:9090"},
		{"log", d.LogFormat == "json" && d.LogLevel.String() == "INFO"},
		{"nothing required", d.DatabaseURL == "" && d.MasterKey == nil},
	} {
		if !c.ok {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
	// FromEnv with only the required settings is Defaults plus them.
	env := requiredEnv()
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || c.SessionTTL != d.SessionTTL || c.WidgetURL != d.WidgetURL || c.JobRescueAfter != d.JobRescueAfter {
		t.Fatalf("FromEnv %+v %v", c, err)
	}
}

func TestEntries(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, e := range Entries() {
		if seen[e.Name] || e.Help == "" {
			t.Errorf("%s: listed twice or without help", e.Name)
		}
		seen[e.Name] = true
		if _, ok := EntryOf(e.Name); !ok {
			t.Errorf("EntryOf(%s)", e.Name)
		}
	}
	// A bad value is an error naming its variable, never a silent default.
	for name, bad := range map[string]string{
		"COFFER_DB_MAX_CONNS": "1", "COFFER_SESSION_TTL": "soon", "COFFER_ROLE": "boss", "COFFER_AUTO_MIGRATE": "yes please",
		"COFFER_WEBHOOK_ALLOW": "anywhere", "COFFER_WORKER_CONCURRENCY": "0", "COFFER_WEBHOOK_CONCURRENCY": "-3",
		"COFFER_SCAN_INTERVAL": "0s", "COFFER_STATIC_PRICES": "USDT", "COFFER_FIAT_RATES": "EUR=-1", "COFFER_JOB_RESCUE_AFTER": "1s",
		"COFFER_WORKER_DEAD_AFTER": "500ms", "COFFER_SETTLE_WAIT": "-1s", "COFFER_HTTP_READ_TIMEOUT": "15", "COFFER_HTTP_WRITE_TIMEOUT": "0",
		"COFFER_RATE_WAIT": "x", "COFFER_OFFRAMP": "moonpay", "COFFER_TRUSTED_PROXY_HEADER": "X-A: b", "COFFER_TRUSTED_PROXIES": "lb",
		"COFFER_LOGIN_HASH_MEMORY": "1", "COFFER_LOGIN_HASH_WAIT": "never", "COFFER_LOG_LEVEL": "loud", "COFFER_LOG_FORMAT": "xml",
		"COFFER_CHAINS_FILE": "/nonexistent/chains.json", "COFFER_CHAINS_VALIDATE": "sometimes",
	} {
		_, err := Read(func(k string) string {
			if k == name {
				return bad
			}
			return ""
		})
		want := name
		if name == "COFFER_ROLE" {
			want = `role "boss"`
		}
		if err == nil || !strings.Contains(err.Error(), want) && !strings.Contains(err.Error(), "nonexistent") {
			t.Errorf("%s=%q: %v", name, bad, err)
		}
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{2 * time.Minute: "2m", 3 * time.Second: "3s", time.Hour: "1h", 90 * time.Second: "1m30s",
		500 * time.Millisecond: "500ms", 90 * time.Minute: "1h30m"} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// The README's configuration table names every entry with its default.
func TestREADMEListsEveryEntry(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(b), "## Configuration")
	if start < 0 {
		t.Fatal("the README has no ## Configuration section")
	}
	section := string(b)[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	names := regexp.MustCompile("`([A-Z_]+)`")
	documented := map[string]string{}
	for line := range strings.SplitSeq(section, "\n") {
		cols := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cols) < 3 {
			continue
		}
		vars := names.FindAllStringSubmatch(cols[0], -1)
		defaults := strings.Split(cols[1], ", ")
		for i, v := range vars {
			def := defaults[0]
			if len(defaults) == len(vars) {
				def = defaults[i]
			}
			documented[v[1]] = def
		}
	}
	for _, e := range Entries() {
		got, ok := documented[e.Name]
		if !ok {
			t.Errorf("README: no row for %s", e.Name)
			continue
		}
		want := "`" + e.Default + "`"
		if e.Default == "" {
			if got == "empty" || strings.HasPrefix(got, "—") {
				continue
			}
			want = "empty"
		}
		if got != want {
			t.Errorf("README gives %s the default %s; Entries say %s", e.Name, got, want)
		}
	}
}
