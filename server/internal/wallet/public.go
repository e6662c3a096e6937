package wallet

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Public is the public half of the service's HD wallet: deposit addresses, derived from the
// deposit account's extended public key (m/44'/60'/0', whose non-hardened children 0/i are the
// deposit addresses), and the service wallets' addresses. It holds no private key and has no
// way to sign: API replicas run on it, so a compromised API process gives away no funds.
type Public struct {
	// deposits is m/44'/60'/0'/0 and tokens m/44'/60'/0'/1, public only.
	deposits, tokens *hdkeychain.ExtendedKey
	record           PublicRecord
}

// PublicRecord is what is stored (sealed, so it is authenticated by the master key) beside the
// seed for API replicas: the account xpub and the service wallets' addresses, which are on
// hardened paths and so cannot be derived from the xpub.
type PublicRecord struct {
	// DepositXPub is the extended public key of m/44'/60'/0' (BIP32 serialisation, "xpub…").
	DepositXPub string         `json:"depositXpub"`
	HotWallet   common.Address `json:"hotWallet"`
	GasTank     common.Address `json:"gasTank"`
	DevBankroll common.Address `json:"devBankroll"`
}

// NewPublic checks a record and returns its wallet. The xpub must be public: a private
// extended key is refused, so nothing that reaches an API replica this way can sign.
func NewPublic(r PublicRecord) (*Public, error) {
	account, err := hdkeychain.NewKeyFromString(r.DepositXPub)
	if err != nil {
		return nil, fmt.Errorf("wallet: deposit account xpub: %w", err)
	}
	if account.IsPrivate() {
		return nil, errors.New("wallet: the deposit account key must be an xpub, not a private key")
	}
	if !account.IsForNet(&chaincfg.MainNetParams) || account.Depth() != 3 || account.ChildIndex() != h(accountDeposits) {
		return nil, errors.New("wallet: the deposit account xpub is not m/44'/60'/0'")
	}
	deposits, err := account.Derive(chainDeposits)
	if err != nil {
		return nil, fmt.Errorf("wallet: deposit chain m/44'/60'/0'/0: %w", err)
	}
	tokens, err := account.Derive(chainTokenDeposits)
	if err != nil {
		return nil, fmt.Errorf("wallet: token-deposit chain m/44'/60'/0'/1: %w", err)
	}
	return &Public{deposits: deposits, tokens: tokens, record: r}, nil
}

// ParsePublic reads a record stored by MarshalRecord.
func ParsePublic(raw []byte) (*Public, error) {
	var r PublicRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("wallet: public record: %w", err)
	}
	return NewPublic(r)
}

// Record is what NewPublic was given.
func (p *Public) Record() PublicRecord { return p.record }

// MarshalRecord is the stored form of the record.
func (p *Public) MarshalRecord() []byte {
	b, err := json.Marshal(p.record)
	if err != nil {
		panic(err) // strings and addresses only
	}
	return b
}

// DepositAddress is deposit address i (m/44'/60'/0'/0/i), derived from public keys only.
func (p *Public) DepositAddress(i uint32) (common.Address, error) {
	return publicChild(p.deposits, i, "deposit address")
}

// TokenDepositAddress is token-deposit address i (m/44'/60'/0'/1/i), derived from public keys
// only.
func (p *Public) TokenDepositAddress(i uint32) (common.Address, error) {
	return publicChild(p.tokens, i, "token-deposit address")
}

// publicChild is the address of parent's non-hardened child i.
func publicChild(parent *hdkeychain.ExtendedKey, i uint32, what string) (common.Address, error) {
	if i >= hdkeychain.HardenedKeyStart {
		return common.Address{}, fmt.Errorf("%w (got %d)", ErrIndex, i)
	}
	child, err := parent.Derive(i)
	if err != nil {
		return common.Address{}, fmt.Errorf("wallet: %s %d: %w", what, i, err)
	}
	pub, err := child.ECPubKey()
	if err != nil {
		return common.Address{}, fmt.Errorf("wallet: %s %d: %w", what, i, err)
	}
	key, err := crypto.UnmarshalPubkey(pub.SerializeUncompressed())
	if err != nil {
		return common.Address{}, fmt.Errorf("wallet: %s %d: %w", what, i, err)
	}
	return crypto.PubkeyToAddress(*key), nil
}

// HotWalletAddress is the payout wallet's address (m/44'/60'/1'/0/0).
func (p *Public) HotWalletAddress() common.Address { return p.record.HotWallet }

// GasTankAddress is the gas tank's address (m/44'/60'/2'/0/0).
func (p *Public) GasTankAddress() common.Address { return p.record.GasTank }

// DevBankrollAddress is `coffer dev`'s bankroll address (m/44'/60'/3'/0/0).
func (p *Public) DevBankrollAddress() common.Address { return p.record.DevBankroll }
