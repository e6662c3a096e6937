package wallet

import (
	"crypto/pbkdf2"
	"crypto/sha512"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/secret"
)

// TestPublicEthereumVector: the xpub alone gives the addresses every BIP44 Ethereum wallet shows
// for the test mnemonic at m/44'/60'/0'/0/i, the ones the private derivation gives.
func TestPublicEthereumVector(t *testing.T) {
	t.Parallel()
	seed, err := pbkdf2.Key(sha512.New, abandonMnemonic, []byte("mnemonic"), 2048, 64)
	if err != nil {
		t.Fatal(err)
	}
	k, err := FromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	// Through the stored form, as an API replica gets it.
	p, err := ParsePublic(k.Public().MarshalRecord())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Record().DepositXPub, "xpub") {
		t.Fatalf("xpub %q", p.Record().DepositXPub)
	}
	for i, want := range []string{
		"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
		"0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0",
		"0xb6716976A3ebe8D39aCEB04372f22Ff8e6802D7A",
	} {
		addr, err := p.DepositAddress(uint32(i))
		if err != nil || addr.Hex() != want {
			t.Errorf("public m/44'/60'/0'/0/%d = %s (%v), want %s", i, addr.Hex(), err, want)
		}
	}
}

// TestPublicMatchesKeys: for random seeds and indexes across the non-hardened range, the public
// derivation gives the address of the private one, and the service wallets match.
func TestPublicMatchesKeys(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		k, err := FromSeed(secret.Random(SeedSize))
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePublic(k.Public().MarshalRecord())
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []uint32{0, 1, 2, 1000, hdkeychain.HardenedKeyStart - 1, rng.Uint32N(hdkeychain.HardenedKeyStart)} {
			_, want, err := k.Deposit(i)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := p.DepositAddress(i); err != nil || got != want {
				t.Errorf("index %d: public %s %v, private %s", i, got, err, want)
			}
		}
		for _, w := range []struct {
			name     string
			public   common.Address
			fromPriv func() common.Address
		}{
			{"hot wallet", p.HotWalletAddress(), func() common.Address { _, a := k.HotWallet(); return a }},
			{"gas tank", p.GasTankAddress(), func() common.Address { _, a := k.GasTank(); return a }},
			{"dev bankroll", p.DevBankrollAddress(), func() common.Address { _, a := k.DevBankroll(); return a }},
		} {
			if w.public != w.fromPriv() {
				t.Errorf("%s: %s vs %s", w.name, w.public, w.fromPriv())
			}
		}
		if _, err := p.DepositAddress(hdkeychain.HardenedKeyStart); err == nil {
			t.Error("hardened index accepted")
		}
	}
}

// TestNewPublicRefuses: only the xpub of m/44'/60'/0' is accepted; in particular a private
// extended key never makes it into a Public.
func TestNewPublicRefuses(t *testing.T) {
	t.Parallel()
	seed := mustHex(t, abandonSeed)
	master, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	ext := func(path string, private bool, net *chaincfg.Params) string {
		k, err := derivePath(master, parsePath(t, path)...)
		if err != nil {
			t.Fatal(err)
		}
		if !private {
			if k, err = k.Neuter(); err != nil {
				t.Fatal(err)
			}
		}
		if net != nil {
			k.SetNet(net)
		}
		return k.String()
	}
	for _, tc := range []struct {
		name, xpub string
		ok         bool
	}{
		{"account xpub", ext("m/44'/60'/0'", false, nil), true},
		{"account xprv", ext("m/44'/60'/0'", true, nil), false},
		{"another account", ext("m/44'/60'/1'", false, nil), false},
		{"the deposit chain itself", ext("m/44'/60'/0'/0", false, nil), false},
		{"testnet", ext("m/44'/60'/0'", false, &chaincfg.TestNet3Params), false},
		{"garbage", "xpub123", false},
	} {
		_, err := NewPublic(PublicRecord{DepositXPub: tc.xpub})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
