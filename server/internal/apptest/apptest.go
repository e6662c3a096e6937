// Package apptest runs a real Coffer process (the same app, HTTP server and River client as
// `coffer serve`) on a fresh test database and a loopback port, for end-to-end tests of the
// transports. It also creates the operators, admins and sessions tests need.
package apptest

import (
	"context"
	"crypto/ecdsa"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/wallet"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Env is a running Coffer.
type Env struct {
	// URL is the API's base URL, e.g. http://127.0.0.1:41234.
	URL string
	// InternalURL is the internal listener's: /metrics, OpsService, gRPC reflection.
	InternalURL string
	App         *app.App
	Pool        *pgxpool.Pool
	Services    *app.Services
	OpsToken    string
	// MasterKey is the process's master key.
	MasterKey []byte
}

// Options adjust the process.
type Options struct {
	Role       string
	SessionTTL time.Duration
	// Chains default to TestChains, whose RPC URL nothing answers: scanning is then slowed to
	// once an hour. Give real chains (a devchain) and ScanInterval for pipeline tests.
	Chains       []chain.Network
	ScanInterval time.Duration
	// JobRescueAfter: see config.Config (2m when zero).
	JobRescueAfter time.Duration
	// WebhookRetries: see config.Config (DESIGN.md's schedule when nil).
	WebhookRetries jobs.RetrySchedule
	// HTTPReadTimeout: see config.Config (15 s when zero).
	HTTPReadTimeout time.Duration
	// TrustedProxyHeader: see config.Config; the test client on loopback is the trusted proxy.
	TrustedProxyHeader string
	// DatabaseURL is a migrated database of the test's own (a cluster it restarts, say); a
	// fresh database of the shared test cluster when empty.
	DatabaseURL string
	// MasterKey is the process's master key (a random one when nil): replicas of one database
	// share theirs.
	MasterKey []byte
	// DevFaucetKey makes the process `coffer dev`'s: POST /dev/pay pays from this faucet.
	DevFaucetKey *ecdsa.PrivateKey
	// Log receives the process's log (warnings and up on stderr when nil).
	Log *slog.Logger
}

// TestChains is the chain list of test processes: one network with two 6-decimal tokens.
// Nothing in the foundation contacts its RPC URL, and nothing listens there (port 9 on
// loopback, not 8545, where `make run`'s dev chain may be answering while tests run).
func TestChains() []chain.Network {
	return []chain.Network{{
		ChainID: 1337, Name: "Coffer Dev Chain", RPCURLs: []string{"http://127.0.0.1:9"}, Confirmations: 3,
		NativeSymbol: "ETH", NativeDecimals: 18,
		Tokens: []chain.Token{
			{Symbol: "USDT", ContractAddress: common.HexToAddress("0x00000000000000000000000000000000000000a1"), Decimals: 6},
			{Symbol: "USDC", ContractAddress: common.HexToAddress("0x00000000000000000000000000000000000000a2"), Decimals: 6},
		},
	}}
}

// StartAPI runs Coffer in the API role, for tests of the transports: they need no workers,
// and a test of the "all" role that ends before River has started fails in cleanup (app.Run
// returns "start River: ... context canceled").
func StartAPI(t testing.TB) *Env {
	t.Helper()
	return Start(t, Options{Role: config.RoleAPI})
}

// Start runs Coffer until the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Role == "" {
		opts.Role = config.RoleAll
	}
	if opts.Chains == nil {
		opts.Chains = TestChains()
		if opts.ScanInterval == 0 {
			opts.ScanInterval = time.Hour
		}
	}
	if opts.ScanInterval == 0 {
		opts.ScanInterval = 200 * time.Millisecond
	}
	registry, err := chain.NewRegistry(opts.Chains)
	if err != nil {
		t.Fatal(err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if opts.DatabaseURL == "" {
		opts.DatabaseURL = testdb.URL(t)
	}
	// The defaults of `coffer serve`, then what a test process changes.
	cfg := config.Defaults()
	cfg.DatabaseURL, cfg.Addr, cfg.BaseURL, cfg.WidgetURL = opts.DatabaseURL, ln.Addr().String(), base, base+"/widget"
	cfg.MasterKey, cfg.OpsToken, cfg.Chains, cfg.Role = opts.MasterKey, secret.Token("ops_"), registry, opts.Role
	if cfg.MasterKey == nil {
		cfg.MasterKey = secret.Random(secret.KeySize)
	}
	cfg.WebhookReach, cfg.StaticPrices, cfg.FiatRates = webhook.ReachLoopback, rates.DevUSD(), rates.DevPerUSD()
	cfg.ScanInterval, cfg.SettlePoll = opts.ScanInterval, opts.ScanInterval
	cfg.WebhookRetries, cfg.TrustedProxyHeader, cfg.DevFaucetKey = opts.WebhookRetries, opts.TrustedProxyHeader, opts.DevFaucetKey
	// Logins wait for hashing capacity as long as a test may take: test processes share a
	// loaded machine, and the 503 of a full budget is tested in package admin.
	cfg.LoginHashWait = time.Minute
	for dst, v := range map[*time.Duration]time.Duration{&cfg.SessionTTL: opts.SessionTTL, &cfg.JobRescueAfter: opts.JobRescueAfter,
		&cfg.HTTPReadTimeout: opts.HTTPReadTimeout} {
		if v != 0 {
			*dst = v
		}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if opts.Role == config.RoleAPI {
		// An API replica never creates the HD wallet: a worker has, as in production.
		CreateWallet(t, cfg.DatabaseURL, cfg.MasterKey)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	internal, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	a.InternalListener = internal
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app.Run: %v", err)
		}
	})
	env := &Env{URL: base, InternalURL: "http://" + internal.Addr().String(), App: a, Pool: a.Pool, Services: a.Services,
		OpsToken: cfg.OpsToken, MasterKey: cfg.MasterKey}
	env.waitReady(t)
	return env
}

