// Package wallet holds the service's HD keys: one BIP32 seed, sealed under the master key in
// PostgreSQL, from which every deposit address and every service wallet is derived. Only
// workers open the seed (Keys); API replicas get the public half (Public): the deposit
// account's xpub and the service wallets' addresses, stored sealed beside the seed.
//
// Paths (BIP44 shape, coin type 60; the same address serves every EVM chain):
//
//	m/44'/60'/0'/0/i   deposit address i (Deposit)
//	m/44'/60'/0'/1/i   token-deposit address i (TokenDeposit): on EIP-7702 chains, where
//	                   token deposits go, delegated to the Sweeper at its first sweep
//	m/44'/60'/1'/0/0   hot wallet: payouts (HotWallet)
//	m/44'/60'/2'/0/0   gas tank: gas top-ups before ERC20 sweeps (GasTank)
//	m/44'/60'/3'/0/0   dev bankroll: `coffer dev` only (DevBankroll)
//
// Each service wallet sits on its own hardened account, so a leaked deposit key (a
// non-hardened child of account 0) together with the account's xpub cannot reach them.
package wallet

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// SeedSize is the length of the service's HD seed (the BIP32 maximum, 512 bits).
const SeedSize = 64

const (
	purpose  = 44
	coinType = 60 // SLIP-44: Ether; used for every EVM chain

	accountDeposits    = 0
	accountHotWallet   = 1
	accountGasTank     = 2
	accountDevBankroll = 3

	// The deposit account's two chains (non-hardened, so the account xpub derives both):
	// addresses that stay plain EOAs, and token-deposit addresses.
	chainDeposits      = 0
	chainTokenDeposits = 1
)

// h marks a BIP32 index as hardened (i').
func h(i uint32) uint32 { return i + hdkeychain.HardenedKeyStart }

// derived is a derived secp256k1 key and its EVM address.
type derived struct {
	Key     *ecdsa.PrivateKey
	Address common.Address
}

// Keys derives the service's keys from its HD seed. It is safe for concurrent use. Derived
// keys are cached for the life of the process; only keys that were asked for are derived.
// Returned *ecdsa.PrivateKey values are shared with the cache: callers must not modify them.
type Keys struct {
	// deposits is m/44'/60'/0'/0, the parent of every deposit address, and tokens
	// m/44'/60'/0'/1, of every token-deposit address. Their public keys are memoised at
	// construction, so concurrent Derive calls only read them.
	deposits, tokens *hdkeychain.ExtendedKey

	hot, gasTank, devBankroll derived
	public                    *Public

	mu           sync.RWMutex
	byIndex      map[uint32]derived // deposit addresses
	byTokenIndex map[uint32]derived // token-deposit addresses
	byAddr       map[common.Address]*ecdsa.PrivateKey
}

// FromSeed derives the keys of a seed (16 to 64 bytes; the service uses SeedSize). The
// three service wallets are derived at once; deposit addresses on demand.
func FromSeed(seed []byte) (*Keys, error) {
	master, err := hdkeychain.NewMaster(seed, &chaincfg.MainNetParams)
	if err != nil {
		return nil, fmt.Errorf("wallet: master key: %w", err)
	}
	defer master.Zero()
	k := &Keys{byIndex: map[uint32]derived{}, byTokenIndex: map[uint32]derived{}, byAddr: map[common.Address]*ecdsa.PrivateKey{}}

	account, err := derivePath(master, h(purpose), h(coinType), h(accountDeposits))
	if err != nil {
		return nil, fmt.Errorf("wallet: deposit account m/44'/60'/0': %w", err)
	}
	// Serialise the xpub before zeroing the account key: Neuter shares its chain code.
	neutered, err := account.Neuter()
	if err != nil {
		account.Zero()
		return nil, fmt.Errorf("wallet: deposit account xpub: %w", err)
	}
	xpub := neutered.String()
	k.deposits, err = account.Derive(chainDeposits)
	if err == nil {
		k.tokens, err = account.Derive(chainTokenDeposits)
	}
	account.Zero()
	if err != nil {
		return nil, fmt.Errorf("wallet: deposit chains m/44'/60'/0'/0 and /1: %w", err)
	}
	// Memoise the parents' public keys now (Derive of a non-hardened child would write them
	// lazily, which would race between goroutines).
	for _, parent := range []*hdkeychain.ExtendedKey{k.deposits, k.tokens} {
		if _, err := parent.ECPubKey(); err != nil {
			return nil, fmt.Errorf("wallet: deposit chain public key: %w", err)
		}
	}

	for _, w := range []struct {
		account uint32
		into    *derived
	}{
		{accountHotWallet, &k.hot},
		{accountGasTank, &k.gasTank},
		{accountDevBankroll, &k.devBankroll},
	} {
		ext, err := derivePath(master, h(purpose), h(coinType), h(w.account), 0, 0)
		if err != nil {
			return nil, fmt.Errorf("wallet: service wallet m/44'/60'/%d'/0/0: %w", w.account, err)
		}
		key, err := toKey(ext)
		ext.Zero()
		if err != nil {
			return nil, fmt.Errorf("wallet: service wallet m/44'/60'/%d'/0/0: %w", w.account, err)
		}
		*w.into = key
		k.byAddr[key.Address] = key.Key
	}
	if k.public, err = NewPublic(PublicRecord{DepositXPub: xpub, HotWallet: k.hot.Address, GasTank: k.gasTank.Address,
		DevBankroll: k.devBankroll.Address}); err != nil {
		return nil, err
	}
	return k, nil
}

