package bench

import (
	"context"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// startBatchedCoffer is startDevCoffer on a chain that sweeps token deposits in EIP-7702
// batches: the database's wallet is created first, so that a Sweeper can be deployed for its
// gas tank and the bankroll before Coffer starts (the chains file names it). blockTime 0:
// blocks are sealed by blocks.
func startBatchedCoffer(b *testing.B, blockTime, scan time.Duration, confirmations int32) (*devchain.Chain, *apptest.Env) {
	b.Helper()
	ctx := b.Context()
	dev := testfactory.DevChain(context.Background(), b, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: blockTime})
	n := testfactory.DevNetwork(dev, confirmations)
	dbURL, masterKey, keys := apptest.NewWallet(b)
	_, gasTank := keys.GasTank()
	var err error
	if n.SweeperAddress, err = dev.DeploySweeper(ctx, gasTank, n.BankrollAddress); err != nil {
		b.Fatal(err)
	}
	n.SweepMethod = chain.SweepEIP7702
	testfactory.Fund(ctx, b, dev, gasTank, 1000, 0)
	return dev, apptest.Start(b, apptest.Options{DatabaseURL: dbURL, MasterKey: masterKey, ScanInterval: scan,
		Chains: []chain.Network{n}})
}

// blocks seals a block every interval on a dev chain started without a block time, and lets
// a caller send transactions that must land in one block (hold).
type blocks struct {
	dev  *devchain.Chain
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func sealEvery(b *testing.B, dev *devchain.Chain, interval time.Duration) *blocks {
	b.Helper()
	bl := &blocks{dev: dev, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(bl.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-bl.stop:
				return
			case <-t.C:
				bl.mu.Lock()
				dev.Commit()
				bl.mu.Unlock()
			}
		}
	}()
	b.Cleanup(func() { close(bl.stop); <-bl.done })
	return bl
}

// mintInOneBlock mints amount of symbol to each address in one block: no block is sealed
// until the pool holds every mint.
func (bl *blocks) mintInOneBlock(ctx context.Context, b *testing.B, symbol string, to []common.Address, amount int64) {
	b.Helper()
	bl.mu.Lock()
	defer bl.mu.Unlock()
	start, err := bl.dev.Client().PendingNonceAt(ctx, bl.dev.FaucetAddress())
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range to {
		if _, err := bl.dev.Mint(ctx, symbol, a, big.NewInt(amount)); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := bl.dev.Client().PendingNonceAt(ctx, bl.dev.FaucetAddress())
		if err != nil {
			b.Fatal(err)
		}
		if n >= start+uint64(len(to)) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d mints in the pool after 10 s", n-start, len(to))
		}
		time.Sleep(5 * time.Millisecond)
	}
	bl.dev.Commit()
}
