// Package devchain runs an embedded, single-node EVM development chain for
// `coffer dev` and for tests.
//
// It is go-ethereum's ethclient/simulated backend (chain id 1337), assembled
// here so that it also serves the tracers API, and optionally serves the eth,
// net, web3 and debug JSON-RPC modules over HTTP on a loopback address, so
// that any regular client (ethclient.Dial, viem, ethers, wallets) can talk to
// it and internal transfers can be traced (debug_traceBlockByHash,
// debug_traceTransaction with the callTracer). On start it deploys two ERC20
// test tokens (USDT and USDC, 6 decimals) and three Chainlink-style price
// feeds (ETH/USD, USDT/USD, USDC/USD, 8 decimals), all owned by the faucet
// account.
//
// A Chain holds no global state; several chains can run in one process.
package devchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	gethlog "github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/params"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/freeport"
)

var errClosed = errors.New("devchain: chain is closed")

// ChainID is the chain id of every dev chain (fixed by the simulated backend).
const ChainID = chain.DevChainID

// httpModules are the JSON-RPC namespaces served over HTTP. debug carries the
// tracers API that Coffer's scanner uses to find internal transfers; the
// server only ever listens on loopback.
func httpModules() []string { return []string{"eth", "net", "web3", "debug"} }

// faucetBalance is the genesis balance of the faucet account: 1e9 ETH.
func faucetBalance() *big.Int {
	return new(big.Int).Mul(big.NewInt(1_000_000_000), big.NewInt(params.Ether))
}

// Token and feed parameters deployed by Start.
const (
	TokenDecimals      uint8 = 6
	AggregatorDecimals uint8 = 8
)

// DefaultChainConfig returns the fork configuration used when
// Options.ChainConfig is nil: the simulated backend's dev config (chain id
// 1337, every fork active from genesis) capped at Osaka, i.e. today's mainnet
// rules.
//
// go-ethereum's params.AllDevChainProtocolChanges also activates the
// unreleased Bogota fork, whose instruction set includes Amsterdam's EIP-8037
// state-gas metering (~98k gas per new storage slot, ~184k per new account).
// That makes gas costs wildly different from any production chain, so it is
// switched off here.
func DefaultChainConfig() *params.ChainConfig {
	cfg := *params.AllDevChainProtocolChanges
	cfg.AmsterdamTime = nil
	cfg.BogotaTime = nil
	return &cfg
}

// gasMarginPercent is added to gas estimates for the faucet's contract
// transactions. Estimates run against the latest block, which can differ
// from the state the transaction finally executes on (e.g. the genesis block
// has timestamp 0, so storing block.timestamp looks free).
const gasMarginPercent = 25

// Options configure Start.
type Options struct {
	// BlockTime seals a block every BlockTime. 0 means blocks are only
	// produced when Commit is called (tests).
	//
	// Block timestamps have one-second resolution and strictly increase, so
	// with BlockTime < 1s the chain clock runs ahead of the wall clock.
	BlockTime time.Duration

	// HTTPAddr is the JSON-RPC listen address: "" = no HTTP server,
	// "127.0.0.1:0" = loopback on a free port, or a fixed host:port. The host
	// must be a loopback address or "localhost"; an empty host means
	// 127.0.0.1.
	HTTPAddr string

	// FaucetKey is the faucet account; nil generates a fresh key. The faucet
	// is funded with 1e9 ETH in genesis and owns all deployed contracts.
	//
	// Contract addresses derive from the faucet address and nonce, so with a
	// fixed key (and no faucet nonce in Alloc) they are the same on every
	// start: USDT, USDC, ETH/USD, USDT/USD, USDC/USD are created with faucet
	// nonces 0..4.
	FaucetKey *ecdsa.PrivateKey

	// Alloc holds extra prefunded genesis accounts (optional). An entry for
	// the faucet address overrides the default faucet funding.
	Alloc types.GenesisAlloc

	// Logger receives devchain and node logs (optional; nil discards).
	Logger *slog.Logger

	// ChainConfig overrides the fork configuration (optional; nil means
	// DefaultChainConfig). Its ChainID must be 1337.
	ChainConfig *params.ChainConfig

	// DataDir keeps the chain on disk (the node's database under
	// DataDir/devchain); "" keeps it in memory. A chain found there is
	// resumed from its head, with its blocks, balances, nonces and
	// contracts: Start then deploys nothing and finds the test contracts at
	// their addresses (faucet nonces 0..4), so FaucetKey, Alloc and
	// ChainConfig must be the ones the chain was created with.
	DataDir string
}

