package chaintx_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

type keyMap map[common.Address]*ecdsa.PrivateKey

func (k keyMap) Key(_ context.Context, a common.Address) (*ecdsa.PrivateKey, error) {
	if key, ok := k[a]; ok {
		return key, nil
	}
	return nil, fmt.Errorf("unknown address %s", a)
}

type fixture struct {
	pool   *pgxpool.Pool
	dev    *devchain.Chain
	engine *chaintx.Engine
	client *chain.Client
	from   common.Address
	keys   keyMap
}

func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	key, _ := crypto.GenerateKey()
	from := crypto.PubkeyToAddress(key.PublicKey)
	testfactory.Fund(ctx, t, dev, from, 10, 0)
	client := chain.Dial(chain.Network{ChainID: dev.ChainID(), RPCURLs: []string{dev.RPCURL()}}, nil)
	t.Cleanup(client.Close)
	keys := keyMap{from: key}
	pool := testdb.New(t)
	engine := chaintx.New(pool, map[int64]*chain.Client{dev.ChainID(): client}, keys, slog.New(slog.DiscardHandler))
	return fixture{pool: pool, dev: dev, engine: engine, client: client, from: from, keys: keys}
}

func (f fixture) request(ref string, wei int64) chaintx.Request {
	return chaintx.Request{ChainID: f.dev.ChainID(), From: f.from, To: common.HexToAddress("0x00000000000000000000000000000000000000b0"),
		Value: big.NewInt(wei), GasLimit: 21000, Purpose: "test", Ref: ref}
}

// submit submits f.request(ref, wei) and fails the test on an error.
func (f fixture) submit(t *testing.T, ref string, wei int64) domain.ChainTx {
	t.Helper()
	tx, err := f.engine.Submit(context.Background(), f.request(ref, wei))
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func (f fixture) settle(t *testing.T, id int64) domain.ChainTx {
	t.Helper()
	for range 20 {
		tx, err := f.engine.Advance(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tx.State != "pending" {
			return tx
		}
		f.dev.Commit()
	}
	t.Fatalf("transaction %d not mined", id)
	return domain.ChainTx{}
}

func TestSubmitIsIdempotentAndMines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	tx := f.submit(t, "once", 1000)
	again, err := f.engine.Submit(ctx, f.request("once", 999999))
	if err != nil || again.ID != tx.ID || again.Value.Int64() != 1000 || len(again.Attempts) != 1 {
		t.Fatalf("second submit: %+v %v", again, err)
	}
	mined := f.settle(t, tx.ID)
	if mined.State != "mined" || mined.MinedHash != tx.Attempts[0].Hash || mined.GasUsed != 21000 {
		t.Fatalf("mined: %+v", mined)
	}
	bal, err := f.client.Balance(ctx, common.HexToAddress("0x00000000000000000000000000000000000000b0"))
	if err != nil || bal.Int64() != 1000 {
		t.Fatalf("paid %v, want exactly one payment of 1000 (%v)", bal, err)
	}
}

func TestConcurrentSubmitsGetGaplessNonces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	const n = 12
	ids := f.submitAtOnce(t, n, func(i int) string { return fmt.Sprint("c", i) }, 1)
	for _, id := range ids { // each has its own job in production: all are broadcast before any is mined
		if _, err := f.engine.Advance(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	nonces := map[uint64]bool{}
	for _, id := range ids {
		tx := f.settle(t, id)
		nonces[tx.Nonce] = true
	}
	for i := range uint64(n) {
		if !nonces[i] {
			t.Fatalf("nonce %d missing: %v", i, nonces)
		}
	}
	if got, err := f.client.Nonce(ctx, f.from, false); err != nil || got != n {
		t.Fatalf("chain nonce %d (%v), want %d", got, err, n)
	}
}

func TestStoredBeforeBroadcastSurvivesACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	// The process dies right after the transaction is stored, before any broadcast.
	f.engine.Crash = func(step string) {
		if step == chaintx.StepStored {
			panic("crash")
		}
	}
	func() {
		defer func() { recover() }()
		_, _ = f.engine.Submit(ctx, f.request("crash", 7)) // it panics at StepStored: nothing returns
	}()
	f.engine.Crash = nil
	stored, err := store.New(f.pool).ChainTxByRef(ctx, "test", "crash")
	if err != nil || stored.Latest().BroadcastAt != nil {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	// After the restart, advancing broadcasts the very bytes that were stored.
	mined := f.settle(t, stored.ID)
	if mined.MinedHash != stored.Latest().Hash {
		t.Fatalf("mined %s, stored %s", mined.MinedHash, stored.Latest().Hash)
	}
}

func TestStuckTransactionIsReplacedAndPaidOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	tx := f.submit(t, "stuck", 5000)
	tx, err := f.engine.Advance(ctx, tx.ID)
	if err != nil || tx.Latest().BroadcastAt == nil {
		t.Fatalf("broadcast: %v", err)
	}
	// Nothing is mined for longer than StuckAfter: the next Advance replaces it.
	f.engine.StuckAfter = 0
	time.Sleep(10 * time.Millisecond)
	replaced, err := f.engine.Advance(ctx, tx.ID)
	if err != nil || len(replaced.Attempts) != 2 || nonceOf(t, replaced.Attempts[1]) != replaced.Nonce {
		t.Fatalf("replace: %d attempts, %v", len(replaced.Attempts), err)
	}
	first, second := replaced.Attempts[0], replaced.Attempts[1]
	if second.TipCap.Cmp(first.TipCap) <= 0 || second.FeeCap.Cmp(first.FeeCap) <= 0 {
		t.Fatalf("fees not raised: %v/%v -> %v/%v", first.TipCap, first.FeeCap, second.TipCap, second.FeeCap)
	}
	f.engine.StuckAfter = time.Hour
	mined := f.settle(t, tx.ID)
	if mined.MinedHash != second.Hash {
		t.Fatalf("mined %s, want the replacement %s", mined.MinedHash, second.Hash)
	}
	bal, err := f.client.Balance(ctx, common.HexToAddress("0x00000000000000000000000000000000000000b0"))
	if err != nil || bal.Int64() != 5000 {
		t.Fatalf("destination received %v, want exactly 5000 (%v)", bal, err)
	}
}

// submitAtOnce submits n requests concurrently, the i-th for ref(i), and returns the ids of
// the transactions they got.
func (f fixture) submitAtOnce(t *testing.T, n int, ref func(i int) string, wei int64) []int64 {
	t.Helper()
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tx, err := f.engine.Submit(context.Background(), f.request(ref(i), wei))
			if err != nil {
				t.Errorf("submit %d: %v", i, err)
				return
			}
			ids[i] = tx.ID
		})
	}
	wg.Wait()
	return ids
}

