package app_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// TestAPIRoleCannotSign runs a real API-role process (HTTP server, services, River client) and
// proves it holds no private key: it hands out the deposit and treasury addresses the seed
// derives, its engine refuses to sign for every service address, and nothing reachable from
// the process (App, services, River, handlers; walked by reflection through every pointer,
// interface, map and slice) is a private key, a private extended key, the seed or a key's
// bytes. The same walk over a worker's services finds the keys, so the walk does reach them.
func TestAPIRoleCannotSign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := apptest.Start(t, apptest.Options{Role: config.RoleAPI})
	box, err := secret.NewBox(env.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	// What the worker that created the wallet holds, for comparison.
	seed := openSeed(t, env, box)
	keys, err := wallet.FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	s := env.Services
	if s.Keys != nil {
		t.Fatal("the API role's services hold the wallet keys")
	}
	if s.Wallet.Record() != keys.Public().Record() {
		t.Fatalf("public record %+v, want %+v", s.Wallet.Record(), keys.Public().Record())
	}

	// Deposit and treasury addresses, through the API, are the seed's.
	op, key := env.Operator(t, domain.OperatorSettings{})
	res := env.Do(t, "POST", "/session/deposit", key, `{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"10"}`)
	var opened struct {
		Data struct {
			URL string `json:"url"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&opened); err != nil {
		t.Fatalf("decode: %v", err)
	}
	res.Body.Close()
	sid := opened.Data.URL[strings.Index(opened.Data.URL, "sid=")+4:]
	res = env.Do(t, "POST", "/depositor/address", "", `{"sid":"`+sid+`","currency":"ETH","chainId":1337}`)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var addrResp struct {
		Data struct {
			Address string `json:"address"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &addrResp); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("deposit address: %d %s", res.StatusCode, body)
	}
	deposit := common.HexToAddress(addrResp.Data.Address)
	treasury, err := s.Deposits.Treasury(ctx, op.ID)
	if err != nil {
		t.Fatal(err)
	}
	var secrets [][]byte
	secrets = append(secrets, seed)
	for _, a := range []common.Address{deposit, treasury} {
		var index uint32
		if err := env.Pool.QueryRow(ctx, `SELECT address_index FROM (SELECT address_index, address FROM depositors WHERE address IS NOT NULL
			UNION ALL SELECT address_index, address FROM treasuries) x WHERE address = $1`, a.Hex()).Scan(&index); err != nil {
			t.Fatalf("index of %s: %v", a.Hex(), err)
		}
		k, want, err := keys.Deposit(index)
		if err != nil || want != a {
			t.Fatalf("index %d derives %s, the API handed out %s", index, want.Hex(), a.Hex())
		}
		secrets = append(secrets, keyForms(k)...)
	}
	for _, get := range []func() (*ecdsa.PrivateKey, common.Address){keys.HotWallet, keys.GasTank, keys.DevBankroll} {
		k, _ := get()
		secrets = append(secrets, keyForms(k)...)
	}

	// The engine cannot sign, whoever the sender, and stores nothing.
	for _, from := range []common.Address{s.Wallet.HotWalletAddress(), s.Wallet.GasTankAddress(), deposit, treasury} {
		req := chaintx.Request{ChainID: 1337, From: from, To: from, Value: big.NewInt(1), GasLimit: 21000, Purpose: "test", Ref: from.Hex()}
		if _, err := s.Engine.Prepare(ctx, req); !errors.Is(err, chaintx.ErrNoKeys) {
			t.Errorf("Prepare from %s: %v", from.Hex(), err)
		}
		if _, err := s.Engine.Submit(ctx, req); !errors.Is(err, chaintx.ErrNoKeys) {
			t.Errorf("Submit from %s: %v", from.Hex(), err)
		}
	}
	if n := env.Count(t, "chain_txs"); n != 0 {
		t.Fatalf("%d transactions stored", n)
	}

	// Nothing reachable from the process is key material.
	if found := findKeyMaterial(reflect.ValueOf(env.App), secrets); len(found) > 0 {
		t.Fatalf("the API process holds key material:\n%s", strings.Join(found, "\n"))
	}
	// Control: a worker's services on the same database are full of it.
	worker, err := app.NewServices(ctx, env.Pool, box, app.ServicesConfig{Chains: mustChains(t), Sessions: session.Config{TTL: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if _, _, err := worker.Keys.Deposit(0); err != nil {
		t.Fatal(err)
	}
	if found := findKeyMaterial(reflect.ValueOf(worker), secrets); len(found) == 0 {
		t.Fatal("the walk finds no key in a worker's services: it does not reach them")
	}
}

// TestAPIRoleWaitsForAWallet: an API replica on a database where no worker has created the HD
// wallet does not create one (that would mean generating keys): it waits, and starts once a
// worker has; told to stop meanwhile, it stops with a clear message.
func TestAPIRoleWaitsForAWallet(t *testing.T) {
	t.Parallel()
	cfg := config.Config{DatabaseURL: testdb.URL(t), MaxDBConns: 4, MasterKey: secret.Random(secret.KeySize), Chains: mustChains(t),
		Role: config.RoleAPI, WorkerConcurrency: 1, WebhookConcurrency: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	if !errors.Is(err, wallet.ErrNoPublic) || !strings.Contains(err.Error(), "start a worker") {
		t.Fatalf("API role stopped on a database without wallet: %v", err)
	}
	pool := testdb.Open(t, cfg.DatabaseURL, 2)
	if _, err := store.New(pool).GetWalletSeed(context.Background()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the API role created a wallet: %v", err)
	}

	// Started again, it waits until a worker creates the wallet, then runs on its public half.
	type started struct {
		a   *app.App
		err error
	}
	done := make(chan started, 1)
	go func() {
		a, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
		done <- started{a, err}
	}()
	select {
	case s := <-done:
		t.Fatalf("the API role started without a wallet: %v", s.err)
	case <-time.After(1500 * time.Millisecond):
	}
	cfg.Role = config.RoleWorker
	worker, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Pool.Close()
	select {
	case s := <-done:
		if s.err != nil {
			t.Fatalf("the API role once the worker created the wallet: %v", s.err)
		}
		defer s.a.Pool.Close()
		if s.a.Services.Keys != nil || s.a.Services.Wallet.Record() != worker.Services.Wallet.Record() {
			t.Fatal("the API role does not run on the worker's public keys alone")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the API role still waits after a worker created the wallet")
	}
}

func openSeed(t *testing.T, env *apptest.Env, box *secret.Box) []byte {
	t.Helper()
	sealed, err := store.New(env.Pool).GetWalletSeed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seed, err := box.Open(sealed, wallet.SeedContext)
	if err != nil {
		t.Fatal(err)
	}
	return seed
}

func mustChains(t *testing.T) *chain.Registry {
	t.Helper()
	r, err := chain.NewRegistry(apptest.TestChains())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// keyForms are the byte patterns of a private key in memory: its 32 big-endian bytes, and its
// little-endian words (a big.Int's or a secp256k1 scalar's layout on little-endian machines).
func keyForms(k *ecdsa.PrivateKey) [][]byte {
	be := k.D.FillBytes(make([]byte, 32))
	var le []byte
	for _, w := range k.D.Bits() {
		le = binary.LittleEndian.AppendUint64(le, uint64(w))
	}
	return [][]byte{be, le}
}

var (
	ecdsaKeyType    = reflect.TypeFor[ecdsa.PrivateKey]()
	walletKeysType  = reflect.TypeFor[wallet.Keys]()
	extendedKeyType = reflect.TypeFor[hdkeychain.ExtendedKey]()
)

// findKeyMaterial walks everything reachable from v and describes each private key, wallet
// key set, private extended key or byte string containing one of secrets that it meets.
// Closures and raw unsafe pointers cannot be walked (atomic.Pointer values are); the process
// memory scan in e2e covers those.
func findKeyMaterial(v reflect.Value, secrets [][]byte) []string {
	type seenKey struct {
		p uintptr
		t reflect.Type
	}
	seen := map[seenKey]bool{}
	var found []string
	var walk func(v reflect.Value, path string, depth int)
	walk = func(v reflect.Value, path string, depth int) {
		if !v.IsValid() || depth > 200 || len(found) > 20 {
			return
		}
		switch v.Type() {
		case ecdsaKeyType, walletKeysType:
			found = append(found, path+": "+v.Type().String())
			return
		case extendedKeyType:
			if v.FieldByName("isPrivate").Bool() {
				found = append(found, path+": private hdkeychain.ExtendedKey")
			}
		}
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[seenKey{v.Pointer(), v.Type()}] {
				return
			}
			seen[seenKey{v.Pointer(), v.Type()}] = true
			walk(v.Elem(), path, depth+1)
		case reflect.Interface:
			walk(v.Elem(), path, depth+1)
		case reflect.Struct:
			t := v.Type()
			// atomic.Pointer[T]: an unsafe.Pointer with a [0]*T beside it naming its type.
			if t.NumField() >= 2 && t.Field(0).Type.Kind() == reflect.Array && t.Field(0).Type.Len() == 0 &&
				t.Field(0).Type.Elem().Kind() == reflect.Pointer {
				for i := 1; i < t.NumField(); i++ {
					if f := v.Field(i); f.Kind() == reflect.UnsafePointer && f.UnsafePointer() != nil {
						walk(reflect.NewAt(t.Field(0).Type.Elem().Elem(), f.UnsafePointer()), path+"."+t.Field(i).Name, depth+1)
					}
				}
			}
			for i := range v.NumField() {
				walk(v.Field(i), path+"."+t.Field(i).Name, depth+1)
			}
		case reflect.Map:
			if v.IsNil() || seen[seenKey{v.Pointer(), v.Type()}] {
				return
			}
			seen[seenKey{v.Pointer(), v.Type()}] = true
			it := v.MapRange()
			for it.Next() {
				walk(it.Key(), path+"[key]", depth+1)
				walk(it.Value(), path+"[value]", depth+1)
			}
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice {
				if v.IsNil() || seen[seenKey{v.Pointer(), v.Type()}] {
					return
				}
				seen[seenKey{v.Pointer(), v.Type()}] = true
			}
			if v.Type().Elem().Kind() == reflect.Uint8 {
				var b []byte
				if v.Kind() == reflect.Slice {
					b = v.Bytes()
				} else if v.CanAddr() {
					b = unsafe.Slice((*byte)(v.Addr().UnsafePointer()), v.Len())
				}
				for _, s := range secrets {
					if len(b) >= len(s) && bytes.Contains(b, s) {
						found = append(found, fmt.Sprintf("%s: bytes holding a key (%d bytes)", path, len(b)))
						break
					}
				}
				return
			}
			if k := v.Type().Elem().Kind(); k <= reflect.Complex128 || k == reflect.String {
				return // no pointers inside
			}
			for i := range v.Len() {
				walk(v.Index(i), path+"[]", depth+1)
			}
		}
	}
	walk(v, "", 0)
	return found
}
