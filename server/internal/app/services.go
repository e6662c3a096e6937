// Package app assembles a Coffer process from its configuration: the PostgreSQL pool, the
// service layer, River, and the HTTP server that carries the Connect services, the REST
// compatibility layer, health checks and metrics.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/depositor"
	"github.com/cofferhq/coffer/server/internal/devpay"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testwebhook"
	"github.com/cofferhq/coffer/server/internal/theme"
	"github.com/cofferhq/coffer/server/internal/wallet"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// Services is the service layer; the transports, the CLI and `coffer dev` share it.
type Services struct {
	pool        *pgxpool.Pool
	Operators   *operator.Service
	Admins      *admin.Service
	Sessions    *session.Service
	Depositors  *depositor.Service
	Themes      *theme.Service
	Chains      *chain.Registry
	Webhooks    *webhook.Service
	Deposits    *deposit.Service
	Engine      *chaintx.Engine
	Keys        *wallet.Keys   // the HD wallet's private half: nil unless built with WalletKeys (workers, all)
	Wallet      *wallet.Public // the HD wallet's public half: deposit and service wallet addresses
	Clients     map[int64]*chain.Client
	Prices      *rates.Chain
	Withdrawals *withdrawal.Service
	// OffRamp serves OFF_RAMP withdrawals (ServicesConfig.OffRamp); nil refuses them.
	OffRamp    withdrawal.OffRamp
	Funds      *funds.Ledger
	Reconciler *funds.Reconciler
	// Jobs is how the services insert River jobs: bound when the process's River client is
	// built (jobs.Options.Inserter), which needs the services first.
	Jobs *jobs.Inserter

	webhookRetries jobs.RetrySchedule
}

// WalletAccess is how much of the HD wallet a process holds.
type WalletAccess int

const (
	// WalletKeys: the seed and every private key, creating the wallet on an empty database
	// (workers and the all role).
	WalletKeys WalletAccess = iota
	// WalletPublic: public keys only, from the record workers store beside the seed (waited
	// for until a worker stores it); the engine refuses to sign (chaintx.NoKeys). The API role.
	WalletPublic
	// WalletPublicOrCreate: public keys only, but the wallet is created when the database has
	// none (the service team's CLI).
	WalletPublicOrCreate
)

// ServicesConfig is what the service layer needs beyond the pool and the master key.
type ServicesConfig struct {
	// Wallet is how much of the HD wallet the process holds (WalletKeys when zero).
	Wallet       WalletAccess
	Chains       *chain.Registry
	Sessions     session.Config
	Deposits     deposit.Config
	StaticPrices map[string]decimal.Decimal
	FiatRates    map[string]decimal.Decimal
	WebhookReach webhook.Reach
	// WebhookRetries: see config.Config.
	WebhookRetries jobs.RetrySchedule
	Withdrawals    withdrawal.Config
	// OffRamp: see config.Config.
	OffRamp string
	// Failpoint: see config.Config.
	Failpoint string
	// Admins: the login limits and the password hashing budget.
	Admins admin.Options
	Log    *slog.Logger
}

