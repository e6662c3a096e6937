// Package batchsweep builds EIP-7702 batch sweeps: one gas-tank transaction that sweeps the
// tokens of many deposit addresses to the bankroll, with no gas top-up and no ETH dust left on
// them.
//
// Each token-deposit address delegates once to the chain's Sweeper contract
// (contracts/src/Sweeper.sol) by signing an EIP-7702 authorization with its HD key. The gas
// tank's transaction carries the authorizations of the addresses not yet delegated and calls
// Sweeper.batch, which calls sweep on each address. An address whose delegation is missing,
// cleared or replaced when the transaction runs is skipped by the contract (Skipped event), the
// others are swept; Plan re-authorizes it the next time.
//
// This package signs and builds; it stores and broadcasts nothing. The chaintx engine owns
// store-before-broadcast and nonces (wiring it in is planned, see docs/sweeps-eip7702.md).
package batchsweep

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
	"golang.org/x/sync/errgroup"

	"github.com/cofferhq/coffer/server/internal/contracts"
)

// MaxBatch bounds the accounts of one batch, so one transaction's gas stays far below a block's.
const MaxBatch = 200

// Account is one deposit address to sweep and what to sweep from it.
type Account struct {
	Address common.Address
	Assets  []Asset
}

// Asset is an amount of one token to sweep; the zero Token stands for the native currency.
// A nil Amount sweeps the whole balance; an exact amount (the engine's confirmed deposits)
// leaves the rest, and a balance short of it (a deposit that left the chain) makes the
// contract skip the account. Fee (nil: none) of it goes to the Sweeper's fee address, the
// rest to the bankroll.
type Asset struct {
	Token  common.Address
	Amount *big.Int
	Fee    *big.Int
}

// fee is the asset's fee, 0 when nil.
func (a Asset) fee() *big.Int {
	if a.Fee == nil {
		return new(big.Int)
	}
	return a.Fee
}

// wholeBalance is the contract's type(uint256).max: sweep the whole balance.
func wholeBalance() *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
}

// State is what Plan reads from the chain (ethclient.Client and simulated.Client have it).
type State interface {
	CodeAt(ctx context.Context, account common.Address, block *big.Int) ([]byte, error)
	NonceAt(ctx context.Context, account common.Address, block *big.Int) (uint64, error)
}

// Keys gives the private key of a deposit address (deposit.KeyRing, chaintx.Keys).
type Keys interface {
	Key(ctx context.Context, addr common.Address) (*ecdsa.PrivateKey, error)
}

// Designator is the code of an account delegated to sweeper: 0xef0100 || sweeper.
func Designator(sweeper common.Address) []byte { return types.AddressToDelegation(sweeper) }

// Delegated reports whether code delegates to sweeper.
func Delegated(code []byte, sweeper common.Address) bool {
	return bytes.Equal(code, Designator(sweeper))
}

// Authorize signs the delegation of key's address to sweeper on chainID. nonce is the
// address's current account nonce (a deposit address that never sent a transaction: 0). The
// chain id is never 0 (valid on every chain) because the Sweeper's address and its immutable
// gas tank and bankroll are per chain.
func Authorize(key *ecdsa.PrivateKey, chainID *big.Int, sweeper common.Address, nonce uint64) (types.SetCodeAuthorization, error) {
	if chainID == nil || chainID.Sign() <= 0 {
		return types.SetCodeAuthorization{}, errors.New("batchsweep: chain id must be positive")
	}
	if sweeper == (common.Address{}) {
		// Delegating to the zero address clears a delegation: never what a sweep wants.
		return types.SetCodeAuthorization{}, errors.New("batchsweep: zero sweeper address")
	}
	auth, err := types.SignSetCode(key, types.SetCodeAuthorization{
		ChainID: *uint256.MustFromBig(chainID),
		Address: sweeper,
		Nonce:   nonce,
	})
	if err != nil {
		return types.SetCodeAuthorization{}, fmt.Errorf("batchsweep: sign authorization of %s: %w", crypto.PubkeyToAddress(key.PublicKey).Hex(), err)
	}
	return auth, nil
}

// Plan is one batch sweep, ready to be signed by the gas tank.
type Plan struct {
	Sweeper common.Address
	// Accounts are swept in this order.
	Accounts []Account
	// Authorizations delegate the accounts that were not delegated to Sweeper when planned
	// (Authorized lists them, in the same order).
	Authorizations []types.SetCodeAuthorization
	Authorized     []common.Address
	// Data is the Sweeper.batch call.
	Data []byte
}

