// Package config reads `coffer serve`'s configuration from the environment.
package config

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
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
	// ChainsValidate is what `coffer serve` does at start-up when the chains file does not
	// match its RPC endpoints (COFFER_CHAINS_VALIDATE).
	ChainsValidate chain.VerifyMode
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
	// DevFaucetKey, set by `coffer dev` only (no environment variable sets it), is the dev
	// chain's faucet: POST /dev/pay pays deposit addresses from it, and the widget offers its
	// "Pay with the dev wallet" button. `coffer serve` never has one.
	DevFaucetKey *ecdsa.PrivateKey
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

// FromEnv reads the configuration; getenv is os.Getenv in production. It reads Entries (Read),
// then what `coffer serve` cannot run without: DATABASE_URL and the master key settings.
func FromEnv(getenv func(string) string) (Config, error) {
	c, errs := load(getenv)
	if c.DatabaseURL == "" {
		errs = append([]error{errors.New("DATABASE_URL is required")}, errs...)
	}
	if keys, err := custody.SourcesFromEnv(getenv); err != nil {
		errs = append(errs, err)
	} else {
		c.MasterKey, c.MasterKeyURL = keys.Primary.Key, keys.Primary.URL
		c.PreviousMasterKey, c.PreviousMasterKeyURL = keys.Previous.Key, keys.Previous.URL
	}
	if strings.TrimSpace(getenv("COFFER_WEBHOOK_ALLOW_PRIVATE")) != "" {
		errs = append(errs, errors.New("COFFER_WEBHOOK_ALLOW_PRIVATE is gone: set COFFER_WEBHOOK_ALLOW=private (or loopback)"))
	}
	return c, errors.Join(errs...)
}

// Read reads Entries alone, each variable checked, none required: for the CLI, which may
// find the database and the master key in a `coffer dev` data directory instead.
func Read(getenv func(string) string) (Config, error) {
	c, errs := load(getenv)
	return c, errors.Join(errs...)
}

// Defaults is the configuration of an empty environment: every entry at its default (no
// database, no master key). Code that needs a default (the CLI, tests, services given a zero
// value) takes it from here, so each default is written once, in Entries.
func Defaults() Config {
	c, errs := load(func(string) string { return "" })
	if len(errs) > 0 {
		panic(fmt.Sprintf("config: a default does not parse: %v", errors.Join(errs...)))
	}
	return c
}

// load walks Entries: each variable's value, else its default, parsed into its field.
func load(getenv func(string) string) (Config, []error) {
	var c Config
	var errs []error
	for _, e := range Entries() {
		if e.set == nil {
			continue
		}
		v := strings.TrimSpace(getenv(e.Name))
		if v == "" {
			v = e.Default
		}
		if err := e.set(&c, e, v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, checkWriteTimeout(c)...)
	}
	return c, errs
}

// answerRoom is how much longer than the longest wait a request makes the write timeout must
// be, for the answer to be written after the wait.
const answerRoom = 5 * time.Second

// checkWriteTimeout refuses a COFFER_HTTP_WRITE_TIMEOUT that cuts off the answer of a request
// waiting as long as it may: the deadline runs from the request's start, so an APPROVE waiting
// COFFER_SETTLE_WAIT for its payout would be carried out and its answer lost.
func checkWriteTimeout(c Config) []error {
	var errs []error
	for _, wait := range []struct {
		what string
		d    time.Duration
	}{
		{"COFFER_SETTLE_WAIT", c.SettleWait},
		{"the synchronous WITHDRAW_REQUEST", webhook.SyncWithdrawTimeout},
	} {
		if c.HTTPWriteTimeout < wait.d+answerRoom {
			errs = append(errs, fmt.Errorf("COFFER_HTTP_WRITE_TIMEOUT (%s) must be at least %s longer than %s (%s): "+
				"a request waiting that long would lose its answer", c.HTTPWriteTimeout, answerRoom, wait.what, wait.d))
		}
	}
	return errs
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