func nonceOf(t *testing.T, a domain.TxAttempt) uint64 {
	t.Helper()
	var tx types.Transaction
	if err := tx.UnmarshalBinary(a.Raw); err != nil {
		t.Fatal(err)
	}
	return tx.Nonce()
}

// Concurrent submits of one (purpose, ref), as two jobs of one sweep or payout may do: one
// transaction is stored, every caller gets it, and the loser's nonce leaves no gap.
func TestConcurrentSubmitsOfOneRefStoreOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	ids := f.submitAtOnce(t, 8, func(int) string { return "the-one" }, 1000)
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("different transactions for one ref: %v", ids)
		}
	}
	next, err := f.engine.Submit(ctx, f.request("the-next", 1))
	if err != nil || next.Nonce != 1 {
		t.Fatalf("the next transaction's nonce is %d (%v); want 1, no gap", next.Nonce, err)
	}
}

// What was seen (make bench, 2026-11-27): with the gas tank empty, every scan pass broadcast
// each of its pending top-ups again, and the node refused and the engine warned each time:
// ~1,000 refusals a second. A refused attempt is asked again only after RefusedRetry, and goes
// out once the sender can pay.
func TestRefusedBroadcastIsAskedAgainAfterAPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	key, _ := crypto.GenerateKey()
	poor := crypto.PubkeyToAddress(key.PublicKey)
	f.keys[poor] = key
	var logs bytes.Buffer
	engine := chaintx.New(f.pool, map[int64]*chain.Client{f.dev.ChainID(): f.client}, f.keys,
		slog.New(slog.NewTextHandler(&logs, nil)))
	// The pause is stepped on a clock of the test's, not slept through: under load twenty
	// Advance calls took longer than a real 300 ms pause and the node was asked twice.
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	engine.SetClock(func() time.Time { return time.Unix(0, clock.Load()) })
	step := func(d time.Duration) { clock.Add(int64(d)) }
	engine.RefusedRetry = time.Minute
	req := f.request("unfunded", 1000)
	req.From = poor
	tx, err := engine.Submit(ctx, req)
	if err != nil && !errors.Is(err, chaintx.ErrInsufficientFunds) {
		t.Fatal(err)
	}
	if tx.ID == 0 {
		if tx, err = store.New(f.pool).ChainTxByRef(ctx, req.Purpose, req.Ref); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		if _, err := engine.Advance(ctx, tx.ID); !errors.Is(err, chaintx.ErrInsufficientFunds) {
			t.Fatalf("advance with the sender unfunded: %v", err)
		}
	}
	if n := strings.Count(logs.String(), "broadcast refused"); n != 1 {
		t.Fatalf("the node was asked %d times within RefusedRetry, want once:\n%s", n, logs.String())
	}
	// After the pause, callers advancing it at once ask the node once between them.
	step(engine.RefusedRetry)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { engine.Advance(ctx, tx.ID) }) //nolint:errcheck // counted in the log
	}
	wg.Wait()
	if n := strings.Count(logs.String(), "broadcast refused"); n != 2 {
		t.Fatalf("the node was asked %d times in all, want twice:\n%s", n, logs.String())
	}
	testfactory.Fund(ctx, t, f.dev, poor, 1, 0)
	step(engine.RefusedRetry)
	for range 20 {
		got, err := engine.Advance(ctx, tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == domain.ChainTxMined {
			return
		}
		f.dev.Commit()
	}
	t.Fatal("not mined once the sender was funded")
}
