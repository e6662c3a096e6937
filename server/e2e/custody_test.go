package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// TestAPIRoleProcessHoldsNoKeys runs real `coffer serve` processes on one database: an API
// replica started before any worker waits (it never creates a wallet); a worker creates the
// wallet; the API replica then starts and hands out a deposit address, the one the seed
// derives. Its whole memory, read from /proc, holds neither the seed nor any private key the
// seed gives (the served deposit address's, the hot wallet's, the gas tank's, the bankroll's),
// in their byte or machine-word layouts, while the worker's memory holds the hot wallet key:
// the scan finds keys where they are.
func TestAPIRoleProcessHoldsNoKeys(t *testing.T) {
	ctx := context.Background()
	db := newCofferDB(t)
	chainsFile := proctest.ChainsFile(t, ethChain(1337, "dev", "http://127.0.0.1:9"))
	addr := proctest.FreeAddr(t)
	base := "http://" + addr
	env := db.env("COFFER_ADDR="+addr, "COFFER_INTERNAL_ADDR=127.0.0.1:0", "COFFER_BASE_URL="+base, "COFFER_STATIC_PRICES=ETH=3000",
		"COFFER_LOG_LEVEL=info")

	// An API replica first: it waits for a worker to create the wallet, serving nothing.
	// The chain is unreachable on purpose: this test is about keys, not chains.
	api := proctest.Start(t, db.bin, append(env, "COFFER_CHAINS_FILE="+chainsFile, "COFFER_CHAINS_VALIDATE=off"), "serve", "--role", "api")
	api.WaitFor(t, "the API replica to say it waits for a worker", func() bool {
		return strings.Contains(api.Stderr.String(), "waiting for a worker to create the HD wallet")
	})
	if res, err := get(t, base+"/readyz"); err == nil {
		res.Body.Close()
		t.Fatalf("the API replica answers (%d) without a wallet", res.StatusCode)
	}
	pool := testdb.Open(t, db.dbURL, 2)
	if _, err := store.New(pool).GetWalletSeed(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the API replica created a wallet: %v", err)
	}

	worker := proctest.Start(t, db.bin, env, "serve", "--role", "worker")
	api.WaitFor(t, "the API replica, once the worker created the wallet", func() bool { return proctest.OK(t.Context(), base+"/readyz") })

	box, err := secret.NewBox(db.masterKey)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := operator.New(pool, box).Create(ctx, domain.OperatorSettings{Name: new("Acme"), WebhookURL: new("https://acme.example/hook")})
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := openSession(t, base, "deposit", key, `{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"10"}`)
	served := depositAddress(t, base, sid, "ETH")

	// The seed's keys, as the test (holding the master key) derives them.
	sealed, err := store.New(pool).GetWalletSeed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := box.Open(sealed, wallet.SeedContext)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := wallet.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	var index uint32
	if err := pool.QueryRow(ctx, `SELECT address_index FROM depositors WHERE address = $1`, served.Hex()).Scan(&index); err != nil {
		t.Fatal(err)
	}
	depositKey, derived, err := keys.Deposit(index)
	if err != nil || derived != served {
		t.Fatalf("deposit address %d: the seed derives %s, the API served %s (%v)", index, derived.Hex(), served.Hex(), err)
	}
	hot, _ := keys.HotWallet()
	gas, _ := keys.GasTank()
	bankroll, _ := keys.DevBankroll()
	patterns := map[string][]byte{"seed": seed}
	for name, k := range map[string]*ecdsa.PrivateKey{"deposit key": depositKey, "hot wallet key": hot, "gas tank key": gas, "bankroll key": bankroll} {
		be, le := keyLayouts(k)
		patterns[name+" (bytes)"], patterns[name+" (words)"] = be, le
	}

	if found := scanMemory(t, api.Cmd.Process.Pid, patterns); len(found) > 0 {
		t.Fatalf("the API replica's memory holds: %s", strings.Join(found, ", "))
	}
	hotBE, hotLE := keyLayouts(hot)
	if found := scanMemory(t, worker.Cmd.Process.Pid, map[string][]byte{"hot wallet key (bytes)": hotBE, "hot wallet key (words)": hotLE}); len(found) == 0 {
		t.Fatal("the worker's memory does not show its hot wallet key: the scan cannot see keys")
	}
}

// keyLayouts are a private key's 32 big-endian bytes and its little-endian machine words (how
// a big.Int or a secp256k1 scalar holds it on amd64 and arm64).
func keyLayouts(k *ecdsa.PrivateKey) (be, le []byte) {
	be = k.D.FillBytes(make([]byte, 32))
	for _, w := range k.D.Bits() {
		le = binary.LittleEndian.AppendUint64(le, uint64(w))
	}
	return be, le
}

// scanMemory reads every readable mapping of a process (/proc/PID/maps and /proc/PID/mem;
// the test process may read its children's) and names the patterns found.
func scanMemory(t *testing.T, pid int, patterns map[string][]byte) []string {
	t.Helper()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	const chunk, overlap = 4 << 20, 128
	buf := make([]byte, chunk+overlap)
	found := map[string]bool{}
	var scanned int64
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.HasPrefix(fields[1], "r") {
			continue
		}
		bounds := strings.SplitN(fields[0], "-", 2)
		start, err1 := strconv.ParseUint(bounds[0], 16, 64)
		end, err2 := strconv.ParseUint(bounds[1], 16, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("maps line %q", sc.Text())
		}
		for off := start; off < end; off += chunk {
			n := min(uint64(chunk+overlap), end-off)
			read, err := mem.ReadAt(buf[:n], int64(off))
			if err != nil && read == 0 {
				break // [vvar] and the like cannot be read
			}
			scanned += int64(read)
			for name, p := range patterns {
				if !found[name] && bytes.Contains(buf[:read], p) {
					found[name] = true
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if scanned < 1<<20 {
		t.Fatalf("read only %d bytes of process %d's memory", scanned, pid)
	}
	var out []string
	for name := range found {
		out = append(out, name)
	}
	return out
}
