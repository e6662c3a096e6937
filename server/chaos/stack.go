package chaos

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/pgcluster"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
)

// Asset is one asset of the chain.
type Asset struct {
	Symbol   string
	Decimals int
	Contract common.Address // zero for the native asset
}

// Native reports whether the asset is the chain's own (ETH).
func (a Asset) Native() bool { return a.Contract == (common.Address{}) }

// Stack is the system under test: PostgreSQL (a private cluster the harness restarts), a geth
// --dev chain with two test tokens, and four `coffer serve` replicas (two API, two workers) on
// them, with production settings except what a test chain needs.
type Stack struct {
	t   testing.TB
	Dir string

	pgMu   sync.Mutex
	pg     *pgcluster.Cluster
	pgDir  string
	pgPort int
	// DB is the harness's own pool, for monitors and checks (it reconnects after restarts).
	DB *pgxpool.Pool

	Node          *gethdev.Node
	ChainID       int64
	Confirmations uint64
	Assets        []Asset
	// Bankroll receives swept deposits and FeeAddress deposit fees: keys the harness made and
	// never sends from, so their balances are exactly what Coffer sent them.
	Bankroll, FeeAddress common.Address
	// HotWallet pays withdrawals, GasTank tops up deposit addresses (Coffer's, from its log).
	HotWallet, GasTank common.Address
	// Sweeper is the chain's EIP-7702 Sweeper (sweepMethod eip7702; zero with topup).
	Sweeper common.Address
	// HotFunding is what the harness sent the hot wallet, per asset (smallest units).
	HotFunding map[string]*big.Int
	// Bank deployed the tokens and holds their supply.
	Bank gethdev.Account

	Bin      string
	APIs     []*Replica
	Workers  []*Replica
	OpsToken string
	Ops      cofferv1connect.OpsServiceClient
}

// Replicas is every replica, workers first.
func (s *Stack) Replicas() []*Replica {
	return append(append([]*Replica(nil), s.Workers...), s.APIs...)
}

