// Package devpay pays from `coffer dev`'s faucet the way a user's wallet does: a plain ether
// transfer, or an ERC20 transfer() signed with the faucet's key and sent over the chain's
// JSON-RPC. `coffer dev pay` and the widget's "Pay with the dev wallet" button (POST /dev/pay,
// served by `coffer dev` only) both use it; nothing in production does.
package devpay

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
)

// Backend is what a payment needs of a chain (chain.Client).
type Backend interface {
	Nonce(ctx context.Context, account common.Address, pending bool) (uint64, error)
	EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error)
	Fees(ctx context.Context) (tip, feeCap *big.Int, err error)
	Send(ctx context.Context, tx *types.Transaction) error
	Receipt(ctx context.Context, hash common.Hash) (*types.Receipt, error)
}

// Faucet pays from one key on one network.
type Faucet struct {
	key     *ecdsa.PrivateKey
	from    common.Address
	network chain.Network
	backend Backend
	// Poll is how often a sent payment's receipt is looked for.
	Poll time.Duration

	// mu serialises this process's payments, so that two never take the same nonce; other
	// processes paying from the key are met by retrying on the node's nonce errors.
	mu sync.Mutex
}

// New returns the faucet of key on a network.
func New(key *ecdsa.PrivateKey, network chain.Network, backend Backend) *Faucet {
	return &Faucet{key: key, from: crypto.PubkeyToAddress(key.PublicKey), network: network, backend: backend, Poll: 200 * time.Millisecond}
}

// Address is the faucet's address.
func (f *Faucet) Address() common.Address { return f.from }

// Payment is a checked payment, ready to send.
type Payment struct {
	To    common.Address
	Asset chain.Asset
	// Units is the amount in the asset's smallest unit (> 0).
	Units *big.Int
}

// Amount is the payment's amount in whole units with the asset's decimals ("25.000000").
func (p Payment) Amount() string { return rates.FormatUnits(p.Units, p.Asset.Decimals) }

// Receipt is a mined payment, as `coffer dev pay --json` and POST /dev/pay write it.
type Receipt struct {
	Hash     common.Hash
	ChainID  int64
	From, To common.Address
	Currency string
	Amount   string // whole units with the asset's decimals
	Block    uint64
}

// MarshalJSON writes the addresses in their EIP-55 form.
func (r Receipt) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Hash     string `json:"hash"`
		ChainID  int64  `json:"chainId"`
		From     string `json:"from"`
		To       string `json:"to"`
		Currency string `json:"currency"`
		Amount   string `json:"amount"`
		Block    uint64 `json:"block"`
	}{r.Hash.Hex(), r.ChainID, r.From.Hex(), r.To.Hex(), r.Currency, r.Amount, r.Block})
}

// Check validates a payment without touching the chain: to is a 0x-prefixed address (EIP-55
// when mixed-case, not zero), currency one of the network's assets, amount a positive decimal
// with at most the asset's decimals. Its errors are fault.InvalidArgument naming the field.
func Check(network chain.Network, to, currency, amount string) (Payment, error) {
	var p Payment
	addr, err := ParseAddress(to)
	if err != nil {
		return p, err
	}
	asset, ok := network.Asset(currency)
	if !ok {
		return p, fault.Invalid("currency", "unknown currency %q on chain %d: one of %s", currency, network.ChainID, strings.Join(Symbols(network), ", "))
	}
	units, err := ParseAmount(amount, asset.Decimals)
	if err != nil {
		return p, err
	}
	return Payment{To: addr, Asset: asset, Units: units}, nil
}

// Symbols are the currencies payable on a network: the native one first, then its tokens.
func Symbols(n chain.Network) []string {
	out := make([]string, 0, 1+len(n.Tokens))
	out = append(out, n.NativeSymbol)
	for _, t := range n.Tokens {
		out = append(out, t.Symbol)
	}
	return out
}

// ParseAddress reads a recipient: 0x and 40 hex digits, EIP-55 when mixed-case, not zero.
func ParseAddress(raw string) (common.Address, error) {
	if !strings.HasPrefix(raw, "0x") || !common.IsHexAddress(raw) {
		return common.Address{}, fault.Invalid("to", "%q is not an address (0x and 40 hex digits)", raw)
	}
	addr, digits := common.HexToAddress(raw), raw[2:]
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) && raw != addr.Hex() {
		return common.Address{}, fault.Invalid("to", "checksum mismatch (EIP-55): did you mean %s?", addr.Hex())
	}
	if addr == (common.Address{}) {
		return common.Address{}, fault.Invalid("to", "the zero address burns what it is sent")
	}
	return addr, nil
}

var plainDecimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// ParseAmount reads a positive amount in whole units ("25", "0.5", "25.000001") exactly, as
// smallest units of an asset with the given decimals. Signs, exponents, zero and digits beyond
// the asset's decimals are refused.
func ParseAmount(raw string, decimals int32) (*big.Int, error) {
	if !plainDecimal.MatchString(raw) {
		return nil, fault.Invalid("amount", "%q is not a positive decimal amount such as 25 or 0.5", raw)
	}
	d, err := decimal.NewFromString(raw)
	if err != nil {
		return nil, fault.Invalid("amount", "%q is not a decimal amount", raw)
	}
	units, err := rates.ToUnitsExact(d, decimals)
	if err != nil {
		return nil, fault.Invalid("amount", "%s has more than %d decimals", raw, decimals)
	}
	if units.Sign() <= 0 {
		return nil, fault.Invalid("amount", "must be more than zero")
	}
	return units, nil
}

// Check validates a payment on the faucet's network (see the package's Check).
func (f *Faucet) Check(to, currency, amount string) (Payment, error) {
	return Check(f.network, to, currency, amount)
}

// Pay sends a checked payment and waits until it is mined. A transaction the chain reverted
// is an error.
func (f *Faucet) Pay(ctx context.Context, p Payment) (Receipt, error) {
	tx, err := f.send(ctx, p)
	if err != nil {
		return Receipt{}, err
	}
	r, err := f.wait(ctx, tx.Hash())
	if err != nil {
		return Receipt{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return Receipt{}, fault.New(fault.FailedPrecondition, "the %s payment %s reverted on chain %d", p.Asset.Symbol, tx.Hash().Hex(), f.network.ChainID)
	}
	return Receipt{Hash: tx.Hash(), ChainID: f.network.ChainID, From: f.from, To: p.To, Currency: p.Asset.Symbol, Amount: p.Amount(),
		Block: r.BlockNumber.Uint64()}, nil
}

// send signs and broadcasts the payment at the faucet's pending nonce, again (at most three
// times) when another payer took that nonce first.
func (f *Faucet) send(ctx context.Context, p Payment) (*types.Transaction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	to, value, data := p.To, p.Units, []byte(nil)
	if !p.Asset.Native {
		to, value, data = p.Asset.Contract, new(big.Int), chain.ERC20Transfer(p.To, p.Units)
	}
	gas, err := f.backend.EstimateGas(ctx, ethereum.CallMsg{From: f.from, To: &to, Value: value, Data: data})
	if err != nil {
		if errors.Is(err, chain.ErrUnavailable) || fault.DependencyDown(err) {
			return nil, f.unavailable(err)
		}
		// The node's reason (a token transfer reverts when the faucet holds too little) is
		// what a developer needs; nothing here is secret.
		return nil, &fault.Error{Code: fault.FailedPrecondition, Cause: err,
			Message: fmt.Sprintf("the faucet %s cannot pay %s %s: %v", f.from.Hex(), p.Amount(), p.Asset.Symbol, err)}
	}
	signer := types.LatestSignerForChainID(big.NewInt(f.network.ChainID))
	for attempt := 0; ; attempt++ {
		nonce, err := f.backend.Nonce(ctx, f.from, true)
		if err != nil {
			return nil, f.unavailable(err)
		}
		tip, feeCap, err := f.backend.Fees(ctx)
		if err != nil {
			return nil, f.unavailable(err)
		}
		tx, err := types.SignNewTx(f.key, signer, &types.DynamicFeeTx{ChainID: big.NewInt(f.network.ChainID), Nonce: nonce,
			GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &to, Value: value, Data: data})
		if err != nil {
			return nil, err
		}
		err = f.backend.Send(ctx, tx)
		if err == nil {
			return tx, nil
		}
		if attempt < 3 && nonceTaken(err) {
			continue
		}
		return nil, f.unavailable(fmt.Errorf("send: %w", err))
	}
}

// nonceTaken: another transaction of the faucet holds the nonce (pending or mined).
func nonceTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "nonce too low") || strings.Contains(msg, "already known") ||
		strings.Contains(msg, "replacement transaction underpriced")
}

func (f *Faucet) wait(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	tick := time.NewTicker(f.Poll)
	defer tick.Stop()
	for {
		r, err := f.backend.Receipt(ctx, hash)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, f.unavailable(err)
		}
		select {
		case <-ctx.Done():
			return nil, &fault.Error{Code: fault.Unavailable, Cause: ctx.Err(),
				Message: fmt.Sprintf("payment %s sent, not mined yet: %v", hash.Hex(), ctx.Err())}
		case <-tick.C:
		}
	}
}

// unavailable reports a chain failure with the node's answer: the dev chain is down, or
// refused the transaction.
func (f *Faucet) unavailable(err error) error {
	if _, ok := errors.AsType[*fault.Error](err); ok {
		return err
	}
	return &fault.Error{Code: fault.Unavailable, Cause: err,
		Message: fmt.Sprintf("dev chain %d at %s: %v (is coffer dev running?)", f.network.ChainID, strings.Join(f.network.RPCURLs, ", "), err)}
}
