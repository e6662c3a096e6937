package config

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/liveness"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Entry is one environment variable: its name, its default (the value an unset or blank
// variable takes; parsed like any other), its meaning, and how a value lands in a Config.
type Entry struct {
	Name, Default, Help string
	// set parses v into its field of c. nil for the master key variables, which
	// custody.SourcesFromEnv reads together (FromEnv).
	set func(c *Config, e Entry, v string) error
}

// Entries is every variable FromEnv reads, in the order --help and the README list them.
// Defaults owned by the package they configure (jobs, liveness, admin, clientip) are read
// from it, so no default is written twice. It is a new slice each call: nobody can change
// what the next reader gets.
func Entries() []Entry {
	return []Entry{
		{"DATABASE_URL", "", "PostgreSQL URL (required)", text(func(c *Config) *string { return &c.DatabaseURL })},
		{"COFFER_DB_MAX_CONNS", "20", "pool size per process", func(c *Config, e Entry, v string) error {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 2 {
				return fmt.Errorf("%s must be an integer >= 2", e.Name)
			}
			c.MaxDBConns = int32(n)
			return nil
		}},
		{"COFFER_ADDR", ":8080", "listen address", text(func(c *Config) *string { return &c.Addr })},
		{"COFFER_INTERNAL_ADDR", "127.0.0.1:9090", "internal listen address: /metrics, gRPC reflection, OpsService (keep it off the internet)",
			text(func(c *Config) *string { return &c.InternalAddr })},
		{"COFFER_BASE_URL", "http://localhost:8080", "public base URL of the API", baseURL(func(c *Config) *string { return &c.BaseURL })},
		// After COFFER_BASE_URL, which its default names.
		{"COFFER_WIDGET_URL", "$COFFER_BASE_URL/widget", "public URL of the widget", baseURL(func(c *Config) *string { return &c.WidgetURL })},
		{"COFFER_MASTER_KEY", "", "32-byte master key (hex or base64) sealing operator keys, TOTP secrets and the HD wallet; exactly one of COFFER_MASTER_KEY, COFFER_MASTER_KEY_FILE and COFFER_MASTER_KEY_URL is required", nil},
		{"COFFER_MASTER_KEY_FILE", "", "file holding the master key (hex, base64 or 32 raw bytes), e.g. a mounted secret", nil},
		{"COFFER_MASTER_KEY_URL", "", "KMS that wraps the master key, stored in PostgreSQL: awskms://…, gcpkms://…, azurekeyvault://…, hashivault://… (gocloud.dev/secrets URL)", nil},
		{"COFFER_MASTER_KEY_PREVIOUS", "", "during a master key rotation only: the old master key (hex or base64), still accepted for opening; or _PREVIOUS_FILE / _PREVIOUS_URL", nil},
		{"COFFER_OPS_TOKEN", "", "Bearer token of the internal OpsService; OpsService refuses every call when empty", text(func(c *Config) *string { return &c.OpsToken })},
		{"COFFER_CHAINS_FILE", "", "JSON chains file; no chains when empty", func(c *Config, _ Entry, v string) (err error) {
			if v == "" {
				c.Chains, err = chain.NewRegistry(nil)
				return err
			}
			c.Chains, err = chain.LoadFile(v)
			return err
		}},
		{"COFFER_CHAINS_VALIDATE", string(chain.VerifyStrict), "check the chains file against each RPC at start-up (chain id, token code and decimals, price feeds): strict (refuse to start), warn (log and start) or off",
			parsed(func(c *Config) *chain.VerifyMode { return &c.ChainsValidate }, chain.ParseVerifyMode)},
		{"COFFER_SESSION_TTL", "30m", "widget session lifetime", positive(func(c *Config) *time.Duration { return &c.SessionTTL })},
		{"COFFER_ROLE", RoleAll, "api, worker or all (overridden by --role)", func(c *Config, _ Entry, v string) error {
			c.Role = v
			return CheckRole(v)
		}},
		{"COFFER_AUTO_MIGRATE", "false", "run migrations at start-up", func(c *Config, e Entry, v string) (err error) {
			if c.AutoMigrate, err = strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%s must be true or false", e.Name)
			}
			return nil
		}},
		{"COFFER_WEBHOOK_ALLOW", "public", "webhook targets: public, loopback (+127.0.0.0/8, ::1) or private (+RFC 1918, CGNAT, ULA); never link-local",
			parsed(func(c *Config) *webhook.Reach { return &c.WebhookReach }, webhook.ParseReach)},
		{"COFFER_WORKER_CONCURRENCY", strconv.Itoa(jobs.DefaultConcurrency), "River workers of the default queue (scans, sweeps, payouts, expiry)",
			count(func(c *Config) *int { return &c.WorkerConcurrency })},
		{"COFFER_WEBHOOK_CONCURRENCY", strconv.Itoa(jobs.DefaultWebhookConcurrency), "River workers of the webhooks queue: operators whose webhooks are posted at once (one drain each)",
			count(func(c *Config) *int { return &c.WebhookConcurrency })},
		{"COFFER_SCAN_INTERVAL", "1s", "how often each chain is scanned for deposits", func(c *Config, e Entry, v string) error {
			// A deposit waiting on the chain is looked at as often as the chain is scanned.
			err := positive(func(c *Config) *time.Duration { return &c.ScanInterval })(c, e, v)
			c.SettlePoll = c.ScanInterval
			return err
		}},
		{"COFFER_STATIC_PRICES", "", "USD prices of assets without a price feed in the chains file, e.g. USDT=1,USDC=1",
			table(func(c *Config) *map[string]decimal.Decimal { return &c.StaticPrices })},
		{"COFFER_FIAT_RATES", "", "units of each platform fiat currency per USD, e.g. EUR=0.92,GBP=0.79 (USD is always 1)",
			table(func(c *Config) *map[string]decimal.Decimal { return &c.FiatRates })},
		{"COFFER_JOB_RESCUE_AFTER", shortDuration(jobs.DefaultRescueAfter), "how long a background job may run before it is presumed lost and run again, when its worker still looks alive (a backstop: see COFFER_WORKER_DEAD_AFTER)",
			atLeast(2*time.Second, func(c *Config) *time.Duration { return &c.JobRescueAfter })},
		{"COFFER_WORKER_DEAD_AFTER", shortDuration(liveness.DefaultGrace), "how long a worker whose connection to PostgreSQL is gone may miss its heartbeat before other workers run its jobs again",
			atLeast(time.Second, func(c *Config) *time.Duration { return &c.WorkerDeadAfter })},
		{"COFFER_SETTLE_WAIT", "20s", "how long a withdrawal decision waits for its payout to confirm before answering",
			positive(func(c *Config) *time.Duration { return &c.SettleWait })},
		{"COFFER_HTTP_READ_TIMEOUT", "15s", "how long a request's body may take to arrive (headers: 5 s)",
			positive(func(c *Config) *time.Duration { return &c.HTTPReadTimeout })},
		{"COFFER_HTTP_WRITE_TIMEOUT", "60s", "how long an answer may take to be written (streams excepted)",
			positive(func(c *Config) *time.Duration { return &c.HTTPWriteTimeout })},
		{"COFFER_RATE_WAIT", "10m", "how long a swept deposit waits for an unreadable rate before its DEPOSIT goes out with null values",
			positive(func(c *Config) *time.Duration { return &c.RateWait })},
		// After COFFER_CHAINS_FILE: dev is refused on any other chain than the dev chain.
		{"COFFER_OFFRAMP", "", "off-ramp provider of OFF_RAMP withdrawals: empty (refused) or dev (dev chain only)", offRamp},
		{"COFFER_TRUSTED_PROXY_HEADER", "", "header in which trusted reverse proxies pass the client address (X-Forwarded-For, X-Real-IP or Forwarded); empty: never read, the connection's address is the client",
			func(c *Config, e Entry, v string) error {
				if strings.ContainsAny(v, " \t:,;") {
					return fmt.Errorf("%s must be a header name such as X-Forwarded-For", e.Name)
				}
				if v != "" {
					c.TrustedProxyHeader = http.CanonicalHeaderKey(v)
				}
				return nil
			}},
		{"COFFER_TRUSTED_PROXIES", prefixes(clientip.DefaultTrusted), "comma-separated addresses or CIDRs of the proxies whose COFFER_TRUSTED_PROXY_HEADER is believed (default: loopback and private networks)",
			parsed(func(c *Config) *[]netip.Prefix { return &c.TrustedProxies }, clientip.ParsePrefixes)},
		{"COFFER_LOGIN_HASH_MEMORY", strconv.Itoa(admin.DefaultHashMemory >> 20), "MiB that admin password hashes (argon2id, 19 MiB each) may hold at once; logins beyond wait, then answer 503",
			func(c *Config, e Entry, v string) error {
				mib, err := strconv.Atoi(v)
				if err != nil || mib < admin.HashMemoryPerHash>>20 {
					return fmt.Errorf("%s must be a number of MiB, at least %d (one hash)", e.Name, admin.HashMemoryPerHash>>20)
				}
				c.LoginHashMemory = int64(mib) << 20
				return nil
			}},
		{"COFFER_LOGIN_HASH_WAIT", shortDuration(admin.DefaultHashWait), "how long a login waits for password hashing capacity before answering 503 UNAVAILABLE",
			positive(func(c *Config) *time.Duration { return &c.LoginHashWait })},
		{"COFFER_FAILPOINT", "", "testing only: exit the process at a step of sending a transaction (after-nonce, after-sign, after-store, after-broadcast, before-receipt); `coffer keys rotate-master` takes reseal-pause:N",
			failpoint},
		{"COFFER_LOG_LEVEL", "info", "debug, info, warn or error", func(c *Config, e Entry, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("%s must be debug, info, warn or error", e.Name)
			}
			return nil
		}},
		{"COFFER_LOG_FORMAT", "json", "json or text", func(c *Config, e Entry, v string) error {
			if c.LogFormat = v; v != "json" && v != "text" {
				return fmt.Errorf("%s must be json or text", e.Name)
			}
			return nil
		}},
	}
}

// EntryOf returns the entry of a variable.
func EntryOf(name string) (Entry, bool) {
	for _, e := range Entries() {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}