// Replica finds a replica by name.
func (s *Stack) Replica(name string) *Replica {
	for _, r := range s.Replicas() {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Asset finds an asset by symbol.
func (s *Stack) Asset(symbol string) Asset {
	for _, a := range s.Assets {
		if a.Symbol == symbol {
			return a
		}
	}
	panic("no asset " + symbol)
}

// DatabaseURL is the cluster's URL (unchanged by restarts).
func (s *Stack) DatabaseURL() string {
	s.pgMu.Lock()
	defer s.pgMu.Unlock()
	return s.pg.URL
}

// StartStack starts everything; onExit is told of every process that ends on its own.
func StartStack(t testing.TB, dir, sweep string, extraEnv []string, onExit func(*Replica, *Proc)) (*Stack, error) {
	t.Helper()
	ctx := context.Background()
	s := &Stack{t: t, Dir: dir, Confirmations: 2, HotFunding: map[string]*big.Int{}}

	// PostgreSQL, durable (fsync on): an immediate shutdown must not lose committed work.
	s.pgDir = filepath.Join(dir, "pg")
	pg, err := pgcluster.Start(ctx, pgcluster.Options{Dir: s.pgDir, MaxConnections: 200})
	if err != nil {
		return nil, err
	}
	s.pg, s.pgPort = pg, pg.Port
	t.Cleanup(func() {
		s.pgMu.Lock()
		defer s.pgMu.Unlock()
		s.pg.Stop() //nolint:errcheck
	})
	cfg, err := pgxpool.ParseConfig(pg.URL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 4
	if s.DB, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	t.Cleanup(s.DB.Close)

	// The chain: geth --dev with a block a second, USDT and USDC (6 decimals).
	s.Node = gethdev.Start(t, time.Second)
	s.ChainID = s.Node.ChainID
	if s.Bank, err = s.Node.NewAccount(ctx, 1000); err != nil {
		return nil, err
	}
	s.Assets = []Asset{{Symbol: "ETH", Decimals: 18}}
	for _, sym := range []string{"USDT", "USDC"} {
		addr, err := s.Node.DeployToken(ctx, s.Bank, sym, 6, new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
		if err != nil {
			return nil, fmt.Errorf("deploy %s: %w", sym, err)
		}
		s.Assets = append(s.Assets, Asset{Symbol: sym, Decimals: 6, Contract: addr})
	}
	s.Bankroll, s.FeeAddress = newAddress(), newAddress()

	// The binary.
	s.Bin = filepath.Join(dir, "coffer")
	if err := proctest.Build(t.Context(), s.Bin); err != nil {
		return nil, err
	}

	tokens := []map[string]any{}
	for _, a := range s.Assets[1:] {
		tokens = append(tokens, map[string]any{"symbol": a.Symbol, "contractAddress": a.Contract.Hex(), "decimals": a.Decimals})
	}
	network := map[string]any{"chainId": s.ChainID, "name": "geth dev", "rpcUrls": []string{s.Node.URL},
		"confirmations": s.Confirmations, "nativeSymbol": "ETH", "nativeDecimals": 18, "tokens": tokens,
		"bankrollAddress": s.Bankroll.Hex(), "feeAddress": s.FeeAddress.Hex()}
	chainsFile, err := proctest.WriteChains(dir, network)
	if err != nil {
		return nil, err
	}
	s.OpsToken = secret.Token("ops_")
	// Production defaults everywhere (job rescue, webhook schedule, settle wait, pool sizes),
	// except the base URL (the balancer in front of the API replicas, never called), loopback
	// webhook targets and static prices for the test tokens.
	env := []string{"DATABASE_URL=" + pg.URL, "COFFER_MASTER_KEY=" + secret.NewMasterKey(), "COFFER_OPS_TOKEN=" + s.OpsToken,
		"COFFER_CHAINS_FILE=" + chainsFile, "COFFER_BASE_URL=http://coffer.chaos.invalid", "COFFER_AUTO_MIGRATE=true",
		"COFFER_WEBHOOK_ALLOW=loopback", "COFFER_STATIC_PRICES=ETH=3000,USDT=1,USDC=1", "COFFER_DB_MAX_CONNS=10",
		"COFFER_LOG_FORMAT=text", "COFFER_LOG_LEVEL=info"}
	env = append(env, extraEnv...)
	for i := 1; i <= 2; i++ {
		for _, role := range []string{"worker", "api"} {
			name := fmt.Sprintf("%s-%d", role, i)
			addr := ""
			if role == "api" {
				addr = proctest.FreeAddr(t)
			}
			internal := proctest.FreeAddr(t)
			penv := append(append([]string(nil), env...), "COFFER_INTERNAL_ADDR="+internal)
			if addr != "" {
				penv = append(penv, "COFFER_ADDR="+addr)
			}
			r, err := newReplica(name, role, addr, internal, s.Bin, penv, filepath.Join(dir, name+".log"))
			if err != nil {
				return nil, err
			}
			r.onExit = onExit
			if role == "api" {
				s.APIs = append(s.APIs, r)
			} else {
				s.Workers = append(s.Workers, r)
			}
		}
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, r := range s.Replicas() {
			wg.Go(r.Stop)
		}
		wg.Wait()
	})
	// The first worker creates the wallet; API replicas wait for it anyway.
	for _, r := range s.Replicas() {
		if _, err := r.Start(ctx); err != nil {
			return nil, err
		}
	}
	log, _ := os.ReadFile(s.Workers[0].LogPath)
	m := regexp.MustCompile(`gas_tank=(0x[0-9a-fA-F]{40}) hot_wallet=(0x[0-9a-fA-F]{40})`).FindSubmatch(log)
	if m == nil {
		return nil, fmt.Errorf("no service wallets in worker-1's log\n%s", s.Workers[0].Tail(20))
	}
	s.GasTank, s.HotWallet = common.HexToAddress(string(m[1])), common.HexToAddress(string(m[2]))
	for _, a := range []common.Address{s.GasTank, s.HotWallet} {
		if err := s.Node.Fund(ctx, a, ether(200)); err != nil {
			return nil, err
		}
	}
	s.HotFunding["ETH"] = ether(200)
	for _, a := range s.Assets[1:] {
		units := big.NewInt(1_000_000_000_000) // 1,000,000 tokens
		if _, err := s.Node.Transact(ctx, s.Bank, &a.Contract, nil, contracts.NewTestToken().PackTransfer(s.HotWallet, units)); err != nil {
			return nil, err
		}
		s.HotFunding[a.Symbol] = units
	}
	if sweep == SweepEIP7702 {
		if err := s.useSweeper(ctx, dir, network); err != nil {
			return nil, err
		}
	}
	s.Ops = cofferv1connect.NewOpsServiceClient(http.DefaultClient, s.APIs[0].InternalURL(), connect.WithInterceptors(proctest.Bearer(s.OpsToken)))
	return s, nil
}

// useSweeper moves the chain to sweepMethod eip7702: it deploys a Sweeper for the service's
// gas tank, bankroll and fee address (known once the first worker made the wallet), names it
// in the chains file and restarts every replica on it. Token deposits then go to
// token-deposit addresses, swept in EIP-7702 batches.
func (s *Stack) useSweeper(ctx context.Context, dir string, network map[string]any) error {
	r, err := s.Node.Transact(ctx, s.Bank, nil, nil, batchsweep.DeployData(s.GasTank, s.Bankroll, s.FeeAddress))
	if err != nil {
		return fmt.Errorf("deploy the Sweeper: %w", err)
	}
	s.Sweeper = r.ContractAddress
	network["sweepMethod"], network["sweeperAddress"] = SweepEIP7702, s.Sweeper.Hex()
	if _, err := proctest.WriteChains(dir, network); err != nil {
		return err
	}
	for _, rep := range s.Replicas() {
		rep.Stop()
	}
	for _, rep := range s.Replicas() {
		if _, err := rep.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// RestartPostgres stops PostgreSQL ("fast": a fast shutdown, "immediate": SIGQUIT to the
// postmaster, which exits without a checkpoint, so the next start recovers from the WAL as
// after a crash), keeps it down for down, and starts it again on the same data and port.
func (s *Stack) RestartPostgres(mode string, down time.Duration) (stopped, started time.Time, err error) {
	s.pgMu.Lock()
	defer s.pgMu.Unlock()
	if mode == "immediate" {
		b, err := os.ReadFile(filepath.Join(s.pgDir, "postmaster.pid"))
		if err != nil {
			return stopped, started, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil {
			return stopped, started, fmt.Errorf("postmaster.pid: %w", err)
		}
		if err := syscall.Kill(pid, syscall.SIGQUIT); err != nil {
			return stopped, started, err
		}
	}
	s.pg.Stop() //nolint:errcheck // waits for the postmaster to exit
	stopped = time.Now()
	time.Sleep(down)
	for attempt := 0; ; attempt++ {
		pg, err := pgcluster.Start(context.Background(), pgcluster.Options{Dir: s.pgDir, Port: s.pgPort, MaxConnections: 200})
		if err == nil {
			s.pg = pg
			return stopped, time.Now(), nil
		}
		if attempt == 20 {
			return stopped, started, fmt.Errorf("PostgreSQL did not start again: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// PostgresLogTail is the end of the server's log.
func (s *Stack) PostgresLogTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(s.pgDir, "server.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Balance reads an address's balance of an asset at the latest block.
func (s *Stack) Balance(ctx context.Context, a Asset, owner common.Address) (*big.Int, error) {
	if a.Native() {
		return s.Node.Client.BalanceAt(ctx, owner, nil)
	}
	return s.Node.TokenBalance(ctx, a.Contract, owner)
}

func newKey() *ecdsa.PrivateKey {
	k, err := crypto.GenerateKey()
	if err != nil {
		panic(err)
	}
	return k
}

func newAddress() common.Address { return crypto.PubkeyToAddress(newKey().PublicKey) }

func ether(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e18)) }
