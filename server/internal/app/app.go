package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/custody"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devpay"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/legacy"
	"github.com/cofferhq/coffer/server/internal/liveness"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/tracing"
	"github.com/cofferhq/coffer/server/internal/webui"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// App is one Coffer process.
type App struct {
	Config   config.Config
	Log      *slog.Logger
	Pool     *pgxpool.Pool
	Services *Services
	River    *jobs.Client
	Metrics  *metrics.Metrics

	box      *secret.Box
	handler  http.Handler
	internal http.Handler
	schemaOK atomic.Bool
	// draining closes when the HTTP servers start shutting down: event streams end then.
	draining  chan struct{}
	drainOnce sync.Once

	// InternalListener, when set before Run, serves the internal handler; otherwise Run
	// listens on Config.InternalAddr.
	InternalListener net.Listener
}

// New connects to PostgreSQL (migrating when configured) and assembles the process.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	// Every line logged while serving a request carries its request id.
	log = slog.New(tracing.LogHandler(log.Handler()))
	pool, err := store.Open(ctx, cfg.DatabaseURL, cfg.MaxDBConns)
	if err != nil {
		return nil, err
	}
	if cfg.AutoMigrate {
		applied, err := store.Migrate(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("migrate: %w", err)
		}
		for _, m := range applied {
			log.Info("migration applied", "migration", m)
		}
	}
	if err := awaitSchema(ctx, store.New(pool), log, time.Second); err != nil {
		pool.Close()
		return nil, err
	}
	box, err := custody.OpenBox(ctx, pool, cfg.MasterKeys())
	if err != nil {
		pool.Close()
		return nil, err
	}
	if keys := cfg.MasterKeys(); !keys.Previous.IsZero() && len(box.KeyIDs()) == 1 {
		log.Warn("the previous master key setting gives no key other than the master key (a finished rotation deleted it?): remove it")
	}
	// The internet-facing API role never opens the HD seed: it derives addresses from the
	// wallet's public record and its engine cannot sign.
	access := WalletKeys
	if cfg.Role == config.RoleAPI {
		access = WalletPublic
	}
	services, err := NewServices(ctx, pool, box, ServicesConfig{
		Wallet:         access,
		Chains:         cfg.Chains,
		Sessions:       session.Config{TTL: cfg.SessionTTL, WidgetURL: cfg.WidgetURL},
		Deposits:       deposit.Config{ScanInterval: cfg.ScanInterval, SettlePoll: cfg.SettlePoll, RateWait: cfg.RateWait},
		StaticPrices:   cfg.StaticPrices,
		FiatRates:      cfg.FiatRates,
		WebhookReach:   cfg.WebhookReach,
		WebhookRetries: cfg.WebhookRetries,
		Withdrawals:    withdrawal.Config{SettleWait: cfg.SettleWait, PayoutPoll: cfg.SettlePoll},
		OffRamp:        cfg.OffRamp,
		Failpoint:      cfg.Failpoint,
		Admins:         admin.Options{HashMemory: cfg.LoginHashMemory, HashWait: cfg.LoginHashWait},
		Log:            log,
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	a := &App{Config: cfg, Log: log, Pool: pool, Metrics: metrics.New(), Services: services, box: box}
	a.Metrics.CollectPayouts(services.Withdrawals.PauseLabels)
	if cfg.Role != config.RoleAPI {
		// Gauges read from PostgreSQL are the same from every process: workers export them,
		// API replicas (often many) do not repeat the queries.
		a.Metrics.CollectDB(&metrics.DBCollector{Pool: pool, Log: log, Wallets: map[string]string{
			strings.ToLower(services.Wallet.GasTankAddress().Hex()):   "gas_tank",
			strings.ToLower(services.Wallet.HotWalletAddress().Hex()): "hot_wallet",
		}})
		// The service wallets the team must keep funded on every chain.
		log.Info("service wallets", "gas_tank", services.Wallet.GasTankAddress().Hex(), "hot_wallet", services.Wallet.HotWalletAddress().Hex())
	}
	w, periodic := services.workers(pool, log)
	a.River, err = jobs.NewClient(pool, log, jobs.Options{
		Work: cfg.Role != config.RoleAPI, Concurrency: cfg.WorkerConcurrency, WebhookConcurrency: cfg.WebhookConcurrency,
		Workers: w, Periodic: periodic,
		RescueAfter: cfg.JobRescueAfter, PollInterval: pollInterval(cfg), Inserter: services.Jobs})
	if err != nil {
		services.Close()
		pool.Close()
		return nil, fmt.Errorf("river: %w", err)
	}
	a.handler, a.internal = a.routes()
	return a, nil
}

// startWorkers starts River's workers and queues a first scan of every chain, which River's
// periodic scans would start only after its leader election (deposit.Service.ScanNow).
func (a *App) startWorkers(ctx context.Context) error {
	if err := a.River.Start(ctx); err != nil {
		return err
	}
	a.Log.Info("workers started", "concurrency", a.Config.WorkerConcurrency)
	if err := a.Services.Deposits.ScanNow(ctx); err != nil {
		a.Log.Warn("queue the first scans (the periodic ones follow)", "error", err)
	}
	return nil
}

// Handler is the HTTP handler of the API role.
func (a *App) Handler() http.Handler { return a.handler }

// InternalHandler is the HTTP handler of the internal listener.
func (a *App) InternalHandler() http.Handler { return a.internal }

// routes builds the public handler (the spec's REST paths, the Connect services of operators,
// users and admins, the widget and panel, health) and the internal one (/metrics, OpsService,
// gRPC reflection, health), which the public listener answers 404 for.
func (a *App) routes() (public, internal http.Handler) {
	authn := &rpc.Authenticator{Operators: a.Services.Operators, Admins: a.Services.Admins, OpsToken: a.Config.OpsToken}
	servers := a.Services.servers()
	a.draining = make(chan struct{})
	servers.Event.Draining = a.draining
	health := func(mux *http.ServeMux) {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"ok"}` + "\n")) //nolint:errcheck
		})
		mux.HandleFunc("GET /readyz", a.ready)
	}
	in := http.NewServeMux()
	rpc.MountInternal(in, servers, authn, a.Metrics, a.Log)
	in.Handle("GET /metrics", a.Metrics.Handler())
	health(in)
	mux := http.NewServeMux()
	if a.Config.DevFaucetKey != nil {
		servers.Widget.DevWallet = true
		mux.Handle("POST "+devpay.Path, a.devWallet())
	}
	rpc.Mount(mux, servers, authn, a.Metrics, a.Log)
	legacy.Mount(mux, servers, authn, a.Metrics, a.Log)
	health(mux)
	webui.Mount(mux, a.Config.WidgetURL, a.Config.BaseURL)
	if a.Config.DevWebhookOperator != "" {
		mux.Handle("POST /dev/webhook", a.Services.devWebhookReceiver(a.Config.DevWebhookOperator, a.Log))
	}
	// Every request knows its client's address (per-client login limits).
	clients := &clientip.Resolver{Header: a.Config.TrustedProxyHeader, Trusted: a.Config.TrustedProxies}
	api := legacy.ExactPaths(widgetCORS(mux), a.Metrics, a.Log)
	return securityHeaders(clients.Middleware(tracing.Middleware(a.Log, api))), securityHeaders(tracing.Middleware(a.Log, in))
}

// ready answers 200 when PostgreSQL answers and the schema is migrated, else 503.
// awaitSchema waits, polling every poll, until the schema has this binary's migrations: a
// release's replicas may start before its `coffer migrate` has run (the Kubernetes Job runs
// beside them), and one that went on would run its jobs against tables and columns not there
// yet. Nothing is served or run meanwhile; the log says why every 30 s. ctx's end returns the
// reason.
func awaitSchema(ctx context.Context, q *store.Queries, log *slog.Logger, poll time.Duration) error {
	const remindEvery = 30 * time.Second
	var lastSaid time.Time
	for {
		err := q.CheckMigrated(ctx)
		if err == nil {
			return nil
		}
		if time.Since(lastSaid) >= remindEvery {
			log.Warn("waiting for the database schema: nothing runs until it is migrated", "error", err)
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(poll):
		}
	}
}

func (a *App) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	w.Header().Set("Content-Type", "application/json")
	fail := func(reason string) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"status":"unavailable","reason":%q}`+"\n", reason)
	}
	if err := a.Pool.Ping(ctx); err != nil {
		fail("database unreachable")
		return
	}
	if !a.schemaOK.Load() {
		if ok, err := store.New(a.Pool).SchemaMigrated(ctx); err != nil || !ok {
			fail("database schema is not migrated: run `coffer migrate`")
			return
		}
		a.schemaOK.Store(true)
	}
	w.Write([]byte(`{"status":"ok"}` + "\n")) //nolint:errcheck
}

func widgetCORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !isWidgetPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Retry-After, X-Request-ID")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Content-Type, Connect-Protocol-Version, Connect-Timeout-Ms, X-User-Agent, X-Grpc-Web, Grpc-Timeout")
			h.Set("Access-Control-Max-Age", "7200")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isWidgetPath: the widget may be served from another origin (a CDN, the operator's
// domain) and calls these sid-authenticated or public operations with Connect-Web. They carry
// no cookies, so any origin may call them; operator, admin and ops endpoints get no CORS.
func isWidgetPath(p string) bool {
	widgetPaths := [...]string{"/coffer.v1.WidgetService/", "/coffer.v1.ChainService/", "/chain", "/depositor/address", "/withdraw/direct-transfer", devpay.Path}
	for _, prefix := range widgetPaths {
		if p == prefix || (strings.HasSuffix(prefix, "/") && strings.HasPrefix(p, prefix)) {
			return true
		}
	}
	return false
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// Listen binds the API address (host:port; port 0 picks a free one).
func (a *App) Listen(ctx context.Context) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", a.Config.Addr)
}

// listenInternal is the internal listener: the one given, else one bound to InternalAddr,
// else none (nil).
func (a *App) listenInternal(ctx context.Context) (net.Listener, error) {
	if a.InternalListener != nil || a.Config.InternalAddr == "" {
		return a.InternalListener, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", a.Config.InternalAddr)
	if err != nil {
		return nil, fmt.Errorf("internal listener on %s: %w", a.Config.InternalAddr, err)
	}
	return ln, nil
}

// Run serves until ctx ends, then shuts down gracefully: the HTTP server stops taking
// requests and drains, River finishes running jobs, and the pool closes. ln is the API
// listener (nil for a worker-only process).
func (a *App) Run(ctx context.Context, ln net.Listener) error {
	// Recorded while running, so a master key rotation can tell whether every process holds
	// the new key.
	holderCtx, stopHolder := context.WithCancel(context.WithoutCancel(ctx))
	holderDone, err := custody.Announce(holderCtx, a.Pool, a.box, a.Config.Role, a.Log)
	if err != nil {
		stopHolder()
		a.Services.Close()
		a.Pool.Close()
		return fmt.Errorf("record this process's master keys: %w", err)
	}
	// Traces go out over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set.
	stopTracing, err := tracing.Setup(ctx, a.Config.Role)
	if err != nil {
		stopHolder()
		<-holderDone
		a.Services.Close()
		a.Pool.Close()
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			a.Log.Warn("flush traces", "error", err)
		}
	}()
	errc := make(chan error, 2)
	serve := func(what string, l net.Listener, h http.Handler) *http.Server {
		protocols := new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true) // gRPC without TLS (h2c)
		srv := &http.Server{Handler: limitRequests(h, a.Config.HTTPReadTimeout, a.Config.HTTPWriteTimeout),
			Protocols: protocols, ReadHeaderTimeout: ReadHeaderTimeout, IdleTimeout: IdleTimeout, MaxHeaderBytes: MaxHeaderBytes,
			ErrorLog: slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn)}
		srv.RegisterOnShutdown(func() { a.drainOnce.Do(func() { close(a.draining) }) })
		go func() {
			a.Log.Info(what+" listening", "addr", l.Addr().String(), "role", a.Config.Role)
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		return srv
	}
	var srv, internal *http.Server
	if ln != nil {
		srv = serve("API", ln, a.handler)
	}
	iln, err := a.listenInternal(ctx)
	if err != nil {
		if srv != nil {
			srv.Close()
		}
		stopHolder()
		<-holderDone
		a.Services.Close()
		a.Pool.Close()
		return err
	}
	if iln != nil {
		internal = serve("internal (metrics, ops, reflection)", iln, a.internal)
	}
	var runErr error
	workers := a.Config.Role != config.RoleAPI
	var member *liveness.Member
	if workers {
		// Before River starts and stopped after it: running jobs always have a live member.
		//nolint:contextcheck // the member outlives ctx: it is stopped after River, once ctx has ended
		member = liveness.Start(a.Pool, liveness.Options{ClientID: a.River.ID(), Grace: a.Config.WorkerDeadAfter, Log: a.Log})
		go a.loadWatched(ctx)
		if err := a.startWorkers(ctx); err != nil {
			workers = false
			if ctx.Err() == nil {
				runErr = fmt.Errorf("start River: %w", err)
			}
		}
	}
	if runErr == nil {
		select {
		case <-ctx.Done():
		case runErr = <-errc:
		}
	}
	a.Log.Info("shutting down")
	// ctx has ended: the shutdown gets its own deadline, keeping ctx's values.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, s := range []*http.Server{srv, internal} {
		if s == nil {
			continue
		}
		if err := s.Shutdown(shutdownCtx); err != nil {
			a.Log.Warn("HTTP shutdown", "error", err)
		}
	}
	if workers {
		if err := a.River.Stop(shutdownCtx); err != nil {
			a.Log.Warn("River shutdown", "error", err)
		}
	}
	if member != nil {
		member.Stop()
	}
	stopHolder()
	<-holderDone
	a.Services.Close()
	a.Pool.Close()
	return runErr
}

// loadWatched loads the deposit addresses a worker watches, beside River's start: the first
// scan waits for them, nothing else does.
func (a *App) loadWatched(ctx context.Context) {
	if err := a.Services.Deposits.Load(ctx); err != nil && ctx.Err() == nil {
		a.Log.Warn("load the watched addresses (the first scan retries)", "error", err)
	}
}

// pollInterval is how often River looks for jobs that became due without an insert (snoozed
// ones): as often as deposits are looked at, so a sweep's receipt is seen within a poll of it
// being mined; River's 1 s default when that is slower.
func pollInterval(cfg config.Config) time.Duration {
	if cfg.SettlePoll <= 0 {
		return 0
	}
	return min(cfg.SettlePoll, time.Second)
}