// Token is a deployed ERC20 test token.
type Token struct {
	Symbol   string
	Address  common.Address
	Decimals uint8
}

// Aggregator is a deployed Chainlink-style price feed.
type Aggregator struct {
	Pair     string // e.g. "ETH/USD"
	Address  common.Address
	Decimals uint8
}

// Chain is a running dev chain. All methods are safe for concurrent use.
type Chain struct {
	backend *Backend
	client  simulated.Client
	log     *slog.Logger

	faucet     *ecdsa.PrivateKey
	faucetAddr common.Address
	signer     types.Signer
	rpcURL     string

	tokens      []Token
	aggregators []Aggregator
	resumed     bool // the chain was found in Options.DataDir

	token      *contracts.TestToken
	aggregator *contracts.MockAggregator

	// sealMu serialises block production: the simulated beacon's sealing is
	// not safe for concurrent use. It also guards closed.
	sealMu sync.Mutex
	closed bool

	// txMu guards nextNonce, the faucet's next nonce (0 with !nonceKnown
	// means "ask the node").
	txMu       sync.Mutex
	nextNonce  uint64
	nonceKnown bool

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start creates the chain, deploys the test contracts (committed into blocks
// before Start returns), starts the optional HTTP server and the block ticker.
// ctx bounds the startup only; call Close to stop the chain.
func Start(ctx context.Context, opts Options) (*Chain, error) {
	baseLogger := opts.Logger
	if baseLogger == nil {
		baseLogger = slog.New(slog.DiscardHandler)
	}
	logger := baseLogger.With("component", "devchain")
	if opts.BlockTime < 0 {
		return nil, fmt.Errorf("devchain: negative BlockTime %v", opts.BlockTime)
	}
	var httpHost string // "" = no HTTP
	var httpPort int
	if opts.HTTPAddr != "" {
		var err error
		if httpHost, httpPort, err = parseLoopbackAddr(opts.HTTPAddr); err != nil {
			return nil, err
		}
	}

	chainConfig := opts.ChainConfig
	if chainConfig == nil {
		chainConfig = DefaultChainConfig()
	}
	if chainConfig.ChainID == nil || chainConfig.ChainID.Int64() != ChainID {
		return nil, fmt.Errorf("devchain: ChainConfig.ChainID must be %d", ChainID)
	}

	faucet := opts.FaucetKey
	if faucet == nil {
		var err error
		if faucet, err = crypto.GenerateKey(); err != nil {
			return nil, fmt.Errorf("devchain: generate faucet key: %w", err)
		}
	}
	faucetAddr := crypto.PubkeyToAddress(faucet.PublicKey)

	alloc := types.GenesisAlloc{faucetAddr: {Balance: faucetBalance()}}
	maps.Copy(alloc, opts.Alloc)

	// Route the node's own logs (HTTP server start/stop etc.) to our logger.
	// Most of geth logs through its global root logger, which we leave alone.
	nodeLogger := gethlog.NewLogger(baseLogger.With("component", "devchain/node").Handler())
	backend, rpcURL, err := startBackend(ctx, alloc, opts.DataDir, httpHost, httpPort, func(nc *node.Config, ec *ethconfig.Config) {
		ec.Genesis.Config = chainConfig
		nc.Logger = nodeLogger
		nc.WSHost = ""
		nc.IPCPath = ""
	})
	if err != nil {
		return nil, err
	}

	c := &Chain{
		backend:    backend,
		client:     backend.Client(),
		rpcURL:     rpcURL,
		log:        logger,
		faucet:     faucet,
		faucetAddr: faucetAddr,
		signer:     types.LatestSignerForChainID(big.NewInt(ChainID)),
		token:      contracts.NewTestToken(),
		aggregator: contracts.NewMockAggregator(),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	fail := func(err error) (*Chain, error) {
		close(c.done) // no ticker running yet
		_ = c.Close()
		return nil, err
	}

	id, err := c.client.ChainID(ctx)
	if err != nil {
		return fail(fmt.Errorf("devchain: chain id: %w", err))
	}
	if id.Int64() != ChainID {
		return fail(fmt.Errorf("devchain: simulated backend reports chain id %v, want %d", id, ChainID))
	}

	c.resumed = backend.eth.BlockChain().CurrentBlock().Number.Sign() > 0
	if c.resumed {
		err = c.findContracts(ctx)
	} else {
		err = c.deploy(ctx)
	}
	if err != nil {
		return fail(err)
	}

	if opts.BlockTime > 0 {
		go c.tick(opts.BlockTime)
	} else {
		close(c.done)
	}

	c.log.Info("dev chain started",
		"chain_id", ChainID,
		"data_dir", opts.DataDir,
		"resumed", c.resumed,
		"head", backend.eth.BlockChain().CurrentBlock().Number,
		"rpc", c.rpcURL,
		"faucet", faucetAddr,
		"block_time", opts.BlockTime,
	)
	return c, nil
}

// testTokens and testAggregators are the contracts deploy creates, in faucet nonce order.
func testTokens() []Token {
	return []Token{{Symbol: "USDT", Decimals: TokenDecimals}, {Symbol: "USDC", Decimals: TokenDecimals}}
}

func testAggregators() []Aggregator {
	return []Aggregator{
		{Pair: "ETH/USD", Decimals: AggregatorDecimals},
		{Pair: "USDT/USD", Decimals: AggregatorDecimals},
		{Pair: "USDC/USD", Decimals: AggregatorDecimals},
	}
}

// findContracts finds, on a resumed chain, the contracts deploy created when the chain was
// new: at the addresses of faucet nonces 0..4.
func (c *Chain) findContracts(ctx context.Context) error {
	tokens, aggs := testTokens(), testAggregators()
	var nonce uint64
	next := func() (common.Address, error) {
		addr := crypto.CreateAddress(c.faucetAddr, nonce)
		nonce++
		code, err := c.client.CodeAt(ctx, addr, nil)
		if err != nil {
			return addr, fmt.Errorf("devchain: resume: code at %s: %w", addr.Hex(), err)
		}
		if len(code) == 0 {
			return addr, fmt.Errorf("devchain: resume: no contract at %s (faucet %s, nonce %d): the chain on disk was not created with this faucet key",
				addr.Hex(), c.faucetAddr.Hex(), nonce-1)
		}
		return addr, nil
	}
	var err error
	for i := range tokens {
		if tokens[i].Address, err = next(); err != nil {
			return err
		}
	}
	for i := range aggs {
		if aggs[i].Address, err = next(); err != nil {
			return err
		}
	}
	c.tokens, c.aggregators = tokens, aggs
	return nil
}

// Resumed reports whether Start found the chain in Options.DataDir (and deployed nothing)
// rather than creating it.
func (c *Chain) Resumed() bool { return c.resumed }

// deploy deploys the test tokens and price feeds in one block and checks
// that every deployment succeeded.
func (c *Chain) deploy(ctx context.Context) error {
	type deployment struct {
		what string
		bin  string
		args []byte
		tx   *types.Transaction
		addr common.Address
	}
	usdFeed := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(AggregatorDecimals)), nil) // 1.00000000
	ethFeed := new(big.Int).Mul(big.NewInt(3000), usdFeed)                                  // 3000.00000000

	tokens := testTokens()
	tokenNames := map[string]string{"USDT": "Tether USD (dev)", "USDC": "USD Coin (dev)"}
	aggs := testAggregators()
	answers := []*big.Int{ethFeed, usdFeed, usdFeed}

	ds := make([]*deployment, 0, len(tokens)+len(aggs))
	for _, t := range tokens {
		ds = append(ds, &deployment{
			what: "token " + t.Symbol,
			bin:  contracts.TestTokenMetaData.Bin,
			args: c.token.PackConstructor(tokenNames[t.Symbol], t.Symbol, t.Decimals),
		})
	}
	for i, a := range aggs {
		ds = append(ds, &deployment{
			what: "aggregator " + a.Pair,
			bin:  contracts.MockAggregatorMetaData.Bin,
			args: c.aggregator.PackConstructor(a.Decimals, a.Pair, answers[i]),
		})
	}

	for _, d := range ds {
		var err error
		if d.addr, d.tx, err = c.deployFromFaucet(ctx, common.FromHex(d.bin), d.args); err != nil {
			return fmt.Errorf("devchain: deploy %s: %w", d.what, err)
		}
	}
	hashes := make([]common.Hash, len(ds))
	for i, d := range ds {
		hashes[i] = d.tx.Hash()
	}
	receipts, err := c.Mine(ctx, hashes...)
	if err != nil {
		return fmt.Errorf("devchain: deploy: %w", err)
	}
	for i, d := range ds {
		r := receipts[i]
		if r.Status != types.ReceiptStatusSuccessful || r.ContractAddress != d.addr {
			return fmt.Errorf("devchain: deploy %s failed (status %d)", d.what, r.Status)
		}
	}
	for i := range tokens {
		tokens[i].Address = ds[i].addr
	}
	for i := range aggs {
		aggs[i].Address = ds[len(tokens)+i].addr
	}
	c.tokens, c.aggregators = tokens, aggs
	for _, t := range tokens {
		c.log.Debug("deployed token", "symbol", t.Symbol, "address", t.Address)
	}
	for _, a := range aggs {
		c.log.Debug("deployed aggregator", "pair", a.Pair, "address", a.Address)
	}
	return nil
}

// sendFromFaucetTx runs send with transact options carrying the faucet's next
// nonce, under the nonce lock; on success the nonce is advanced.
//
// If the node rejects the nonce (e.g. the faucet key was also used by another
// client, or the chain was manipulated through Backend()), the nonce is
// resynchronised from the node and send is retried once.
func (c *Chain) sendFromFaucetTx(ctx context.Context, send func(*bind.TransactOpts) (*types.Transaction, error)) (*types.Transaction, error) {
	c.txMu.Lock()
	defer c.txMu.Unlock()

	for attempt := 0; ; attempt++ {
		nonce, err := c.faucetNonceLocked(ctx)
		if err != nil {
			return nil, err
		}
		opts := bind.NewKeyedTransactor(c.faucet, big.NewInt(ChainID))
		opts.Context = ctx //nolint:fatcontext // sets the transactor's context; nothing nests
		opts.Nonce = new(big.Int).SetUint64(nonce)
		tx, err := send(opts)
		if err != nil {
			if attempt == 0 && isNonceError(err) {
				c.nonceKnown = false
				continue
			}
			return nil, err
		}
		c.nextNonce = nonce + 1
		c.nonceKnown = true
		return tx, nil
	}
}

// faucetNonceLocked returns the nonce for the next faucet transaction. The
// pool's pending nonce can lag behind transactions we just submitted (pool
// promotion is asynchronous), so the tracked nonce wins when it is ahead.
func (c *Chain) faucetNonceLocked(ctx context.Context) (uint64, error) {
	pending, err := c.client.PendingNonceAt(ctx, c.faucetAddr)
	if err != nil {
		return 0, fmt.Errorf("devchain: faucet nonce: %w", err)
	}
	if c.nonceKnown && c.nextNonce > pending {
		return c.nextNonce, nil
	}
	return pending, nil
}

func isNonceError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "nonce too low") || strings.Contains(msg, "nonce too high") ||
		strings.Contains(msg, "replacement transaction underpriced")
}