// Build plans a batch: it reads each account's code and nonce at the latest block and signs an
// authorization for every account not delegated to sweeper (never delegated, cleared or
// replaced). Accounts must be distinct, non-empty and at most MaxBatch.
func Build(ctx context.Context, st State, keys Keys, chainID *big.Int, sweeper common.Address, accounts []Account) (Plan, error) {
	if len(accounts) == 0 || len(accounts) > MaxBatch {
		return Plan{}, fmt.Errorf("batchsweep: %d accounts in a batch, want 1..%d", len(accounts), MaxBatch)
	}
	p := Plan{Sweeper: sweeper, Accounts: accounts}
	seen := make(map[common.Address]bool, len(accounts))
	addrs := make([]common.Address, len(accounts))
	tokens := make([][]common.Address, len(accounts))
	amounts := make([][]*big.Int, len(accounts))
	fees := make([][]*big.Int, len(accounts))
	for i, a := range accounts {
		if seen[a.Address] {
			return Plan{}, fmt.Errorf("batchsweep: %s twice in one batch", a.Address.Hex())
		}
		seen[a.Address] = true
		if len(a.Assets) == 0 {
			return Plan{}, fmt.Errorf("batchsweep: nothing to sweep from %s", a.Address.Hex())
		}
		addrs[i] = a.Address
		assets := make(map[common.Address]bool, len(a.Assets))
		for _, as := range a.Assets {
			if assets[as.Token] {
				return Plan{}, fmt.Errorf("batchsweep: %s twice for %s", as.Token.Hex(), a.Address.Hex())
			}
			assets[as.Token] = true
			amount := as.Amount
			switch {
			case amount == nil:
				amount = wholeBalance()
			case amount.Sign() <= 0 || amount.Cmp(wholeBalance()) >= 0:
				return Plan{}, fmt.Errorf("batchsweep: amount %v of %s from %s out of range", amount, as.Token.Hex(), a.Address.Hex())
			}
			if fee := as.fee(); fee.Sign() < 0 || as.Amount != nil && fee.Cmp(as.Amount) > 0 || as.Amount == nil && fee.Sign() > 0 {
				return Plan{}, fmt.Errorf("batchsweep: fee %v of %s from %s: not within the exact amount", fee, as.Token.Hex(), a.Address.Hex())
			}
			tokens[i] = append(tokens[i], as.Token)
			amounts[i] = append(amounts[i], amount)
			fees[i] = append(fees[i], as.fee())
		}
	}
	// Each account's code, nonce and key are read concurrently (a few RPC calls and a
	// database read each): a batch forms in about one round trip, not one per account.
	auths := make([]*types.SetCodeAuthorization, len(accounts))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readers)
	for i, a := range accounts {
		g.Go(func() error {
			auth, err := authorizeIfNeeded(gctx, st, keys, chainID, sweeper, a.Address)
			auths[i] = auth
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Plan{}, err
	}
	for i, auth := range auths {
		if auth != nil {
			p.Authorizations = append(p.Authorizations, *auth)
			p.Authorized = append(p.Authorized, accounts[i].Address)
		}
	}
	p.Data = contracts.NewSweeper().PackBatch(addrs, tokens, amounts, fees)
	return p, nil
}

// readers bounds the concurrent chain reads of Build.
const readers = 8

// authorizeIfNeeded signs the delegation of addr to sweeper unless it is delegated to it
// already (nil): never delegated, cleared, or delegated elsewhere.
func authorizeIfNeeded(ctx context.Context, st State, keys Keys, chainID *big.Int, sweeper, addr common.Address) (*types.SetCodeAuthorization, error) {
	code, err := st.CodeAt(ctx, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("batchsweep: code of %s: %w", addr.Hex(), err)
	}
	if Delegated(code, sweeper) {
		return nil, nil //nolint:nilnil // nil: no authorization needed
	}
	if len(code) > 0 {
		if _, ok := types.ParseDelegation(code); !ok {
			// A contract cannot sign; an HD deposit address never has contract code.
			return nil, fmt.Errorf("batchsweep: %s is a contract, not a deposit address", addr.Hex())
		}
	}
	nonce, err := st.NonceAt(ctx, addr, nil)
	if err != nil {
		return nil, fmt.Errorf("batchsweep: nonce of %s: %w", addr.Hex(), err)
	}
	key, err := keys.Key(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("batchsweep: key of %s: %w", addr.Hex(), err)
	}
	if got := crypto.PubkeyToAddress(key.PublicKey); got != addr {
		return nil, fmt.Errorf("batchsweep: key for %s belongs to %s", addr.Hex(), got.Hex())
	}
	auth, err := Authorize(key, chainID, sweeper, nonce)
	if err != nil {
		return nil, err
	}
	return &auth, nil
}

// Fees are a transaction's EIP-1559 fees and gas limit.
type Fees struct {
	Tip, FeeCap *big.Int
	Gas         uint64
}

// TxData is the gas tank's transaction for p: a SetCodeTx when it carries authorizations,
// else a DynamicFeeTx (a SetCodeTx with an empty authorization list is invalid).
func (p Plan) TxData(chainID *big.Int, nonce uint64, f Fees) types.TxData {
	if len(p.Authorizations) == 0 {
		return &types.DynamicFeeTx{
			ChainID: new(big.Int).Set(chainID), Nonce: nonce,
			GasTipCap: new(big.Int).Set(f.Tip), GasFeeCap: new(big.Int).Set(f.FeeCap), Gas: f.Gas,
			To: &p.Sweeper, Data: p.Data,
		}
	}
	return &types.SetCodeTx{
		ChainID: uint256.MustFromBig(chainID), Nonce: nonce,
		GasTipCap: uint256.MustFromBig(f.Tip), GasFeeCap: uint256.MustFromBig(f.FeeCap), Gas: f.Gas,
		To: p.Sweeper, Value: new(uint256.Int), Data: p.Data,
		AuthList: append([]types.SetCodeAuthorization(nil), p.Authorizations...),
	}
}

// CallMsg is p as a call from the gas tank, for gas estimation (the node applies the
// authorizations first, so the batch sees the accounts delegated).
func (p Plan) CallMsg(gasTank common.Address) ethereum.CallMsg {
	return ethereum.CallMsg{From: gasTank, To: &p.Sweeper, Data: p.Data, AuthorizationList: p.Authorizations}
}

// DeployData is the creation code of a Sweeper that obeys gasTank, pays bankroll and sends
// fees to feeAddress (the zero address: no fees).
func DeployData(gasTank, bankroll, feeAddress common.Address) []byte {
	return append(common.FromHex(contracts.SweeperMetaData.Bin),
		contracts.NewSweeper().PackConstructor(gasTank, bankroll, feeAddress)...)
}

// Verify checks that the Sweeper at sweeper obeys gasTank, pays bankroll and sends fees to
// feeAddress (the zero address: it takes no fees): a configured address that does not is
// refused before anything is delegated to it. A Sweeper of an earlier version (no fee
// address) is refused as not a Sweeper.
func Verify(ctx context.Context, caller bind.ContractCaller, sweeper, gasTank, bankroll, feeAddress common.Address) error {
	sw := contracts.NewSweeper()
	inst := bind.NewBoundContract(sweeper, sw.GetABI(), caller, nil, nil)
	opts := &bind.CallOpts{Context: ctx}
	gotTank, err := bind.Call(inst, opts, sw.PackGasTank(), sw.UnpackGasTank)
	if err != nil {
		return fmt.Errorf("batchsweep: %s is not a Sweeper: %w", sweeper.Hex(), err)
	}
	gotBankroll, err := bind.Call(inst, opts, sw.PackBankroll(), sw.UnpackBankroll)
	if err != nil {
		return fmt.Errorf("batchsweep: %s is not a Sweeper: %w", sweeper.Hex(), err)
	}
	gotFee, err := bind.Call(inst, opts, sw.PackFeeAddress(), sw.UnpackFeeAddress)
	if err != nil {
		return fmt.Errorf("batchsweep: %s is not a Sweeper of this version (no feeAddress): %w", sweeper.Hex(), err)
	}
	if gotTank != gasTank || gotBankroll != bankroll || gotFee != feeAddress {
		return fmt.Errorf("batchsweep: Sweeper %s obeys %s, pays %s and sends fees to %s; want %s, %s and %s",
			sweeper.Hex(), gotTank.Hex(), gotBankroll.Hex(), gotFee.Hex(), gasTank.Hex(), bankroll.Hex(), feeAddress.Hex())
	}
	return nil
}