// Public is the wallet's public half: what API replicas get instead of Keys.
func (k *Keys) Public() *Public { return k.public }

// derivePath derives the child of parent along path (hardened indexes already offset).
// Intermediate keys are zeroed.
func derivePath(parent *hdkeychain.ExtendedKey, path ...uint32) (*hdkeychain.ExtendedKey, error) {
	k := parent
	for _, i := range path {
		child, err := k.Derive(i)
		if k != parent {
			k.Zero()
		}
		if err != nil {
			return nil, err
		}
		k = child
	}
	return k, nil
}

// toKey converts a private extended key to a go-ethereum key and its address.
func toKey(ext *hdkeychain.ExtendedKey) (derived, error) {
	priv, err := ext.ECPrivKey()
	if err != nil {
		return derived{}, err
	}
	raw := priv.Serialize() // 32 bytes, left-padded
	defer clear(raw)
	key, err := crypto.ToECDSA(raw)
	if err != nil {
		return derived{}, err
	}
	return derived{Key: key, Address: crypto.PubkeyToAddress(key.PublicKey)}, nil
}

// ErrIndex is returned for deposit indexes outside the non-hardened range [0, 2^31).
var ErrIndex = errors.New("wallet: deposit index must be below 2^31")

// Deposit returns the key and address of deposit address i (m/44'/60'/0'/0/i).
func (k *Keys) Deposit(i uint32) (*ecdsa.PrivateKey, common.Address, error) {
	return k.derive(k.deposits, k.byIndex, i, "deposit address")
}

// TokenDeposit returns the key and address of token-deposit address i (m/44'/60'/0'/1/i).
func (k *Keys) TokenDeposit(i uint32) (*ecdsa.PrivateKey, common.Address, error) {
	return k.derive(k.tokens, k.byTokenIndex, i, "token-deposit address")
}

// derive returns child i of parent, memoised in cache (guarded by k.mu) and in byAddr.
func (k *Keys) derive(parent *hdkeychain.ExtendedKey, cache map[uint32]derived, i uint32, what string) (*ecdsa.PrivateKey, common.Address, error) {
	k.mu.RLock()
	d, ok := cache[i]
	k.mu.RUnlock()
	if ok {
		return d.Key, d.Address, nil
	}
	if i >= hdkeychain.HardenedKeyStart {
		return nil, common.Address{}, fmt.Errorf("%w (got %d)", ErrIndex, i)
	}
	ext, err := parent.Derive(i)
	if err != nil {
		// ErrInvalidChild: probability below 2^-127 per index.
		return nil, common.Address{}, fmt.Errorf("wallet: %s %d: %w", what, i, err)
	}
	d, err = toKey(ext)
	ext.Zero()
	if err != nil {
		return nil, common.Address{}, fmt.Errorf("wallet: %s %d: %w", what, i, err)
	}
	k.mu.Lock()
	if prev, ok := cache[i]; ok {
		d = prev // another goroutine derived it first: hand out one key object
	} else {
		cache[i] = d
		k.byAddr[d.Address] = d.Key
	}
	k.mu.Unlock()
	return d.Key, d.Address, nil
}

// HotWallet is the payout wallet (m/44'/60'/1'/0/0).
func (k *Keys) HotWallet() (*ecdsa.PrivateKey, common.Address) { return k.hot.Key, k.hot.Address }

// GasTank funds ERC20 deposit addresses with gas before their sweep (m/44'/60'/2'/0/0).
func (k *Keys) GasTank() (*ecdsa.PrivateKey, common.Address) {
	return k.gasTank.Key, k.gasTank.Address
}

// DevBankroll receives sweeps in `coffer dev` (m/44'/60'/3'/0/0); production bankrolls are
// operator-owned addresses from the chains file.
func (k *Keys) DevBankroll() (*ecdsa.PrivateKey, common.Address) {
	return k.devBankroll.Key, k.devBankroll.Address
}

// Signer returns the key of addr if this process has derived it: a service wallet, or a
// deposit address already asked for with Deposit or TokenDeposit.
func (k *Keys) Signer(addr common.Address) (*ecdsa.PrivateKey, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	key, ok := k.byAddr[addr]
	return key, ok
}

// String keeps key material out of logs and error messages.
func (k *Keys) String() string { return "wallet.Keys{…}" }

// GoString keeps key material out of %#v.
func (k *Keys) GoString() string { return k.String() }