// ResetNonce forgets the tracked faucet nonce so the next transaction asks
// the node. Call it after manipulating the chain through Backend() (Rollback,
// Fork) if faucet transactions were dropped.
func (c *Chain) ResetNonce() {
	c.txMu.Lock()
	c.nonceKnown = false
	c.nextNonce = 0
	c.txMu.Unlock()
}

// startBackend creates the backend. With a non-empty host the node's own HTTP
// JSON-RPC server is enabled through node.Config (HTTPHost, HTTPPort,
// HTTPModules, HTTPVirtualHosts), serving eth, net, web3 and debug.
//
// The bound port is not read back from the node, so for port 0 a free port
// is reserved (listen on :0, close) and handed to the node; if another
// process grabs it in between, node start fails and we retry with a new port.
func startBackend(ctx context.Context, alloc types.GenesisAlloc, dataDir, host string, port int, opt func(*node.Config, *ethconfig.Config)) (*Backend, string, error) {
	if host == "" {
		b, err := newBackend(alloc, dataDir, func(nc *node.Config, ec *ethconfig.Config) {
			opt(nc, ec)
			nc.HTTPHost = ""
		})
		return b, "", err
	}
	attempts := 1
	if port == 0 {
		attempts = 10
	}
	var lastErr error
	for range attempts {
		p := port
		if p == 0 {
			var err error
			if p, err = freeport.Pick(ctx, host); err != nil {
				return nil, "", fmt.Errorf("devchain: reserve HTTP port: %w", err)
			}
		}
		b, err := newBackend(alloc, dataDir, func(nc *node.Config, ec *ethconfig.Config) {
			opt(nc, ec)
			nc.HTTPHost = host
			nc.HTTPPort = p
			nc.HTTPModules = httpModules()
			nc.HTTPVirtualHosts = []string{"localhost"} // IP hosts are always accepted
			nc.HTTPCors = nil
		})
		if err == nil {
			return b, "http://" + net.JoinHostPort(host, strconv.Itoa(p)), nil
		}
		lastErr = err
	}
	return nil, "", fmt.Errorf("devchain: start HTTP JSON-RPC on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), lastErr)
}

// parseLoopbackAddr validates a host:port and requires a loopback host.
func parseLoopbackAddr(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("devchain: invalid HTTPAddr %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("devchain: invalid HTTPAddr %q: bad port", addr)
	}
	switch host {
	case "":
		host = "127.0.0.1"
	case "localhost":
	default:
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", 0, fmt.Errorf("devchain: HTTPAddr %q: host must be a loopback address", addr)
		}
	}
	return host, port, nil
}

