package wallet

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// parsePath turns "m/0H/1/2'" into BIP32 indexes.
func parsePath(t *testing.T, path string) []uint32 {
	t.Helper()
	parts := strings.Split(path, "/")
	if parts[0] != "m" {
		t.Fatalf("path %q must start with m", path)
	}
	var out []uint32
	for _, p := range parts[1:] {
		hard := strings.HasSuffix(p, "H") || strings.HasSuffix(p, "'")
		n, err := strconv.ParseUint(strings.TrimRight(p, "H'"), 10, 32)
		if err != nil {
			t.Fatalf("path %q: %v", path, err)
		}
		i := uint32(n)
		if hard {
			i = h(i)
		}
		out = append(out, i)
	}
	return out
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBIP32Vectors checks the derivation (hdkeychain's NewMaster and Derive, through
// derivePath) against the extended private keys of BIP32's test vectors 1 and 2
// (https://github.com/bitcoin/bips/blob/master/bip-0032.mediawiki#test-vectors), and vector
// 3, which covers private keys with leading zero bytes (the bug that the deprecated
// DeriveNonStandard keeps).
func TestBIP32Vectors(t *testing.T) {
	t.Parallel()
	vectors := []struct {
		name  string
		seed  string
		paths [][2]string // path, ext prv
	}{
		{"vector 1", "000102030405060708090a0b0c0d0e0f", [][2]string{
			{"m", "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"},
			{"m/0H", "xprv9uHRZZhk6KAJC1avXpDAp4MDc3sQKNxDiPvvkX8Br5ngLNv1TxvUxt4cV1rGL5hj6KCesnDYUhd7oWgT11eZG7XnxHrnYeSvkzY7d2bhkJ7"},
			{"m/0H/1", "xprv9wTYmMFdV23N2TdNG573QoEsfRrWKQgWeibmLntzniatZvR9BmLnvSxqu53Kw1UmYPxLgboyZQaXwTCg8MSY3H2EU4pWcQDnRnrVA1xe8fs"},
			{"m/0H/1/2H", "xprv9z4pot5VBttmtdRTWfWQmoH1taj2axGVzFqSb8C9xaxKymcFzXBDptWmT7FwuEzG3ryjH4ktypQSAewRiNMjANTtpgP4mLTj34bhnZX7UiM"},
			{"m/0H/1/2H/2", "xprvA2JDeKCSNNZky6uBCviVfJSKyQ1mDYahRjijr5idH2WwLsEd4Hsb2Tyh8RfQMuPh7f7RtyzTtdrbdqqsunu5Mm3wDvUAKRHSC34sJ7in334"},
			{"m/0H/1/2H/2/1000000000", "xprvA41z7zogVVwxVSgdKUHDy1SKmdb533PjDz7J6N6mV6uS3ze1ai8FHa8kmHScGpWmj4WggLyQjgPie1rFSruoUihUZREPSL39UNdE3BBDu76"},
		}},
		{"vector 2", "fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", [][2]string{
			{"m", "xprv9s21ZrQH143K31xYSDQpPDxsXRTUcvj2iNHm5NUtrGiGG5e2DtALGdso3pGz6ssrdK4PFmM8NSpSBHNqPqm55Qn3LqFtT2emdEXVYsCzC2U"},
			{"m/0", "xprv9vHkqa6EV4sPZHYqZznhT2NPtPCjKuDKGY38FBWLvgaDx45zo9WQRUT3dKYnjwih2yJD9mkrocEZXo1ex8G81dwSM1fwqWpWkeS3v86pgKt"},
			{"m/0/2147483647H", "xprv9wSp6B7kry3Vj9m1zSnLvN3xH8RdsPP1Mh7fAaR7aRLcQMKTR2vidYEeEg2mUCTAwCd6vnxVrcjfy2kRgVsFawNzmjuHc2YmYRmagcEPdU9"},
			{"m/0/2147483647H/1", "xprv9zFnWC6h2cLgpmSA46vutJzBcfJ8yaJGg8cX1e5StJh45BBciYTRXSd25UEPVuesF9yog62tGAQtHjXajPPdbRCHuWS6T8XA2ECKADdw4Ef"},
			{"m/0/2147483647H/1/2147483646H", "xprvA1RpRA33e1JQ7ifknakTFpgNXPmW2YvmhqLQYMmrj4xJXXWYpDPS3xz7iAxn8L39njGVyuoseXzU6rcxFLJ8HFsTjSyQbLYnMpCqE2VbFWc"},
			{"m/0/2147483647H/1/2147483646H/2", "xprvA2nrNbFZABcdryreWet9Ea4LvTJcGsqrMzxHx98MMrotbir7yrKCEXw7nadnHM8Dq38EGfSh6dqA9QWTyefMLEcBYJUuekgW4BYPJcr9E7j"},
		}},
		{"vector 3", "4b381541583be4423346c643850da4b320e46a87ae3d2a4e6da11eba819cd4acba45d239319ac14f863b8d5ab5a0d0c64d2e8a1e7d1457df2e5a3c51c73235be", [][2]string{
			{"m", "xprv9s21ZrQH143K25QhxbucbDDuQ4naNntJRi4KUfWT7xo4EKsHt2QJDu7KXp1A3u7Bi1j8ph3EGsZ9Xvz9dGuVrtHHs7pXeTzjuxBrCmmhgC6"},
			{"m/0H", "xprv9uPDJpEQgRQfDcW7BkF7eTya6RPxXeJCqCJGHuCJ4GiRVLzkTXBAJMu2qaMWPrS7AANYqdq6vcBcBUdJCVVFceUvJFjaPdGZ2y9WACViL4L"},
		}},
	}
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			master, err := hdkeychain.NewMaster(mustHex(t, v.seed), &chaincfg.MainNetParams)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range v.paths {
				k, err := derivePath(master, parsePath(t, p[0])...)
				if err != nil {
					t.Fatalf("%s: %v", p[0], err)
				}
				if got := k.String(); got != p[1] {
					t.Errorf("%s:\n got %s\nwant %s", p[0], got, p[1])
				}
			}
		})
	}
}