// CreateWallet creates the HD wallet of a database, as the first worker does, and returns its
// keys.
func CreateWallet(t testing.TB, databaseURL string, masterKey []byte) *wallet.Keys {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, databaseURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	box, err := secret.NewBox(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := wallet.Load(ctx, pool, box)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// NewWallet is a fresh database of the shared test cluster with its HD wallet created, its
// master key and the wallet's keys: for a test that must know the service wallets before
// Coffer starts (a Sweeper is deployed for the gas tank and named in the chains file), which
// then starts Coffer on it (Options.DatabaseURL and MasterKey).
func NewWallet(t testing.TB) (databaseURL string, masterKey []byte, keys *wallet.Keys) {
	t.Helper()
	databaseURL, masterKey = testdb.URL(t), secret.Random(secret.KeySize)
	return databaseURL, masterKey, CreateWallet(t, databaseURL, masterKey)
}

func (e *Env) waitReady(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if !proctest.WaitOK(ctx, e.URL+"/healthz", 10*time.Millisecond) {
		t.Fatal("server not ready")
	}
}

// Operator creates an operator with the given settings (name and webhook URL defaulted) and
// returns it with its key.
func (e *Env) Operator(t testing.TB, s domain.OperatorSettings) (domain.Operator, string) {
	t.Helper()
	if s.Name == nil {
		name := "Operator " + uuid.NewString()[:8]
		s.Name = &name
	}
	if s.WebhookURL == nil {
		u := "https://operator.example/webhook"
		s.WebhookURL = &u
	}
	op, key, err := e.Services.Operators.Create(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return op, key
}

// Fund credits an operator's funds (a service-team adjustment), amount in token units.
func (e *Env) Fund(t testing.TB, operatorID string, chainID int64, currency, amount string) {
	t.Helper()
	if _, err := e.Services.Funds.Adjust(context.Background(), funds.Adjustment{OperatorID: operatorID, ChainID: chainID,
		Currency: currency, Amount: amount, Note: "test float", Actor: "test"}); err != nil {
		t.Fatal(err)
	}
}

// AdminPassword is the password of the admins Admin creates.
const AdminPassword = "correct horse battery staple"

// Admin creates an admin (service team when operatorID is "") and logs it in.
func (e *Env) Admin(t testing.TB, operatorID string) (domain.Admin, string) {
	t.Helper()
	ctx := context.Background()
	a, _, err := e.Services.Admins.Create(ctx, "admin-"+uuid.NewString()[:8]+"@coffer.test", AdminPassword, operatorID, false)
	if err != nil {
		t.Fatal(err)
	}
	token, _, _, err := e.Services.Admins.Login(ctx, admin.Credentials{Email: a.Email, Password: AdminPassword})
	if err != nil {
		t.Fatal(err)
	}
	return a, token
}

// InsertWithdrawal records w as it is given (id, status, and paying when PayoutQueuedAt is
// set), for tests that need a withdrawal in a state without the steps that lead there. Its
// session must exist. Nothing is queued: a paying withdrawal's payout job comes from the
// periodic sweep, as after a crash.
func (e *Env) InsertWithdrawal(t testing.TB, w domain.Withdrawal) domain.Withdrawal {
	t.Helper()
	ctx := context.Background()
	got, err := store.New(e.Pool).InsertWithdrawal(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if w.PayoutQueuedAt != nil {
		if _, err := e.Pool.Exec(ctx, `UPDATE withdrawals SET payout_queued_at = $2 WHERE id = $1`, w.ID, *w.PayoutQueuedAt); err != nil {
			t.Fatal(err)
		}
		got.PayoutQueuedAt = w.PayoutQueuedAt
	}
	return got
}

// SID is the session id a widget URL carries (its sid parameter).
func SID(t testing.TB, widgetURL string) string {
	t.Helper()
	u, err := url.Parse(widgetURL)
	if err != nil || u.Query().Get("sid") == "" {
		t.Fatalf("no sid in the widget URL %q", widgetURL)
	}
	return u.Query().Get("sid")
}

// ExpireSession moves a session's expiry into the past.
func (e *Env) ExpireSession(t testing.TB, sid string) {
	t.Helper()
	if _, err := e.Pool.Exec(context.Background(), `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, sid); err != nil {
		t.Fatal(err)
	}
}

// Count returns the number of rows of a table (tests check that bad input writes nothing).
func (e *Env) Count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := e.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Do sends a request with an optional Bearer credential and JSON body.
func (e *Env) Do(t testing.TB, method, path, bearer, body string) *http.Response {
	t.Helper()
	return proctest.Request(t, method, e.URL+path, bearer, body)
}

// InsertDeposit records d as detected, in d.Status (CONFIRMING when empty). When d.Amount is
// set, it is then confirmed and credited with d's amounts and rates, as the settle job does,
// and moved on to d.Status when that is not CREDITED (a reorg after the credit). Nothing is
// queued.
func (e *Env) InsertDeposit(t testing.TB, d domain.Deposit) domain.Deposit {
	t.Helper()
	ctx := context.Background()
	q := store.New(e.Pool)
	final := d.Status
	if final == "" || d.Amount != nil {
		d.Status = domain.DepositConfirming
	}
	got, _, err := q.UpsertDeposit(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if d.Amount == nil {
		return got
	}
	if err := q.ConfirmDeposit(ctx, got.ID); err != nil {
		t.Fatal(err)
	}
	if got, err = q.CreditDeposit(ctx, got.ID, store.Credit{FeeAmount: d.FeeAmount, Amount: d.Amount, USDPrice: d.USDPrice,
		FiatPerUSD: d.FiatPerUSD, FiatCurrency: d.FiatCurrency, AmountInDollar: d.AmountInDollar, AmountInLocal: d.AmountInLocal,
		FeeInDollar: d.FeeInDollar, Unpriced: d.Unpriced}); err != nil {
		t.Fatal(err)
	}
	if final != "" && final != domain.DepositCredited {
		if _, err := e.Pool.Exec(ctx, `UPDATE deposits SET status = $2 WHERE id = $1`, got.ID, string(final)); err != nil {
			t.Fatal(err)
		}
		got.Status = final
	}
	return got
}
