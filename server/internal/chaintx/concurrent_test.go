package chaintx_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// risingTips makes the node behind f suggest a higher tip at every call, so workers deciding
// a replacement at once sign different bytes (identical bytes would only meet the unique hash
// index), and returns an engine on it. Each suggestion doubles the last, so it is always above
// the 12.5% bump of any earlier attempt.
func risingTips(t *testing.T, f fixture) *chaintx.Engine {
	t.Helper()
	proxy := testfactory.NewNodeProxy(t, f.dev.RPCURL())
	var calls atomic.Int64
	proxy.Answer(func(call testfactory.NodeCall) (string, bool) {
		if call.Method != "eth_maxPriorityFeePerGas" {
			return "", false
		}
		tip := new(big.Int).Lsh(big.NewInt(1_000_000_000), uint(calls.Add(1)))
		reply, _ := json.Marshal("0x" + tip.Text(16))
		return string(reply), true
	})
	client := chain.Dial(chain.Network{ChainID: f.dev.ChainID(), RPCURLs: []string{proxy.URL}}, nil)
	t.Cleanup(client.Close)
	return chaintx.New(f.pool, map[int64]*chain.Client{f.dev.ChainID(): client}, f.keys, slog.New(slog.DiscardHandler))
}

// advanceAtOnce runs workers Advance calls of one transaction that all read it before any of
// them goes on (they meet at StepReceipt), as several workers polling one stuck transaction do.
func advanceAtOnce(t *testing.T, engine *chaintx.Engine, id int64, workers int) {
	t.Helper()
	var read sync.WaitGroup
	read.Add(workers)
	engine.Crash = func(step string) {
		if step == chaintx.StepReceipt {
			read.Done()
			read.Wait()
		}
	}
	defer func() { engine.Crash = nil }()
	var done sync.WaitGroup
	for i := range workers {
		done.Go(func() {
			if _, err := engine.Advance(context.Background(), id); err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		})
	}
	done.Wait()
}

// What was seen: Advance read the transaction, decided to replace it and stored the new
// attempt without a lock, so workers advancing one stuck transaction at once each added a
// replacement at its nonce (4 workers: 4 attempts for one bump step, each bumping the same
// old fees), and each carried out a service-team cancel once more. The attempt is now stored
// only if the attempt it replaces is still the newest, under the transaction's row lock.
func TestConcurrentAdvancesReplaceOncePerStep(t *testing.T) {
	t.Parallel()
	const workers, steps = 4, 2
	for _, tc := range []struct {
		name   string
		action domain.TxAction // requested before each step; "" for a stuck transaction
	}{
		{"stuck", ""},
		{"cancel requested", domain.TxCancel},
		{"resend requested", domain.TxResend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := setup(t)
			engine := risingTips(t, f)
			engine.StuckAfter = time.Hour
			if tc.action == "" {
				engine.StuckAfter = -time.Hour // every broadcast attempt is stuck
			}
			tx, err := engine.Submit(ctx, f.request("raced", 1000))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := engine.Advance(ctx, tx.ID); err != nil { // the first broadcast
				t.Fatal(err)
			}
			for step := 1; step <= steps; step++ {
				if tc.action != "" {
					requestAction(t, f, tx.ID, tc.action)
				}
				advanceAtOnce(t, engine, tx.ID, workers)
				got, err := store.New(f.pool).ChainTx(ctx, tx.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Attempts) != step+1 || got.RequestedAction != "" {
					t.Fatalf("step %d: %d attempts, want %d (one replacement per step); request %q left",
						step, len(got.Attempts), step+1, got.RequestedAction)
				}
			}
			engine.StuckAfter = time.Hour
			mined := f.settle(t, tx.ID)
			want := domain.ChainTxMined
			if tc.action == domain.TxCancel {
				want = domain.ChainTxCancelled
			}
			if mined.State != want {
				t.Fatalf("state %s, want %s", mined.State, want)
			}
		})
	}
}

func requestAction(t *testing.T, f fixture, id int64, a domain.TxAction) {
	t.Helper()
	ctx := context.Background()
	tx, err := store.New(f.pool).ChainTx(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.InTx(ctx, f.pool, func(dbtx pgx.Tx) error {
		return chaintx.RequestAction(ctx, dbtx, tx, a, domain.System, "test")
	}); err != nil {
		t.Fatal(err)
	}
}