// The BIP39 seed of the well-known test mnemonic (empty passphrase).
const (
	abandonMnemonic = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about" //nolint:dupword // BIP39 test vector
	abandonSeed     = "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4"
)

// TestEthereumVector checks the deposit path against the addresses every BIP44 Ethereum
// wallet (MetaMask, ethers, …) shows for the test mnemonic at m/44'/60'/0'/0/i.
func TestEthereumVector(t *testing.T) {
	t.Parallel()
	// The seed is BIP39's PBKDF2-HMAC-SHA512(mnemonic, "mnemonic", 2048 rounds).
	seed, err := pbkdf2.Key(sha512.New, abandonMnemonic, []byte("mnemonic"), 2048, 64)
	if err != nil || hex.EncodeToString(seed) != abandonSeed {
		t.Fatalf("BIP39 seed %x %v", seed, err)
	}
	k, err := FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
		"0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0",
		"0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A",
	} {
		key, addr, err := k.Deposit(uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		if addr.Hex() != want {
			t.Errorf("m/44'/60'/0'/0/%d = %s, want %s", i, addr.Hex(), want)
		}
		if crypto.PubkeyToAddress(key.PublicKey) != addr {
			t.Errorf("index %d: key does not match address", i)
		}
	}
}

// TestServiceWallets checks that each service wallet is the key at its documented path.
func TestServiceWallets(t *testing.T) {
	t.Parallel()
	k, master := abandonKeys(t)
	seen := map[common.Address]string{}
	for _, w := range []struct {
		name string
		path string
		get  func() (*ecdsa.PrivateKey, common.Address)
	}{
		{"hot wallet", "m/44'/60'/1'/0/0", k.HotWallet},
		{"gas tank", "m/44'/60'/2'/0/0", k.GasTank},
		{"dev bankroll", "m/44'/60'/3'/0/0", k.DevBankroll},
	} {
		ext, err := derivePath(master, parsePath(t, w.path)...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := toKey(ext)
		if err != nil {
			t.Fatal(err)
		}
		key, addr := w.get()
		if addr != want.Address || key.D.Cmp(want.Key.D) != 0 || crypto.PubkeyToAddress(key.PublicKey) != addr {
			t.Errorf("%s: %s, want %s at %s", w.name, addr, want.Address, w.path)
		}
		if other, dup := seen[addr]; dup {
			t.Errorf("%s and %s share %s", w.name, other, addr)
		}
		seen[addr] = w.name
		if s, ok := k.Signer(addr); !ok || s != key {
			t.Errorf("%s: Signer does not know it", w.name)
		}
	}
	_, dep0, _ := k.Deposit(0)
	if _, dup := seen[dep0]; dup {
		t.Error("a service wallet equals deposit address 0")
	}

	// The same seed gives the same wallets.
	k2, _ := FromSeed(mustHex(t, abandonSeed))
	if _, a := k2.HotWallet(); a != k.hot.Address {
		t.Error("hot wallet not deterministic")
	}
}

func TestSignerAndCache(t *testing.T) {
	t.Parallel()
	k := keysFromByte(t, 7)
	_, addr5, _ := deriveUncached(t, k, 5)
	if _, ok := k.Signer(addr5); ok {
		t.Fatal("Signer knows an address that was never asked for")
	}
	key, addr, err := k.Deposit(5)
	if err != nil || addr != addr5 {
		t.Fatalf("Deposit(5) = %s %v, want %s", addr, err, addr5)
	}
	s, ok := k.Signer(addr)
	if !ok || s != key {
		t.Fatal("Signer does not return the derived key")
	}
	again, _, _ := k.Deposit(5)
	if again != key {
		t.Fatal("second Deposit(5) derived a new key object")
	}
	// The key signs for the address.
	hash := crypto.Keccak256([]byte("coffer"))
	sig, err := crypto.Sign(hash, s)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := crypto.SigToPub(hash, sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != addr {
		t.Fatal("signature does not recover the deposit address")
	}

	if _, _, err := k.Deposit(hdkeychain.HardenedKeyStart); !errors.Is(err, ErrIndex) {
		t.Fatalf("hardened index: %v", err)
	}
	if _, _, err := k.Deposit(hdkeychain.HardenedKeyStart - 1); err != nil {
		t.Fatalf("largest index: %v", err)
	}
}

// deriveUncached derives deposit address i without touching the cache.
// keysFromByte is the Keys of a seed of SeedSize bytes b.
func keysFromByte(tb testing.TB, b byte) *Keys {
	tb.Helper()
	k, err := FromSeed(bytes.Repeat([]byte{b}, SeedSize))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func deriveUncached(t *testing.T, k *Keys, i uint32) (*ecdsa.PrivateKey, common.Address, error) {
	t.Helper()
	ext, err := k.deposits.Derive(i)
	if err != nil {
		t.Fatal(err)
	}
	d, err := toKey(ext)
	if err != nil {
		t.Fatal(err)
	}
	return d.Key, d.Address, nil
}

func TestConcurrentDeposit(t *testing.T) {
	t.Parallel()
	k := keysFromByte(t, 9)
	const workers, n = 8, 200
	got := make([][]common.Address, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range uint32(n) {
				_, a, err := k.Deposit((i*7 + uint32(w)) % n)
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], a)
			}
		})
	}
	wg.Wait()
	distinct := map[common.Address]bool{}
	for i := range uint32(n) {
		key, a, _ := k.Deposit(i)
		want, _, _ := deriveUncached(t, k, i)
		if key.D.Cmp(want.D) != 0 {
			t.Fatalf("index %d: cached key differs from a fresh derivation", i)
		}
		distinct[a] = true
	}
	if len(distinct) != n {
		t.Fatalf("%d distinct addresses for %d indexes", len(distinct), n)
	}
}

