package bench

import (
	"context"
	"fmt"
	"math/big"
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
// gas tank and the bankroll before Coffer starts (the chains file names it).
func startBatchedCoffer(b *testing.B, blockTime, scan time.Duration, confirmations int32, tweaks ...func(*chain.Network)) (*devchain.Chain, *apptest.Env) {
	b.Helper()
	ctx := b.Context()
	dev := testfactory.DevChain(context.Background(), b, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: blockTime})
	n := testfactory.DevNetwork(dev, confirmations)
	for _, tweak := range tweaks {
		tweak(&n)
	}
	dbURL, masterKey, keys := apptest.NewWallet(b)
	_, gasTank := keys.GasTank()
	var err error
	if n.SweeperAddress, err = dev.DeploySweeper(ctx, gasTank, n.BankrollAddress, n.FeeAddress); err != nil {
		b.Fatal(err)
	}
	n.SweepMethod = chain.SweepEIP7702
	testfactory.Fund(ctx, b, dev, gasTank, 1000, 0)
	return dev, apptest.Start(b, apptest.Options{DatabaseURL: dbURL, MasterKey: masterKey, ScanInterval: scan,
		Chains: []chain.Network{n}})
}

// mintInOneBlock mints amount of symbol to each address in one block: the chain seals no
// block until the pool holds every mint.
func mintInOneBlock(ctx context.Context, b *testing.B, dev *devchain.Chain, symbol string, to []common.Address, amount int64) {
	b.Helper()
	err := dev.Hold(func() error {
		start, err := dev.Client().PendingNonceAt(ctx, dev.FaucetAddress())
		if err != nil {
			return err
		}
		for _, a := range to {
			if _, err := dev.Mint(ctx, symbol, a, big.NewInt(amount)); err != nil {
				return err
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			n, err := dev.Client().PendingNonceAt(ctx, dev.FaucetAddress())
			if err != nil || n >= start+uint64(len(to)) {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d mints in the pool after 10 s", n-start, len(to))
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
}
