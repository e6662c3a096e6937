// Package config reads `coffer serve`'s configuration from the environment.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/custody"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Roles of a process.
const (
	RoleAPI    = "api"
	RoleWorker = "worker"
	RoleAll    = "all"
)

// Config is the whole configuration of a Coffer process.
type Config struct {
	DatabaseURL string
	MaxDBConns  int32
	// Addr is the listen address of the API (host:port).
	Addr string
	// InternalAddr is the listen address of /metrics, gRPC reflection and OpsService: the
	// service team's, never the internet's (loopback by default).
	InternalAddr string
	// BaseURL is the public address of the API; WidgetURL of the widget.
	BaseURL   string
	WidgetURL string
	OpsToken  string
	Chains    *chain.Registry
	// MasterKey is the master key given directly (COFFER_MASTER_KEY or COFFER_MASTER_KEY_FILE);
	// MasterKeyURL a KMS that unwraps the master keys stored in PostgreSQL
	// (COFFER_MASTER_KEY_URL). Exactly one is set.
	MasterKey    []byte
	MasterKeyURL string
	// PreviousMasterKey or PreviousMasterKeyURL is the master key a rotation moves away from:
	// values sealed under it still open, nothing new is sealed under it.
	PreviousMasterKey    []byte
	PreviousMasterKeyURL string
	// SessionTTL is the widget session lifetime.
	SessionTTL time.Duration
	Role       string
	// AutoMigrate runs migrations at start-up.
	AutoMigrate bool
	// WebhookReach is which addresses webhooks may reach (COFFER_WEBHOOK_ALLOW).
	WebhookReach webhook.Reach
	// WorkerConcurrency is River's workers on the default queue; WebhookConcurrency on the
	// webhooks queue (deliveries wait on receivers).
	WorkerConcurrency, WebhookConcurrency int
	// StaticPrices are USD prices of assets without an on-chain feed ("USDT" → 1).
	StaticPrices map[string]decimal.Decimal
	// FiatRates are units of each fiat currency per USD ("EUR" → 0.92); USD is always 1.
	FiatRates map[string]decimal.Decimal
	// ScanInterval is how often each chain is scanned for deposits; SettlePoll how often a
	// deposit waiting on the chain is looked at.
	ScanInterval, SettlePoll time.Duration
	// DevWebhookOperator, set by `coffer dev`, serves /dev/webhook for that operator.
	DevWebhookOperator string
	// WebhookRetries is the delay schedule between webhook delivery attempts; DESIGN.md's
	// (jobs.WebhookSchedule) when nil. Tests shorten it; there is no environment variable,
	// since the schedule is a contract with operators.
	WebhookRetries jobs.RetrySchedule
	// JobRescueAfter is how long a job may run before River runs it again, presuming its
	// process died (see jobs.Options.RescueAfter).
	JobRescueAfter time.Duration
	// WorkerDeadAfter is how long a worker whose liveness lock is gone may go without a
	// heartbeat before the other workers rescue its running jobs (liveness.Options.Grace).
	WorkerDeadAfter time.Duration
	// SettleWait is how long a withdrawal decision (APPROVE, admin COMPLETED) waits for its
	// payout to confirm before it answers.
	SettleWait time.Duration
	// HTTPReadTimeout bounds the arrival of a request's body; HTTPWriteTimeout the writing of
	// an answer (streams excepted).
	HTTPReadTimeout, HTTPWriteTimeout time.Duration
	// RateWait is how long a swept deposit waits for a rate source that cannot be read before
	// its DEPOSIT goes out with null USD/local values (see deposit.Config.RateWait).
	RateWait time.Duration
	// OffRamp names the off-ramp provider of OFF_RAMP withdrawals: "" (none: refused) or
	// "dev" (`coffer dev`'s provider, which collects on the dev chain; never in production).
	OffRamp string
	// TrustedProxyHeader is the header (X-Forwarded-For, X-Real-IP, Forwarded) in which the
	// reverse proxies of TrustedProxies pass the client's address; empty: the connection's peer
	// is the client, and no header is ever read (see clientip).
	TrustedProxyHeader string
	TrustedProxies     []netip.Prefix
	// LoginHashMemory (bytes) bounds the password hashes running at once; LoginHashWait is how
	// long a login waits for room (see admin.Options).
	LoginHashMemory int64
	LoginHashWait   time.Duration
	// Failpoint (testing only) makes the process exit at a step of sending a transaction
	// (chaintx.Step*), to prove crash safety with a real process kill.
	Failpoint string
	LogLevel  slog.Level
	LogFormat string // json or text
}