func TestFromSeedLength(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 15, 65} {
		if _, err := FromSeed(make([]byte, n)); err == nil {
			t.Errorf("seed of %d bytes accepted", n)
		}
	}
	for _, n := range []int{16, 32, 64} {
		if _, err := FromSeed(bytes.Repeat([]byte{1}, n)); err != nil {
			t.Errorf("seed of %d bytes: %v", n, err)
		}
	}
}

func TestKeysDoNotPrint(t *testing.T) {
	t.Parallel()
	k, _ := FromSeed(mustHex(t, abandonSeed))
	key, _, _ := k.Deposit(0)
	hot, _ := k.HotWallet()
	out := fmt.Sprintf("%v %+v %#v %s", k, k, k, k)
	for _, secret := range []*ecdsa.PrivateKey{key, hot} {
		if strings.Contains(out, secret.D.String()) || strings.Contains(out, hex.EncodeToString(crypto.FromECDSA(secret))) {
			t.Fatalf("key material printed: %s", out)
		}
	}
	if !strings.Contains(out, "wallet.Keys") {
		t.Fatalf("unexpected rendering %q", out)
	}
}

// BenchmarkDeposit measures deriving a new deposit address (cache miss): one non-hardened
// BIP32 step, the key conversion and the address.
func BenchmarkDeposit(b *testing.B) {
	k := keysFromByte(b, 3)
	b.ReportAllocs()
	var i uint32
	for b.Loop() {
		if _, _, err := k.Deposit(i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDepositCached measures asking again for an address already derived.
func BenchmarkDepositCached(b *testing.B) {
	k := keysFromByte(b, 3)
	const n = 1024
	for i := range uint32(n) {
		k.Deposit(i) //nolint:errcheck
	}
	b.ReportAllocs()
	var i uint32
	for b.Loop() {
		if _, _, err := k.Deposit(i % n); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkFromSeed measures building the keys (master, deposit chain, three wallets).
func BenchmarkFromSeed(b *testing.B) {
	seed := bytes.Repeat([]byte{3}, SeedSize)
	for b.Loop() {
		if _, err := FromSeed(seed); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTokenDeposit: token-deposit address i is the key at m/44'/60'/0'/1/i, derived from the
// master key along the whole path; it is no deposit address (branch 0) and no service
// wallet; the public derivation gives the same address; indexes stop below 2^31.
func TestTokenDeposit(t *testing.T) {
	t.Parallel()
	k, master := abandonKeys(t)
	p, err := ParsePublic(k.Public().MarshalRecord())
	if err != nil {
		t.Fatal(err)
	}
	deposits := map[common.Address]bool{}
	for i := range uint32(20) {
		_, a, _ := k.Deposit(i)
		deposits[a] = true
	}
	for _, w := range []func() (*ecdsa.PrivateKey, common.Address){k.HotWallet, k.GasTank, k.DevBankroll} {
		_, a := w()
		deposits[a] = true
	}
	seen := map[common.Address]bool{}
	for _, i := range []uint32{0, 1, 2, 19, 1000, hdkeychain.HardenedKeyStart - 1} {
		ext, err := derivePath(master, parsePath(t, fmt.Sprintf("m/44'/60'/0'/1/%d", i))...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := toKey(ext)
		if err != nil {
			t.Fatal(err)
		}
		key, addr, err := k.TokenDeposit(i)
		if err != nil {
			t.Fatal(err)
		}
		if addr != want.Address || key.D.Cmp(want.Key.D) != 0 || crypto.PubkeyToAddress(key.PublicKey) != addr {
			t.Errorf("TokenDeposit(%d) = %s, want %s at m/44'/60'/0'/1/%d", i, addr, want.Address, i)
		}
		if deposits[addr] || seen[addr] {
			t.Errorf("token-deposit address %d (%s) is also a deposit address or a service wallet", i, addr)
		}
		seen[addr] = true
		if pub, err := p.TokenDepositAddress(i); err != nil || pub != addr {
			t.Errorf("public token-deposit address %d = %s (%v), private %s", i, pub, err, addr)
		}
		if s, ok := k.Signer(addr); !ok || s != key {
			t.Errorf("Signer does not know token-deposit address %d", i)
		}
		if again, _, _ := k.TokenDeposit(i); again != key {
			t.Errorf("second TokenDeposit(%d) derived a new key object", i)
		}
		// The cache of deposit addresses is not the token-deposit one.
		if _, dep, _ := k.Deposit(i); dep == addr {
			t.Errorf("Deposit(%d) = TokenDeposit(%d)", i, i)
		}
	}
	if _, _, err := k.TokenDeposit(hdkeychain.HardenedKeyStart); !errors.Is(err, ErrIndex) {
		t.Fatalf("hardened index: %v", err)
	}
	if _, err := p.TokenDepositAddress(hdkeychain.HardenedKeyStart); !errors.Is(err, ErrIndex) {
		t.Fatalf("public hardened index: %v", err)
	}
}

// TestConcurrentTokenDeposit: token-deposit and deposit addresses derived from many goroutines
// at once (the race detector watches the parents' memoised public keys) match fresh
// derivations.
func TestConcurrentTokenDeposit(t *testing.T) {
	t.Parallel()
	k := keysFromByte(t, 3)
	const workers, n = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range uint32(n) {
				j := (i*7 + uint32(w)) % n
				if _, _, err := k.TokenDeposit(j); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := k.Deposit(j); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	distinct := map[common.Address]bool{}
	for i := range uint32(n) {
		key, a, _ := k.TokenDeposit(i)
		ext, err := k.tokens.Derive(i)
		if err != nil {
			t.Fatal(err)
		}
		want, err := toKey(ext)
		if err != nil || key.D.Cmp(want.Key.D) != 0 || a != want.Address {
			t.Fatalf("index %d: cached token key differs from a fresh derivation (%v)", i, err)
		}
		_, dep, _ := k.Deposit(i)
		distinct[a], distinct[dep] = true, true
	}
	if len(distinct) != 2*n {
		t.Fatalf("%d distinct addresses for %d indexes on two chains", len(distinct), n)
	}
}

// abandonKeys are the keys of the BIP39 "abandon … about" seed, and its BIP32 master key to
// derive paths from independently.
func abandonKeys(t *testing.T) (*Keys, *hdkeychain.ExtendedKey) {
	t.Helper()
	seed := mustHex(t, abandonSeed)
	k, err := FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	master, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	return k, master
}