func (c *Chain) tick(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.Commit()
		}
	}
}

// ChainID returns the chain id (always 1337).
func (c *Chain) ChainID() int64 { return ChainID }

// RPCURL returns the HTTP JSON-RPC URL (http://127.0.0.1:PORT), or "" when
// HTTP is disabled.
func (c *Chain) RPCURL() string { return c.rpcURL }

// Client returns the in-process client.
func (c *Chain) Client() simulated.Client { return c.client }

// Backend returns the node backend (the simulated backend's methods), e.g.
// for Fork/AdjustTime in reorg tests. Prefer the Chain wrappers (Fork,
// AdjustTime, Rollback), which are serialised with Commit and the block
// ticker.
func (c *Chain) Backend() *Backend { return c.backend }

// Faucet returns the faucet's private key.
func (c *Chain) Faucet() *ecdsa.PrivateKey { return c.faucet }

// FaucetAddress returns the faucet's address.
func (c *Chain) FaucetAddress() common.Address { return c.faucetAddr }

// Tokens returns the deployed test tokens (USDT, USDC).
func (c *Chain) Tokens() []Token { return append([]Token(nil), c.tokens...) }

// Token looks a deployed token up by symbol (case-insensitive).
func (c *Chain) Token(symbol string) (Token, bool) {
	return byName(c.tokens, func(t Token) string { return t.Symbol }, symbol)
}