// NewServices builds the service layer on a pool. Its job inserter (Services.Jobs) is bound by
// the River client built next (New, InsertOnlyRiver).
func NewServices(ctx context.Context, pool *pgxpool.Pool, box *secret.Box, cfg ServicesConfig) (*Services, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	// Only a process that signs opens the seed; the others derive addresses from the xpub and
	// get an engine that cannot sign.
	var keys *wallet.Keys
	var public *wallet.Public
	var signer chaintx.Keys = chaintx.NoKeys{}
	var err error
	switch cfg.Wallet {
	case WalletKeys:
		if keys, err = wallet.Load(ctx, pool, box); err != nil {
			return nil, err
		}
		public, signer = keys.Public(), deposit.KeyRing{Keys: keys, Pool: pool}
	case WalletPublic:
		public, err = wallet.AwaitPublic(ctx, pool, box, cfg.Log, time.Second)
	case WalletPublicOrCreate:
		public, err = wallet.LoadPublicOrCreate(ctx, pool, box)
	default:
		err = fmt.Errorf("app: unknown wallet access %d", cfg.Wallet)
	}
	if err != nil {
		return nil, err
	}
	static, err := rates.NewStatic(cfg.StaticPrices, cfg.FiatRates)
	if err != nil {
		return nil, err
	}
	s := &Services{
		pool:           pool,
		webhookRetries: cfg.WebhookRetries,
		Operators:      operator.New(pool, box),
		Admins:         admin.New(pool, box, cfg.Admins),
		Depositors:     depositor.New(pool),
		Themes:         theme.New(pool),
		Chains:         cfg.Chains,
		Keys:           keys,
		Wallet:         public,
		Clients:        map[int64]*chain.Client{},
		Jobs:           jobs.NewInserter(),
	}
	var feeds []*rates.Aggregator
	for _, n := range cfg.Chains.Networks() {
		c := chain.Dial(n, cfg.Log)
		s.Clients[n.ChainID] = c
		if len(n.PriceFeeds) > 0 {
			bySymbol := map[string]common.Address{}
			for symbol, addr := range n.PriceFeeds {
				bySymbol[strings.ToUpper(symbol)] = addr
			}
			feeds = append(feeds, rates.NewAggregator(c, bySymbol, rates.AggregatorOptions{}))
		}
	}
	s.Prices = rates.NewChain(feeds, static)
	// Platform currencies are accepted only when priced (sessions and operators alike).
	s.Operators.SetCurrencies(s.Prices)
	sessions := cfg.Sessions
	sessions.Currencies = s.Prices
	// Cancelling a withdraw session cancels its open withdrawals in the same transaction.
	sessions.Cascade = withdrawal.SessionCascade(cfg.Log)
	s.Sessions = session.New(pool, sessions)
	s.Webhooks = webhook.New(pool, s.Operators, webhook.Options{
		Client: webhook.NewClient(webhook.ClientOptions{Reach: cfg.WebhookReach}), Log: cfg.Log, Jobs: s.Jobs})
	s.Engine = chaintx.New(pool, s.Clients, signer, cfg.Log)
	if fp := cfg.Failpoint; fp != "" {
		cfg.Log.Warn("failpoint armed: the process exits at this step of sending a transaction", "step", fp)
		s.Engine.Crash = func(step string) {
			if step == fp {
				cfg.Log.Error("failpoint reached: exiting", "step", step)
				os.Exit(FailpointExitCode)
			}
		}
	}
	s.Deposits = deposit.New(deposit.Deps{Pool: pool, Chains: chain.Connected{Registry: cfg.Chains, Clients: s.Clients}, Engine: s.Engine, Wallet: public,
		Prices: s.Prices, Webhooks: s.Webhooks, River: s.Jobs, Log: cfg.Log}, cfg.Deposits)
	if cfg.OffRamp == "dev" {
		s.OffRamp = &withdrawal.DevOffRamp{Log: cfg.Log}
	}
	s.Funds = funds.New(pool, cfg.Chains)
	s.Reconciler = &funds.Reconciler{Ledger: s.Funds, Clients: s.Clients, HotWallet: public.HotWalletAddress(), GasTank: public.GasTankAddress()}
	s.Withdrawals = withdrawal.New(withdrawal.Deps{Pool: pool, Chains: chain.Connected{Registry: cfg.Chains, Clients: s.Clients}, Engine: s.Engine, Wallet: public,
		Prices: s.Prices, Webhooks: s.Webhooks, OffRamp: s.OffRamp, River: s.Jobs, Log: cfg.Log}, cfg.Withdrawals)
	return s, nil
}

// FailpointExitCode is the exit status of a process stopped by its failpoint.
const FailpointExitCode = 86

// InsertOnlyRiver is a River client that only inserts jobs (the CLI's): a worker replica
// works them. It binds the services' job inserter.
func InsertOnlyRiver(pool *pgxpool.Pool, s *Services, log *slog.Logger) (*jobs.Client, error) {
	w, _ := s.workers(pool, log)
	return jobs.NewClient(pool, log, jobs.Options{Workers: w, Inserter: s.Jobs})
}

// Close closes the chain connections.
func (s *Services) Close() {
	for _, c := range s.Clients {
		c.Close()
	}
}

