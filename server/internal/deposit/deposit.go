// Package deposit turns on-chain payments into credited deposits: it assigns deposit
// addresses, scans each chain (reorg-safe), waits for the confirmation depth, sweeps the funds
// to the operator's bankroll, and queues exactly one signed DEPOSIT webhook per transfer in the
// same transaction that credits it. Missed transfers can be replayed by hash.
//
// A deposit moves CONFIRMING → SWEEPING → CREDITED; a confirmed deposit below its asset's
// minimum waits as BELOW_MINIMUM until the address's unswept balance of the asset reaches the
// minimum (then SWEEPING → CREDITED); a deposit whose block leaves the chain before
// confirmation becomes ORPHANED (and CONFIRMING again if a new block includes it); one whose
// block leaves the chain after confirmation (a reorg deeper than the depth) becomes REORGED
// until it is mined again or an engineer resolves it (reorg.go). Deposits of one address are
// swept together (sweep.go). UNSWEEPABLE is no longer produced (a status of earlier versions:
// native deposits too small to pay their own sweep now wait below the minimum).
//
// The transition tables of deposits, sweeps and reorg resolutions (transitions.go) are the
// one source of truth for every status change; the store's statements follow them (checked by
// TestStatementsFollowTheTable).
package deposit

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Wallet gives the service's addresses, public keys only (wallet.Public): the pipeline signs
// through the engine, never with keys of its own, so the API role runs it without keys.
type Wallet interface {
	DepositAddress(i uint32) (common.Address, error)
	TokenDepositAddress(i uint32) (common.Address, error)
	GasTankAddress() common.Address
	HotWalletAddress() common.Address
}

// Prices values assets (rates.Source) and converts between USD and fiat currencies
// (rates.Fiat): rates.Chain.
type Prices = rates.Pricer

// Config tunes the pipeline.
type Config struct {
	// ScanInterval is how often each chain is scanned.
	ScanInterval time.Duration
	// LogWindow is the most blocks one eth_getLogs call covers.
	LogWindow uint64
	// KeepBlocks is how many recent block hashes are kept to detect reorgs.
	KeepBlocks uint64
	// SettlePoll is how often a deposit waiting for confirmations or a sweep is looked at.
	SettlePoll time.Duration
	// RateWait is how long a swept deposit waits for a rate source that cannot be read before
	// its DEPOSIT goes out with null values (10 minutes).
	RateWait time.Duration
	// ParkedRecheck is how often a chain's scan looks again at the deposits parked below the
	// minimum (1 minute): one parked while gas cost more than it held, or before the price or
	// the minimum moved, is swept once its address holds enough, without waiting for another
	// deposit there. The same pass queues again the settle job of a deposit waiting for its
	// sweep whose job River discarded.
	ParkedRecheck time.Duration
	// GasWaitAlert is how long a sweep (or a prefunding) may wait for its gas top-up before
	// each step that still finds it waiting logs an ERROR and counts it
	// (coffer_gas_topup_overdue_total): 15 minutes, many blocks on any chain.
	GasWaitAlert time.Duration
}

func (c *Config) defaults() {
	if c.ScanInterval <= 0 {
		c.ScanInterval = time.Second
	}
	if c.LogWindow == 0 {
		c.LogWindow = 500
	}
	if c.KeepBlocks == 0 {
		c.KeepBlocks = 256
	}
	if c.SettlePoll <= 0 {
		c.SettlePoll = time.Second
	}
	if c.RateWait <= 0 {
		c.RateWait = DefaultRateWait
	}
	if c.ParkedRecheck <= 0 {
		c.ParkedRecheck = time.Minute
	}
	if c.GasWaitAlert <= 0 {
		c.GasWaitAlert = 15 * time.Minute
	}
}

// DefaultRateWait is Config.RateWait's default.
const DefaultRateWait = 10 * time.Minute

// Service is the deposit pipeline.
type Service struct {
	pool     *pgxpool.Pool
	chains   chain.Connected
	engine   *chaintx.Engine
	wallet   Wallet
	prices   Prices
	webhooks webhook.Outbox
	river    *jobs.Inserter
	cfg      Config
	log      *slog.Logger
	watched  *watchSet
	// batching holds a *sync.Mutex per chain id: one goroutine of this process advances and
	// forms a chain's batches at a time (the database keeps processes apart).
	batching sync.Map
	// sweepers holds, per chain id, the Sweeper address verified for this process's gas tank
	// and the chain's bankroll.
	sweepers sync.Map
	// rechecked holds, per chain id, when this process last looked at its parked deposits
	// (time.Time).
	rechecked sync.Map
	// crash, when set (tests), is called at the steps of a batch sweep where a process may
	// stop between two database transactions.
	crash func(step string)
}

// Deps are the service's collaborators.
type Deps struct {
	Pool     *pgxpool.Pool
	Chains   chain.Connected
	Engine   *chaintx.Engine
	Wallet   Wallet
	Prices   Prices
	Webhooks webhook.Outbox // the outbox (webhook.Service)
	River    *jobs.Inserter // required: bound to River once the client exists
	Log      *slog.Logger
}

// New returns the service.
func New(d Deps, cfg Config) *Service {
	if d.River == nil {
		panic("deposit: New without a job inserter (Deps.River)")
	}
	cfg.defaults()
	return &Service{pool: d.Pool, chains: d.Chains, engine: d.Engine, wallet: d.Wallet, prices: d.Prices,
		webhooks: d.Webhooks, river: d.River, cfg: cfg, log: d.Log.With("component", "deposit"), watched: newWatchSet()}
}

// serviceWallets are the senders whose transfers to deposit addresses are Coffer's own (gas
// top-ups), never deposits.
func (s *Service) serviceWallets() map[common.Address]bool {
	return map[common.Address]bool{s.wallet.GasTankAddress(): true, s.wallet.HotWalletAddress(): true}
}

// IdempotencyKey of a transfer: derived from (chainId, txHash, logIndex), so a replay of a
// deposit already credited can never produce a second key.
func IdempotencyKey(chainID int64, txHash common.Hash, logIndex int64) string {
	return fmt.Sprintf("%d:%s:%d", chainID, txHash.Hex(), logIndex)
}
