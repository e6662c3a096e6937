package wallet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func newBox(t *testing.T) *secret.Box {
	t.Helper()
	box, err := secret.NewBox(secret.Random(secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// loaded is a fresh database on which Load created the wallet: its pool, the box the seed is
// sealed in, and the keys Load gave.
func loaded(t *testing.T) (*pgxpool.Pool, *secret.Box, *Keys) {
	t.Helper()
	pool, box := testdb.New(t), newBox(t)
	k, err := Load(context.Background(), pool, box)
	if err != nil {
		t.Fatal(err)
	}
	return pool, box, k
}

func TestLoadSealsSeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, box, k1 := loaded(t)
	sealed, err := store.New(pool).GetWalletSeed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := box.Open(sealed, sealContext)
	if err != nil || len(seed) != SeedSize {
		t.Fatalf("stored seed: %d bytes, %v", len(seed), err)
	}
	if bytes.Contains(sealed, seed) {
		t.Fatal("seed stored in clear")
	}
	if _, err := box.Open(sealed, "operator:1"); err == nil {
		t.Fatal("sealed seed opens under another context")
	}

	// The stored seed is the one in use, and a second Load (a restart) finds it.
	fromSeed, err := FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := Load(ctx, pool, box)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*Keys{fromSeed, k2} {
		if a, b := addresses(t, k1), addresses(t, k); a != b {
			t.Fatalf("addresses differ after reload:\n%v\n%v", a, b)
		}
	}
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM wallet_seed").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("wallet_seed rows %d %v", rows, err)
	}
}

// addresses summarises a key set: the service wallets and the first deposit addresses.
func addresses(t *testing.T, k *Keys) [5]common.Address {
	t.Helper()
	var out [5]common.Address
	_, out[0] = k.HotWallet()
	_, out[1] = k.GasTank()
	_, out[2] = k.DevBankroll()
	for i := range 2 {
		_, a, err := k.Deposit(uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		out[3+i] = a
	}
	return out
}

// TestLoadConcurrent starts several "processes" (each with its own pool) on an empty
// database at once: they must all end up with the same single seed.
func TestLoadConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	box := newBox(t)
	const n = 8
	keys := make([]*Keys, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		pool := testdb.Open(t, url, 2)
		if err := pool.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			<-start
			keys[i], errs[i] = Load(ctx, pool, box)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Load %d: %v", i, err)
		}
	}
	want := addresses(t, keys[0])
	for i, k := range keys[1:] {
		if got := addresses(t, k); got != want {
			t.Fatalf("process %d derived other keys: %v vs %v", i+1, got, want)
		}
	}
	pool := testdb.Open(t, url, 1)
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM wallet_seed").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("wallet_seed rows %d %v", rows, err)
	}
}

func TestLoadWrongMasterKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, box, k := loaded(t)
	before, _ := store.New(pool).GetWalletSeed(ctx)

	_, err := Load(ctx, pool, newBox(t))
	if err == nil {
		t.Fatal("Load with another master key succeeded")
	}
	if !strings.Contains(err.Error(), "COFFER_MASTER_KEY") || !strings.Contains(err.Error(), "HD seed") {
		t.Fatalf("unclear error: %v", err)
	}

	// The stored seed is untouched and still opens with the right key.
	after, _ := store.New(pool).GetWalletSeed(ctx)
	if !bytes.Equal(before, after) {
		t.Fatal("a failed Load changed the stored seed")
	}
	k2, err := Load(ctx, pool, box)
	if err != nil || addresses(t, k2) != addresses(t, k) {
		t.Fatalf("reload with the right key: %v", err)
	}
}

func TestLoadRefusesBadRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	box := newBox(t)
	// A value sealed under the right key but for another purpose, and a short seed.
	for _, sealed := range [][]byte{
		box.Seal(secret.Random(SeedSize), "operator:1"),
		box.Seal(secret.Random(32), sealContext),
	} {
		if _, err := pool.Exec(ctx, "DELETE FROM wallet_seed"); err != nil {
			t.Fatal(err)
		}
		if _, err := store.New(pool).InsertWalletSeed(ctx, sealed); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(ctx, pool, box); err == nil {
			t.Fatal("Load accepted a bad seed row")
		}
	}
}

func TestInsertWalletSeedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := store.New(testdb.New(t))
	if _, err := q.GetWalletSeed(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("empty table: %v", err)
	}
	ins, err := q.InsertWalletSeed(ctx, []byte("first"))
	if err != nil || !ins {
		t.Fatalf("first insert %v %v", ins, err)
	}
	ins, err = q.InsertWalletSeed(ctx, []byte("second"))
	if err != nil || ins {
		t.Fatalf("second insert %v %v", ins, err)
	}
	got, err := q.GetWalletSeed(ctx)
	if err != nil || string(got) != "first" {
		t.Fatalf("seed %q %v", got, err)
	}
}

// TestLoadPublic: API replicas read the public record, never the seed; workers create it,
// back-fill it on databases from before it existed, and refuse one that does not match the seed.
func TestLoadPublic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	box := newBox(t)
	q := store.New(pool)

	if _, err := LoadPublic(ctx, pool, box); !errors.Is(err, ErrNoPublic) {
		t.Fatalf("empty database: %v", err)
	}
	keys, err := Load(ctx, pool, box)
	if err != nil {
		t.Fatal(err)
	}
	samePublic := func(step string) {
		t.Helper()
		p, err := LoadPublic(ctx, pool, box)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if p.Record() != keys.Public().Record() {
			t.Fatalf("%s: public record %+v, want %+v", step, p.Record(), keys.Public().Record())
		}
		for i := range uint32(3) {
			_, want, _ := keys.Deposit(i)
			if got, err := p.DepositAddress(i); err != nil || got != want {
				t.Fatalf("%s: deposit %d: %s %v, want %s", step, i, got, err, want)
			}
		}
	}
	samePublic("after the first Load")
	if stored, _ := q.GetWalletPublic(ctx); bytes.Contains(stored, []byte("xpub")) {
		t.Fatal("public record stored in clear")
	}

	// The seed row is not read: with it unreadable LoadPublic still works (and Load does not).
	seedRow, _ := q.GetWalletSeed(ctx)
	if _, err := pool.Exec(ctx, `UPDATE wallet_seed SET sealed = '\x01deadbeef'`); err != nil {
		t.Fatal(err)
	}
	samePublic("with the seed unreadable")
	if _, err := Load(ctx, pool, box); err == nil {
		t.Fatal("Load opened a damaged seed")
	}
	if _, err := pool.Exec(ctx, `UPDATE wallet_seed SET sealed = $1`, seedRow); err != nil {
		t.Fatal(err)
	}

	// A database from before the record: the next worker back-fills it.
	if _, err := pool.Exec(ctx, `UPDATE wallet_seed SET public_sealed = NULL`); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPublic(ctx, pool, box); !errors.Is(err, ErrNoPublic) || !strings.Contains(err.Error(), "start a worker") {
		t.Fatalf("before back-fill: %v", err)
	}
	if _, err := Load(ctx, pool, box); err != nil {
		t.Fatal(err)
	}
	samePublic("after back-fill")

	// Substituted records.
	other, _ := FromSeed(secret.Random(SeedSize))
	for _, tc := range []struct {
		name       string
		sealed     []byte
		publicOpen bool // LoadPublic cannot tell a well-sealed record of another seed
	}{
		{"another seed's record sealed under the master key", box.Seal(other.Public().MarshalRecord(), PublicContext), true},
		{"sealed under another master key", newBox(t).Seal(keys.Public().MarshalRecord(), PublicContext), false},
		{"the seed passed off as the record", seedRow, false},
	} {
		if _, err := pool.Exec(ctx, `UPDATE wallet_seed SET public_sealed = $1`, tc.sealed); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPublic(ctx, pool, box); (err == nil) != tc.publicOpen {
			t.Errorf("%s: LoadPublic err %v", tc.name, err)
		}
		if _, err := Load(ctx, pool, box); err == nil {
			t.Errorf("%s: a worker started on it", tc.name)
		}
	}
}

// TestLoadPublicOrCreate: the CLI creates the wallet on an empty database, as a worker would.
func TestLoadPublicOrCreate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	box := newBox(t)
	p, err := LoadPublicOrCreate(ctx, pool, box)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := Load(ctx, pool, box)
	if err != nil || keys.Public().Record() != p.Record() {
		t.Fatalf("worker after the CLI: %v", err)
	}
}