// workers lists every River worker and periodic job of Coffer: the one place to look.
func (s *Services) workers(pool *pgxpool.Pool, log *slog.Logger) (*river.Workers, []*river.PeriodicJob) {
	w := river.NewWorkers()
	river.AddWorker(w, &jobs.CleanupWorker{Pool: pool, Log: log})
	river.AddWorker(w, &webhook.DrainWorker{Service: s.Webhooks, Schedule: s.webhookRetries})
	river.AddWorker(w, &webhook.DeliverWorker{})
	repair := &webhook.RepairWorker{Service: s.Webhooks}
	river.AddWorker(w, repair)
	river.AddWorker(w, &deposit.ScanWorker{Service: s.Deposits})
	river.AddWorker(w, &deposit.SettleWorker{Service: s.Deposits})
	river.AddWorker(w, &withdrawal.PayoutWorker{Service: s.Withdrawals})
	river.AddWorker(w, &withdrawal.SweepWorker{Service: s.Withdrawals})
	reconcile := &funds.ReconcileWorker{Reconciler: s.Reconciler, Log: log}
	river.AddWorker(w, reconcile)
	periodic := append([]*river.PeriodicJob{jobs.CleanupPeriodic(), reconcile.Periodic(time.Minute),
		repair.Periodic(webhook.RepairEvery)}, s.Deposits.Periodic()...)
	return w, append(periodic, s.Withdrawals.Periodic()...)
}

// TestWebhooks sends test webhooks: the operators' own and the service team's onboarding tests.
func (s *Services) TestWebhooks() *testwebhook.Service {
	return &testwebhook.Service{Pool: s.pool, Sessions: s.Sessions, Chains: s.Chains, Prices: s.Prices,
		Webhooks: s.Webhooks, Withdrawals: s.Withdrawals}
}

// servers binds the Connect handlers to the services.
func (s *Services) servers() rpc.Servers {
	tests := s.TestWebhooks()
	return rpc.Servers{
		Session:   &rpc.SessionServer{Sessions: s.Sessions, Operators: s.Operators, TestWebhooks: tests},
		Depositor: &rpc.DepositorServer{Depositors: s.Depositors},
		Chain:     &rpc.ChainServer{Chains: s.Chains},
		Widget: &rpc.WidgetServer{Sessions: s.Sessions, Operators: s.Operators, Themes: s.Themes, Deposits: s.Deposits,
			Withdrawals: s.Withdrawals},
		Withdrawal: &rpc.WithdrawalServer{Withdrawals: s.Withdrawals, Operators: s.Operators},
		Admin: &rpc.AdminServer{Admins: s.Admins, Themes: s.Themes, Deposits: s.Deposits, Webhooks: s.Webhooks,
			Withdrawals: s.Withdrawals, Funds: s.Funds},
		Ops: &rpc.OpsServer{Operators: s.Operators, Admins: s.Admins, Deposits: s.Deposits, Webhooks: s.Webhooks,
			Funds: s.Funds, Reconciler: s.Reconciler, Withdrawals: s.Withdrawals, TestWebhooks: tests},
		Balance: &rpc.BalanceServer{Funds: s.Funds, Operators: s.Operators},
		Deposit: &rpc.DepositServer{Deposits: s.Deposits, Operators: s.Operators},
		Event:   &rpc.EventServer{Webhooks: s.Webhooks, Operators: s.Operators},
	}
}

// devWallet is `coffer dev`'s POST /dev/pay: it pays a deposit session's address from the dev
// faucet, as the widget's "Pay with the dev wallet" button asks. The sid authenticates, as on
// the widget's other calls.
func (a *App) devWallet() http.Handler {
	s := a.Services
	faucets := map[int64]*devpay.Faucet{}
	for _, n := range s.Chains.Networks() {
		faucets[n.ChainID] = devpay.New(a.Config.DevFaucetKey, n, s.Clients[n.ChainID])
	}
	return devpay.Handler(faucets, func(ctx context.Context, sid, currency string, chainID int64) (common.Address, error) {
		sess, err := s.Sessions.ForWidget(ctx, sid, session.Deposit)
		if err != nil {
			return common.Address{}, err
		}
		info, err := s.Deposits.Address(ctx, sess, currency, chainID)
		return info.Address, err
	}, a.Log)
}

// devWebhookReceiver is `coffer dev`'s /dev/webhook: it verifies and acknowledges the demo
// operator's webhooks.
func (s *Services) devWebhookReceiver(operatorID string, log *slog.Logger) http.Handler {
	return webhook.DevReceiver(func(ctx context.Context) [][]byte {
		keys, err := s.Operators.SigningKeys(ctx, operatorID)
		if err != nil {
			log.Warn("dev webhook receiver: signing keys", "error", err)
		}
		return keys
	}, log)
}
