package devchain

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/eth/tracers"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native" // registers the callTracer
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
)

// Backend is the node behind a Chain: go-ethereum's ethclient/simulated backend, assembled
// here from the same exported pieces (node, eth service, filter API, simulated beacon) because
// the simulated package registers no tracing API and hides its node, and a node refuses new
// APIs once started. This one also serves debug_traceBlockByHash, debug_traceTransaction and
// the rest of the tracers API. Its methods behave as simulated.Backend's.
type Backend struct {
	node   *node.Node
	eth    *eth.Ethereum
	beacon *catalyst.SimulatedBeacon
	client simClient
}

// simClient hides the *ethclient.Client behind the simulated.Client interface, as the
// simulated backend does.
type simClient struct{ *ethclient.Client }

// newBackend builds and starts a backend as simulated.NewBackend does, with the tracers API,
// and returns an error (the simulated package panics) when the node cannot start, e.g. its
// HTTP port was taken.
//
// dataDir "" keeps the chain in memory. Otherwise the node's database lives under
// dataDir/devchain and the chain resumes from its head on the next start: the state is kept
// by the hash scheme in archive mode, so every block's state is on disk as soon as the block
// is (nothing waits for a clean shutdown to be flushed), and old blocks can still be traced.
func newBackend(alloc types.GenesisAlloc, dataDir string, opt func(*node.Config, *ethconfig.Config)) (*Backend, error) {
	nodeConf := node.DefaultConfig
	nodeConf.DataDir = dataDir
	nodeConf.Name = "devchain"
	nodeConf.P2P = p2p.Config{NoDiscovery: true}

	// Every fork is active from genesis, so the system contracts those forks call must exist
	// from genesis too; the caller's alloc wins.
	genesisAlloc := core.SystemContractAllocs()
	maps.Copy(genesisAlloc, alloc)
	ethConf := ethconfig.Defaults
	ethConf.Genesis = &core.Genesis{
		Config:   params.AllDevChainProtocolChanges,
		GasLimit: ethconfig.Defaults.Miner.GasCeil,
		Alloc:    genesisAlloc,
	}
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true
	ethConf.LogNoHistory = true
	if dataDir != "" {
		ethConf.StateScheme = rawdb.HashScheme
		ethConf.NoPruning = true
		ethConf.DatabaseCache = 64 // MB; a dev chain is small
		ethConf.TrieCleanCache = 32
		ethConf.SnapshotCache = 16
	}
	opt(&nodeConf, &ethConf)

	stack, err := node.New(&nodeConf)
	if err != nil {
		return nil, fmt.Errorf("devchain: new node: %w", err)
	}
	b, err := assemble(stack, &ethConf)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("devchain: start node: %w", err), stack.Close())
	}
	return b, nil
}

// assemble mirrors ethclient/simulated's newWithNode, registering the tracers API with the
// filter API before the node starts.
func assemble(stack *node.Node, conf *ethconfig.Config) (*Backend, error) {
	ethService, err := eth.New(stack, conf)
	if err != nil {
		return nil, err
	}
	filterSystem := filters.NewFilterSystem(ethService.APIBackend, filters.Config{})
	stack.RegisterAPIs(append([]rpc.API{{Namespace: "eth", Service: filters.NewFilterAPI(filterSystem)}},
		tracers.APIs(ethService.APIBackend)...))
	if err := stack.Start(); err != nil {
		return nil, err
	}
	beacon, err := catalyst.NewSimulatedBeacon(0, common.Address{}, ethService)
	if err != nil {
		return nil, err
	}
	// The simulated beacon starts from the head; on a new chain, reorg back to genesis as
	// simulated does. A chain resumed from disk keeps its head.
	if ethService.BlockChain().CurrentBlock().Number.Sign() == 0 {
		if err := beacon.Fork(ethService.BlockChain().GetCanonicalHash(0)); err != nil {
			return nil, errors.Join(err, beacon.Stop())
		}
	}
	return &Backend{node: stack, eth: ethService, beacon: beacon, client: simClient{ethclient.NewClient(stack.Attach())}}, nil
}

// Close shuts the backend down; it cannot be used afterwards.
func (b *Backend) Close() error {
	if b.client.Client != nil {
		b.client.Close()
		b.client = simClient{}
	}
	var err error
	if b.beacon != nil {
		err = b.beacon.Stop()
		b.beacon = nil
	}
	if b.node != nil {
		err = errors.Join(err, b.node.Close())
		b.node = nil
	}
	return err
}

// Each head change below waits for the transaction pool to reset onto the new head before it
// returns. The pool resets on a background goroutine; without the wait, a transaction sent
// right after a block can be checked against the previous head's state and refused ("nonce
// too low", "insufficient funds") although the block that made it valid is already in.

// Commit seals a block with the pending transactions and returns its hash.
func (b *Backend) Commit() common.Hash {
	h := b.beacon.Commit()
	b.syncPool()
	return h
}

// Rollback drops the pending transactions.
func (b *Backend) Rollback() { b.beacon.Rollback() }

// Fork resets the head to parentHash so that later commits build a side chain.
func (b *Backend) Fork(parentHash common.Hash) error {
	err := b.beacon.Fork(parentHash)
	b.syncPool()
	return err
}

// AdjustTime seals an empty block whose timestamp is moved forward.
func (b *Backend) AdjustTime(adjustment time.Duration) error {
	err := b.beacon.AdjustTime(adjustment)
	b.syncPool()
	return err
}

// syncPool blocks until the transaction pool has reset onto the current head.
func (b *Backend) syncPool() {
	_ = b.eth.TxPool().Sync() // fails only once the pool is closed, when nothing is sent any more
}

// Client returns an in-process client of the chain.
func (b *Backend) Client() simulated.Client { return b.client }