// Aggregators returns the deployed price feeds (ETH/USD, USDT/USD, USDC/USD).
func (c *Chain) Aggregators() []Aggregator { return append([]Aggregator(nil), c.aggregators...) }

// Aggregator looks a deployed price feed up by pair (case-insensitive), e.g.
// "ETH/USD".
func (c *Chain) Aggregator(pair string) (Aggregator, bool) {
	return byName(c.aggregators, func(a Aggregator) string { return a.Pair }, pair)
}

// byName finds the item whose name is want, case-insensitively.
func byName[T any](items []T, name func(T) string, want string) (T, bool) {
	for _, it := range items {
		if strings.EqualFold(name(it), want) {
			return it, true
		}
	}
	var zero T
	return zero, false
}

// Commit seals one block now, including all pending transactions, and returns
// its hash. It is safe to call concurrently with the BlockTime ticker. After
// Close it does nothing and returns the zero hash.
func (c *Chain) Commit() common.Hash {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	if c.closed {
		return common.Hash{}
	}
	return c.backend.Commit()
}

// awaitExecutable waits until the pool's pending nonce of each sender is past its given
// transactions' (they are executable and go in the next block), for at most a second; a
// transaction it cannot look up is not waited for.
func (c *Chain) awaitExecutable(ctx context.Context, hashes []common.Hash) {
	need := map[common.Address]uint64{}
	for _, h := range hashes {
		tx, pending, err := c.client.TransactionByHash(ctx, h)
		if err != nil || !pending {
			continue
		}
		from, err := types.Sender(c.signer, tx)
		if err != nil {
			continue
		}
		need[from] = max(need[from], tx.Nonce()+1)
	}
	deadline := time.Now().Add(time.Second)
	for from, n := range need {
		for time.Now().Before(deadline) {
			if got, err := c.client.PendingNonceAt(ctx, from); err != nil || got >= n {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// Hold runs fn while no block can be sealed (the BlockTime ticker and Commit wait for it), so
// the transactions fn sends, once the pool holds them, land in the same block. fn must not
// seal blocks itself (Commit, Mine): it would wait for itself.
func (c *Chain) Hold(fn func() error) error {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	return fn()
}

// Mine seals blocks until every given transaction has a receipt, and returns the receipts.
// The transaction pool admits transactions asynchronously: Mine first waits (up to a second)
// until the pool has made every given transaction executable, so that transactions sent
// together land in one block, also on a machine too busy for the pool to keep up.
func (c *Chain) Mine(ctx context.Context, hashes ...common.Hash) ([]*types.Receipt, error) {
	c.awaitExecutable(ctx, hashes)
	receipts := make([]*types.Receipt, len(hashes))
	for range 50 {
		c.Commit()
		missing := 0
		for i, h := range hashes {
			if receipts[i] != nil {
				continue
			}
			r, err := c.client.TransactionReceipt(ctx, h)
			if errors.Is(err, ethereum.NotFound) || chain.IsIndexing(err) {
				missing++
				continue
			}
			if err != nil {
				return nil, err
			}
			receipts[i] = r
		}
		if missing == 0 {
			return receipts, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil, errors.New("devchain: transactions not mined after 50 blocks")
}

// AdjustTime seals an empty block whose timestamp is moved forward by d.
// It fails if transactions are pending.
func (c *Chain) AdjustTime(d time.Duration) error {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	if c.closed {
		return errClosed
	}
	return c.backend.AdjustTime(d)
}

// Fork resets the head to parent so that subsequent Commits build a side
// chain (reorg tests). It fails if transactions are pending. Transactions of
// the abandoned blocks return to the pool and are re-included by the next
// Commit; call Commit before sending new faucet transactions, as the faucet
// nonce is resynchronised from the pool.
func (c *Chain) Fork(parent common.Hash) error {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	if c.closed {
		return errClosed
	}
	err := c.backend.Fork(parent)
	c.ResetNonce()
	return err
}

// Rollback drops all pending transactions and resynchronises the faucet nonce.
func (c *Chain) Rollback() {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	if c.closed {
		return
	}
	c.backend.Rollback()
	c.ResetNonce()
}

// SendNative sends wei from the faucet to `to`. The transaction is included
// in the next block.
func (c *Chain) SendNative(ctx context.Context, to common.Address, wei *big.Int) (common.Hash, error) {
	if wei == nil || wei.Sign() < 0 {
		return common.Hash{}, errors.New("devchain: SendNative: amount must be non-negative")
	}
	tx, err := c.sendFromFaucetTx(ctx, func(opts *bind.TransactOpts) (*types.Transaction, error) {
		gas, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: c.faucetAddr, To: &to, Value: wei})
		if err != nil {
			return nil, fmt.Errorf("estimate gas: %w", err)
		}
		tip, feeCap, err := c.fees(ctx)
		if err != nil {
			return nil, err
		}
		tx, err := types.SignNewTx(c.faucet, c.signer, &types.DynamicFeeTx{
			ChainID:   big.NewInt(ChainID),
			Nonce:     opts.Nonce.Uint64(),
			GasTipCap: tip,
			GasFeeCap: feeCap,
			Gas:       gas,
			To:        &to,
			Value:     new(big.Int).Set(wei),
		})
		if err != nil {
			return nil, err
		}
		return tx, c.client.SendTransaction(ctx, tx)
	})
	if err != nil {
		return common.Hash{}, fmt.Errorf("devchain: SendNative: %w", err)
	}
	return tx.Hash(), nil
}

// Mint mints amount (in token base units) of the token with the given symbol
// to `to`. The faucet owns the tokens; the transaction is included in the
// next block.
func (c *Chain) Mint(ctx context.Context, symbol string, to common.Address, amount *big.Int) (common.Hash, error) {
	t, ok := c.Token(symbol)
	if !ok {
		return common.Hash{}, fmt.Errorf("devchain: Mint: unknown token %q", symbol)
	}
	if amount == nil || amount.Sign() < 0 {
		return common.Hash{}, errors.New("devchain: Mint: amount must be non-negative")
	}
	tx, err := c.transactFromFaucet(ctx, c.token.Instance(c.client, t.Address), t.Address, c.token.PackMint(to, amount))
	if err != nil {
		return common.Hash{}, fmt.Errorf("devchain: Mint %s: %w", t.Symbol, err)
	}
	return tx.Hash(), nil
}

// SetAnswer pushes a new answer (scaled by the feed's decimals, e.g. 3000e8
// for 3000 USD) to the price feed for pair. The new round is stamped with the
// timestamp of the block that includes it.
func (c *Chain) SetAnswer(ctx context.Context, pair string, answer *big.Int) (common.Hash, error) {
	a, ok := c.Aggregator(pair)
	if !ok {
		return common.Hash{}, fmt.Errorf("devchain: SetAnswer: unknown pair %q", pair)
	}
	if answer == nil {
		return common.Hash{}, errors.New("devchain: SetAnswer: nil answer")
	}
	tx, err := c.transactFromFaucet(ctx, c.aggregator.Instance(c.client, a.Address), a.Address, c.aggregator.PackSetAnswer(answer))
	if err != nil {
		return common.Hash{}, fmt.Errorf("devchain: SetAnswer %s: %w", a.Pair, err)
	}
	return tx.Hash(), nil
}

// DeployForwarder deploys a contracts.Forwarder (a test contract that pays
// several recipients in one transaction) from the faucet, mines it and returns
// its address. It is not part of Start, so the addresses of the contracts
// Start deploys (faucet nonces 0..4) never change.
func (c *Chain) DeployForwarder(ctx context.Context) (common.Address, error) {
	return c.deployAndMine(ctx, "forwarder", common.FromHex(contracts.ForwarderMetaData.Bin), nil)
}

// contractWalletInit deploys a contract that, like a Safe, runs code when it receives ETH: it
// stores the amount received (runtime CALLVALUE PUSH1 0 SSTORE STOP), so a transfer limited
// to 21,000 gas reverts there.
const contractWalletInit = "0x6434600055006000526005601bf3"

// DeployContractWallet deploys a contract that needs more than 21,000 gas to receive ETH (a
// stand-in for a Safe or another smart-contract wallet) from the faucet, mines it and returns
// its address. Like DeployForwarder it is not part of Start.
func (c *Chain) DeployContractWallet(ctx context.Context) (common.Address, error) {
	return c.deployAndMine(ctx, "contract wallet", common.FromHex(contractWalletInit), nil)
}

// DeploySweeper deploys the EIP-7702 Sweeper (contracts.Sweeper) that obeys gasTank, pays
// bankroll and sends fees to feeAddress (zero: no fees) from the faucet, mines it and returns
// its address. Like DeployForwarder it is not part of Start.
func (c *Chain) DeploySweeper(ctx context.Context, gasTank, bankroll, feeAddress common.Address) (common.Address, error) {
	return c.deployAndMine(ctx, "sweeper", common.FromHex(contracts.SweeperMetaData.Bin),
		contracts.NewSweeper().PackConstructor(gasTank, bankroll, feeAddress))
}

// deployAndMine deploys a contract from the faucet, mines it and returns its address.
func (c *Chain) deployAndMine(ctx context.Context, what string, bin, args []byte) (common.Address, error) {
	addr, tx, err := c.deployFromFaucet(ctx, bin, args)
	if err != nil {
		return common.Address{}, fmt.Errorf("devchain: deploy %s: %w", what, err)
	}
	receipts, err := c.Mine(ctx, tx.Hash())
	if err != nil {
		return common.Address{}, fmt.Errorf("devchain: deploy %s: %w", what, err)
	}
	if r := receipts[0]; r.Status != types.ReceiptStatusSuccessful || r.ContractAddress != addr {
		return common.Address{}, fmt.Errorf("devchain: deploy %s failed (status %d)", what, r.Status)
	}
	return addr, nil
}

// deployFromFaucet deploys a contract (its bytecode and packed constructor arguments) from
// the faucet, with the gas it is estimated to take plus gasMarginPercent.
func (c *Chain) deployFromFaucet(ctx context.Context, bin, args []byte) (common.Address, *types.Transaction, error) {
	var addr common.Address
	tx, err := c.sendFromFaucetTx(ctx, func(opts *bind.TransactOpts) (*types.Transaction, error) {
		gas, err := c.estimateWithMargin(ctx, nil, append(slices.Clip(bin), args...))
		if err != nil {
			return nil, err
		}
		opts.GasLimit = gas
		var tx *types.Transaction
		addr, tx, err = bind.DeployContract(opts, bin, c.client, args)
		return tx, err
	})
	return addr, tx, err
}

// transactFromFaucet calls a contract (packed call data) from the faucet, with the gas it is
// estimated to take plus gasMarginPercent.
func (c *Chain) transactFromFaucet(ctx context.Context, inst *bind.BoundContract, to common.Address, data []byte) (*types.Transaction, error) {
	return c.sendFromFaucetTx(ctx, func(opts *bind.TransactOpts) (*types.Transaction, error) {
		gas, err := c.estimateWithMargin(ctx, &to, data)
		if err != nil {
			return nil, err
		}
		opts.GasLimit = gas
		return bind.Transact(inst, opts, data)
	})
}

// estimateWithMargin estimates a faucet transaction (to == nil: contract
// creation) and adds gasMarginPercent. A revert surfaces here as an error.
func (c *Chain) estimateWithMargin(ctx context.Context, to *common.Address, data []byte) (uint64, error) {
	gas, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: c.faucetAddr, To: to, Data: data})
	if err != nil {
		return 0, fmt.Errorf("estimate gas: %w", err)
	}
	return gas + gas*gasMarginPercent/100, nil
}

// fees returns an EIP-1559 tip and fee cap (2x base fee + tip) for the next block.
func (c *Chain) fees(ctx context.Context) (tip, feeCap *big.Int, err error) {
	tip, err = c.client.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("suggest tip: %w", err)
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("head: %w", err)
	}
	feeCap = new(big.Int).Mul(head.BaseFee, big.NewInt(2))
	feeCap.Add(feeCap, tip)
	return tip, feeCap, nil
}

// Close stops the block ticker, the HTTP server and the backend. It is
// idempotent.
func (c *Chain) Close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		// Wait for an in-flight Commit before tearing the node down.
		c.sealMu.Lock()
		c.closed = true
		c.closeErr = c.backend.Close()
		c.sealMu.Unlock()
		c.log.Info("dev chain stopped")
	})
	return c.closeErr
}
