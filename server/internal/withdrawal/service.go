package withdrawal

import (
	"context"
	"log/slog"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Wallet gives the service wallets' addresses (wallet.Public): payouts are signed by the
// engine, so the API role runs this service without keys.
type Wallet interface {
	HotWalletAddress() common.Address
	GasTankAddress() common.Address
}

// Webhooks sends WITHDRAW_REQUEST synchronously (mode A) and queues events in the outbox
// (webhook.Service).
type Webhooks interface {
	webhook.Outbox
	Send(ctx context.Context, operatorID string, e webhook.Event, timeout time.Duration) (webhook.Result, error)
}

// Config tunes withdrawals.
type Config struct {
	// TTL is how long a withdrawal may stay unactioned before it expires (24 h).
	TTL time.Duration
	// SyncTimeout bounds mode A's synchronous WITHDRAW_REQUEST (10 s).
	SyncTimeout time.Duration
	// SettleWait is how long a decision (APPROVE, admin COMPLETED) waits for its payout to
	// confirm before it answers with the status the withdrawal has then (20 s).
	SettleWait time.Duration
	// PayoutPoll is how often a payout in flight is looked at (1 s).
	PayoutPoll time.Duration
	// SweepInterval is how often expiry and session cancellations are applied (1 min).
	SweepInterval time.Duration
}

func (c *Config) defaults() {
	if c.TTL <= 0 {
		c.TTL = 24 * time.Hour
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = webhook.SyncWithdrawTimeout
	}
	if c.SettleWait <= 0 {
		c.SettleWait = 20 * time.Second
	}
	if c.PayoutPoll <= 0 {
		c.PayoutPoll = time.Second
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = time.Minute
	}
}

// Service is the withdrawal lifecycle: submission (both approval modes), decisions, the admin
// two-step, payouts, expiry.
type Service struct {
	pool     *pgxpool.Pool
	chains   chain.Connected
	engine   *chaintx.Engine
	wallet   Wallet
	prices   rates.Pricer
	webhooks Webhooks
	offramp  OffRamp
	river    *jobs.Inserter
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
}

// Deps are the service's collaborators.
type Deps struct {
	Pool     *pgxpool.Pool
	Chains   chain.Connected
	Engine   *chaintx.Engine
	Wallet   Wallet
	Prices   rates.Pricer // values assets and converts USD and fiat (rates.Chain)
	Webhooks Webhooks
	// OffRamp serves OFF_RAMP withdrawals; nil refuses them.
	OffRamp OffRamp
	River   *jobs.Inserter // required: bound to River once the client exists
	Log     *slog.Logger
}

// New returns the service.
func New(d Deps, cfg Config) *Service {
	if d.River == nil {
		panic("withdrawal: New without a job inserter (Deps.River)")
	}
	cfg.defaults()
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{pool: d.Pool, chains: d.Chains, engine: d.Engine, wallet: d.Wallet, prices: d.Prices,
		webhooks: d.Webhooks, offramp: d.OffRamp, river: d.River, cfg: cfg, log: d.Log.With("component", "withdrawal"), now: time.Now}
}

// SyncTimeout is how long mode A's synchronous WITHDRAW_REQUEST waits for the operator's
// answer; a test WITHDRAW_REQUEST waits as long.
func (s *Service) SyncTimeout() time.Duration { return s.cfg.SyncTimeout }