// Env documents every variable FromEnv reads, for the README and --help.
var Env = []struct{ Name, Default, Help string }{
	{"DATABASE_URL", "", "PostgreSQL URL (required)"},
	{"COFFER_DB_MAX_CONNS", "20", "pool size per process"},
	{"COFFER_ADDR", ":8080", "listen address"},
	{"COFFER_INTERNAL_ADDR", "127.0.0.1:9090", "internal listen address: /metrics, gRPC reflection, OpsService (keep it off the internet)"},
	{"COFFER_BASE_URL", "http://localhost:8080", "public base URL of the API"},
	{"COFFER_WIDGET_URL", "$COFFER_BASE_URL/widget", "public URL of the widget"},
	{"COFFER_MASTER_KEY", "", "32-byte master key (hex or base64) sealing operator keys, TOTP secrets and the HD wallet; exactly one of COFFER_MASTER_KEY, COFFER_MASTER_KEY_FILE and COFFER_MASTER_KEY_URL is required"},
	{"COFFER_MASTER_KEY_FILE", "", "file holding the master key (hex, base64 or 32 raw bytes), e.g. a mounted secret"},
	{"COFFER_MASTER_KEY_URL", "", "KMS that wraps the master key, stored in PostgreSQL: awskms://…, gcpkms://…, azurekeyvault://…, hashivault://… (gocloud.dev/secrets URL)"},
	{"COFFER_MASTER_KEY_PREVIOUS", "", "during a master key rotation only: the old master key (hex or base64), still accepted for opening; or _PREVIOUS_FILE / _PREVIOUS_URL"},
	{"COFFER_OPS_TOKEN", "", "Bearer token of the internal OpsService; OpsService refuses every call when empty"},
	{"COFFER_CHAINS_FILE", "", "JSON chains file; no chains when empty"},
	{"COFFER_SESSION_TTL", "30m", "widget session lifetime"},
	{"COFFER_ROLE", "all", "api, worker or all (overridden by --role)"},
	{"COFFER_AUTO_MIGRATE", "false", "run migrations at start-up"},
	{"COFFER_WEBHOOK_ALLOW", "public", "webhook targets: public, loopback (+127.0.0.0/8, ::1) or private (+RFC 1918, CGNAT, ULA); never link-local"},
	{"COFFER_WORKER_CONCURRENCY", "20", "River workers of the default queue (scans, sweeps, payouts, expiry)"},
	{"COFFER_WEBHOOK_CONCURRENCY", "100", "River workers of the webhooks queue (deliveries wait on receivers)"},
	{"COFFER_SCAN_INTERVAL", "1s", "how often each chain is scanned for deposits"},
	{"COFFER_STATIC_PRICES", "", "USD prices of assets without a price feed in the chains file, e.g. USDT=1,USDC=1"},
	{"COFFER_FIAT_RATES", "", "units of each platform fiat currency per USD, e.g. EUR=0.92,GBP=0.79 (USD is always 1)"},
	{"COFFER_JOB_RESCUE_AFTER", "2m", "how long a background job may run before it is presumed lost and run again, when its worker still looks alive (a backstop: see COFFER_WORKER_DEAD_AFTER)"},
	{"COFFER_WORKER_DEAD_AFTER", "3s", "how long a worker whose connection to PostgreSQL is gone may miss its heartbeat before other workers run its jobs again"},
	{"COFFER_SETTLE_WAIT", "20s", "how long a withdrawal decision waits for its payout to confirm before answering"},
	{"COFFER_HTTP_READ_TIMEOUT", "15s", "how long a request's body may take to arrive (headers: 5 s)"},
	{"COFFER_HTTP_WRITE_TIMEOUT", "60s", "how long an answer may take to be written (streams excepted)"},
	{"COFFER_RATE_WAIT", "10m", "how long a swept deposit waits for an unreadable rate before its DEPOSIT goes out with null values"},
	{"COFFER_OFFRAMP", "", "off-ramp provider of OFF_RAMP withdrawals: empty (refused) or dev (dev chain only)"},
	{"COFFER_TRUSTED_PROXY_HEADER", "", "header in which trusted reverse proxies pass the client address (X-Forwarded-For, X-Real-IP or Forwarded); empty: never read, the connection's address is the client"},
	{"COFFER_TRUSTED_PROXIES", "loopback and private networks", "comma-separated addresses or CIDRs of the proxies whose COFFER_TRUSTED_PROXY_HEADER is believed"},
	{"COFFER_LOGIN_HASH_MEMORY", strconv.Itoa(admin.DefaultHashMemory >> 20), "MiB that admin password hashes (argon2id, 19 MiB each) may hold at once; logins beyond wait, then answer 503"},
	{"COFFER_LOGIN_HASH_WAIT", admin.DefaultHashWait.String(), "how long a login waits for password hashing capacity before answering 503 UNAVAILABLE"},
	{"COFFER_FAILPOINT", "", "testing only: exit the process at a step of sending a transaction (after-nonce, after-sign, after-store, after-broadcast, before-receipt); `coffer keys rotate-master` takes reseal-pause:N"},
	{"COFFER_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"COFFER_LOG_FORMAT", "json", "json or text"},
}

// FromEnv reads the configuration; getenv is os.Getenv in production.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	c := Config{
		DatabaseURL:  get("DATABASE_URL", ""),
		Addr:         get("COFFER_ADDR", ":8080"),
		InternalAddr: get("COFFER_INTERNAL_ADDR", "127.0.0.1:9090"),
		BaseURL:      strings.TrimRight(get("COFFER_BASE_URL", "http://localhost:8080"), "/"),
		OpsToken:     get("COFFER_OPS_TOKEN", ""),
		Failpoint:    get("COFFER_FAILPOINT", ""),
		Role:         get("COFFER_ROLE", RoleAll),
		LogFormat:    get("COFFER_LOG_FORMAT", "json"),
	}
	c.WidgetURL = strings.TrimRight(get("COFFER_WIDGET_URL", c.BaseURL+"/widget"), "/")
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is required"))
	}
	if keys, err := custody.SourcesFromEnv(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.MasterKey, c.MasterKeyURL = keys.Primary.Key, keys.Primary.URL
		c.PreviousMasterKey, c.PreviousMasterKeyURL = keys.Previous.Key, keys.Previous.URL
	}
	if path := get("COFFER_CHAINS_FILE", ""); path != "" {
		r, err := chain.LoadFile(path)
		if err != nil {
			errs = append(errs, err)
		}
		c.Chains = r
	} else {
		c.Chains, _ = chain.NewRegistry(nil)
	}
	var err error
	if c.SessionTTL, err = time.ParseDuration(get("COFFER_SESSION_TTL", "30m")); err != nil || c.SessionTTL <= 0 {
		errs = append(errs, errors.New("COFFER_SESSION_TTL must be a positive duration such as 30m"))
	}
	if c.ScanInterval, err = time.ParseDuration(get("COFFER_SCAN_INTERVAL", "1s")); err != nil || c.ScanInterval <= 0 {
		errs = append(errs, errors.New("COFFER_SCAN_INTERVAL must be a positive duration such as 1s"))
	}
	c.SettlePoll = c.ScanInterval
	if c.JobRescueAfter, err = time.ParseDuration(get("COFFER_JOB_RESCUE_AFTER", "2m")); err != nil || c.JobRescueAfter < 2*time.Second {
		errs = append(errs, errors.New("COFFER_JOB_RESCUE_AFTER must be a duration of at least 2s"))
	}
	if c.WorkerDeadAfter, err = time.ParseDuration(get("COFFER_WORKER_DEAD_AFTER", "3s")); err != nil || c.WorkerDeadAfter < time.Second {
		errs = append(errs, errors.New("COFFER_WORKER_DEAD_AFTER must be a duration of at least 1s"))
	}
	if c.SettleWait, err = time.ParseDuration(get("COFFER_SETTLE_WAIT", "20s")); err != nil || c.SettleWait <= 0 {
		errs = append(errs, errors.New("COFFER_SETTLE_WAIT must be a positive duration such as 20s"))
	}
	if c.HTTPReadTimeout, err = time.ParseDuration(get("COFFER_HTTP_READ_TIMEOUT", "15s")); err != nil || c.HTTPReadTimeout <= 0 {
		errs = append(errs, errors.New("COFFER_HTTP_READ_TIMEOUT must be a positive duration such as 15s"))
	}
	if c.HTTPWriteTimeout, err = time.ParseDuration(get("COFFER_HTTP_WRITE_TIMEOUT", "60s")); err != nil || c.HTTPWriteTimeout <= 0 {
		errs = append(errs, errors.New("COFFER_HTTP_WRITE_TIMEOUT must be a positive duration such as 60s"))
	}
	if c.RateWait, err = time.ParseDuration(get("COFFER_RATE_WAIT", "10m")); err != nil || c.RateWait <= 0 {
		errs = append(errs, errors.New("COFFER_RATE_WAIT must be a positive duration such as 10m"))
	}
	if c.OffRamp = get("COFFER_OFFRAMP", ""); c.OffRamp != "" && c.OffRamp != "dev" {
		errs = append(errs, errors.New("COFFER_OFFRAMP must be empty or dev"))
	}
	if c.TrustedProxyHeader = get("COFFER_TRUSTED_PROXY_HEADER", ""); c.TrustedProxyHeader != "" {
		if strings.ContainsAny(c.TrustedProxyHeader, " \t:,;") {
			errs = append(errs, errors.New("COFFER_TRUSTED_PROXY_HEADER must be a header name such as X-Forwarded-For"))
		}
		c.TrustedProxyHeader = http.CanonicalHeaderKey(c.TrustedProxyHeader)
	}
	c.TrustedProxies = clientip.DefaultTrusted
	if raw := get("COFFER_TRUSTED_PROXIES", ""); raw != "" {
		if c.TrustedProxies, err = clientip.ParsePrefixes(raw); err != nil {
			errs = append(errs, fmt.Errorf("COFFER_TRUSTED_PROXIES: %w", err))
		}
	}
	if mib, err := strconv.Atoi(get("COFFER_LOGIN_HASH_MEMORY", strconv.Itoa(admin.DefaultHashMemory>>20))); err != nil || mib < admin.HashMemoryPerHash>>20 {
		errs = append(errs, fmt.Errorf("COFFER_LOGIN_HASH_MEMORY must be a number of MiB, at least %d (one hash)", admin.HashMemoryPerHash>>20))
	} else {
		c.LoginHashMemory = int64(mib) << 20
	}
	if c.LoginHashWait, err = time.ParseDuration(get("COFFER_LOGIN_HASH_WAIT", admin.DefaultHashWait.String())); err != nil || c.LoginHashWait <= 0 {
		errs = append(errs, errors.New("COFFER_LOGIN_HASH_WAIT must be a positive duration such as 2s"))
	}
	if err := CheckRole(c.Role); err != nil {
		errs = append(errs, err)
	}
	n, err := strconv.Atoi(get("COFFER_DB_MAX_CONNS", "20"))
	if err != nil || n < 2 {
		errs = append(errs, errors.New("COFFER_DB_MAX_CONNS must be an integer >= 2"))
	}
	c.MaxDBConns = int32(n)
	if c.WebhookConcurrency, err = strconv.Atoi(get("COFFER_WEBHOOK_CONCURRENCY", "100")); err != nil || c.WebhookConcurrency < 1 {
		errs = append(errs, errors.New("COFFER_WEBHOOK_CONCURRENCY must be a positive integer"))
	}
	if c.WorkerConcurrency, err = strconv.Atoi(get("COFFER_WORKER_CONCURRENCY", "20")); err != nil || c.WorkerConcurrency < 1 {
		errs = append(errs, errors.New("COFFER_WORKER_CONCURRENCY must be a positive integer"))
	}
	if c.WebhookReach, err = webhook.ParseReach(get("COFFER_WEBHOOK_ALLOW", "public")); err != nil {
		errs = append(errs, fmt.Errorf("COFFER_WEBHOOK_ALLOW: %w", err))
	}
	if get("COFFER_WEBHOOK_ALLOW_PRIVATE", "") != "" {
		errs = append(errs, errors.New("COFFER_WEBHOOK_ALLOW_PRIVATE is gone: set COFFER_WEBHOOK_ALLOW=private (or loopback)"))
	}
	for name, dst := range map[string]*bool{"COFFER_AUTO_MIGRATE": &c.AutoMigrate} {
		if *dst, err = strconv.ParseBool(get(name, "false")); err != nil {
			errs = append(errs, fmt.Errorf("%s must be true or false", name))
		}
	}
	for name, dst := range map[string]*map[string]decimal.Decimal{"COFFER_STATIC_PRICES": &c.StaticPrices, "COFFER_FIAT_RATES": &c.FiatRates} {
		if *dst, err = ParseRates(get(name, "")); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("COFFER_LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, errors.New("COFFER_LOG_LEVEL must be debug, info, warn or error"))
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, errors.New("COFFER_LOG_FORMAT must be json or text"))
	}
	return c, errors.Join(errs...)
}

// ParseRates reads "EUR=0.92,GBP=0.79" into a table of positive decimals.
func ParseRates(raw string) (map[string]decimal.Decimal, error) {
	out := map[string]decimal.Decimal{}
	for _, pair := range strings.Split(raw, ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		d, err := decimal.NewFromString(strings.TrimSpace(v))
		if !ok || strings.TrimSpace(k) == "" || err != nil || !d.IsPositive() {
			return nil, fmt.Errorf("%q: want SYMBOL=positive decimal", pair)
		}
		out[strings.ToUpper(strings.TrimSpace(k))] = d
	}
	return out, nil
}

// CheckRole validates a role name.
func CheckRole(role string) error {
	switch role {
	case RoleAPI, RoleWorker, RoleAll:
		return nil
	}
	return fmt.Errorf("role %q: must be api, worker or all", role)
}

// MasterKeys are the master key sources of the configuration.
func (c Config) MasterKeys() custody.Sources {
	return custody.Sources{Primary: custody.Source{Key: c.MasterKey, URL: c.MasterKeyURL},
		Previous: custody.Source{Key: c.PreviousMasterKey, URL: c.PreviousMasterKeyURL}}
}

// Logger builds the process logger.
func (c Config) Logger() *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}
