// Package chain describes the EVM networks Coffer serves. The chains file (COFFER_CHAINS_FILE)
// is a JSON array of networks; `coffer dev` builds the list from its embedded chain.
package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"
)

// Token is an ERC20 contract accepted on a network.
type Token struct {
	Symbol          string         `json:"symbol"`
	ContractAddress common.Address `json:"contractAddress"`
	Decimals        int32          `json:"decimals"`
	// MinDeposit is the smallest amount swept on its own, in token units ("1.5"); see
	// Network.MinDepositUSD for the default.
	MinDeposit string `json:"minDeposit,omitempty"`
}

// Network is one EVM chain of the chains file. validate fills defaults in (pointer); the
// readers take a value so that a Network in a map or a slice answers directly.
//
//nolint:recvcheck // see above
type Network struct {
	ChainID        int64    `json:"chainId"`
	Name           string   `json:"name"`
	RPCURLs        []string `json:"rpcUrls"`
	Confirmations  int32    `json:"confirmations"`
	Finalized      bool     `json:"finalized"`
	NativeSymbol   string   `json:"nativeSymbol"`
	NativeDecimals int32    `json:"nativeDecimals"`
	Tokens         []Token  `json:"tokens"`
	// BankrollAddress receives swept deposits.
	BankrollAddress common.Address `json:"bankrollAddress"`
	// FeeAddress receives the operators' deposit fees; without it, fees stay in the deposit
	// addresses (service-controlled) until collected.
	FeeAddress common.Address `json:"feeAddress,omitzero"`
	// StartBlock is where scanning begins the first time Coffer sees this chain; by default 256
	// blocks before the head, so payments made just before the first scan are not missed.
	StartBlock *uint64 `json:"startBlock,omitempty"`
	// PriceFeeds are Chainlink AggregatorV3 USD feeds on this network, by asset symbol
	// ("ETH": "0x5f4e…"). Assets without a feed are priced from COFFER_STATIC_PRICES.
	PriceFeeds map[string]common.Address `json:"priceFeeds,omitempty"`
	// NativeMinDeposit is the smallest native deposit swept on its own, in token units
	// ("0.0005"). A smaller deposit is recorded (BELOW_MINIMUM) and credited once the deposit
	// address's unswept balance of the asset reaches the minimum.
	NativeMinDeposit string `json:"nativeMinDeposit,omitempty"`
	// MinDepositUSD is the minimum of every asset that sets none, as a USD value converted at
	// the asset's current price ("1.00" when unset; "0" sweeps everything). With no price
	// available, such an asset has no minimum.
	MinDepositUSD string `json:"minDepositUsd,omitempty"`
	// TraceInternalTransfers finds native transfers made by contracts (a Safe, an exchange's
	// batch payout) through the node's trace API (debug_traceBlockByHash with the callTracer):
	// without it only transactions that pay a deposit address directly are seen. The RPC
	// endpoints must serve the debug namespace for every block scanned or replayed.
	TraceInternalTransfers bool `json:"traceInternalTransfers,omitempty"`
	// SweepMethod is how ERC20 deposits are swept (SweepTopUp when unset). With SweepEIP7702,
	// token deposits go to per-user token-deposit addresses that the Sweeper contract at
	// SweeperAddress sweeps in batches (docs/sweeps-eip7702.md); native deposits keep plain
	// addresses either way.
	SweepMethod SweepMethod `json:"sweepMethod,omitempty"`
	// SweeperAddress is the chain's Sweeper contract, required with SweepEIP7702 and refused
	// otherwise.
	SweeperAddress common.Address `json:"sweeperAddress,omitzero"`
}

// SweepMethod is how a network's ERC20 deposits are swept.
type SweepMethod string

const (
	// SweepTopUp sends each deposit address the gas for its own sweep transaction. It works on
	// every chain (no Pectra needed), and every address ever handed out stays a plain EOA.
	SweepTopUp SweepMethod = "topup"
	// SweepEIP7702 delegates token-deposit addresses to the Sweeper contract and sweeps many
	// in one transaction from the gas tank. The chain must run Prague (Pectra).
	SweepEIP7702 SweepMethod = "eip7702"
)

// Batched reports whether the network sweeps token deposits in EIP-7702 batches, so token
// deposits go to token-deposit addresses.
func (n Network) Batched() bool { return n.SweepMethod == SweepEIP7702 }

// DefaultMinDepositUSD is MinDepositUSD's default.
const DefaultMinDepositUSD = "1.00"

// DevChainID is the chain id of `coffer dev`'s chain (go-ethereum's simulated backend fixes
// it). Here rather than in devchain, which release builds leave out: the configuration checks
// it (a dev-only setting is refused on any other chain).
const DevChainID int64 = 1337

// MinDeposit is an asset's explicit minimum in token units ("" when the USD default applies).
func (n Network) MinDeposit(symbol string) string {
	if strings.EqualFold(symbol, n.NativeSymbol) {
		return n.NativeMinDeposit
	}
	for _, t := range n.Tokens {
		if strings.EqualFold(symbol, t.Symbol) {
			return t.MinDeposit
		}
	}
	return ""
}

// Registry is the validated, ordered list of networks.
type Registry struct{ networks []Network }

// LoadFile reads and validates a chains file.
func LoadFile(path string) (*Registry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("chains file: %w", err)
	}
	var networks []Network
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&networks); err != nil {
		return nil, fmt.Errorf("chains file %s: %w", path, err)
	}
	r, err := NewRegistry(networks)
	if err != nil {
		return nil, fmt.Errorf("chains file %s: %w", path, err)
	}
	// A file is what an operator wrote: without a bankroll, sweeps would have nowhere to go
	// and every deposit would stall at its address, so it is refused at start-up.
	for _, n := range r.Networks() {
		if n.BankrollAddress == (common.Address{}) {
			return nil, fmt.Errorf("chains file %s: chain %d (%s): bankrollAddress is required (where swept deposits go; `coffer chains init --bankroll 0x…`)",
				path, n.ChainID, n.Name)
		}
	}
	return r, nil
}

// NewRegistry validates networks and orders them by chain id.
func NewRegistry(networks []Network) (*Registry, error) {
	seen := map[int64]bool{}
	for i := range networks {
		n := &networks[i]
		if err := n.validate(); err != nil {
			return nil, fmt.Errorf("chain %d (%s): %w", n.ChainID, n.Name, err)
		}
		if seen[n.ChainID] {
			return nil, fmt.Errorf("chain %d listed twice", n.ChainID)
		}
		seen[n.ChainID] = true
	}
	slices.SortFunc(networks, func(a, b Network) int { return int(a.ChainID - b.ChainID) })
	return &Registry{networks: networks}, nil
}

func (n *Network) validate() error {
	if n.ChainID <= 0 {
		return errors.New("chainId must be positive")
	}
	if strings.TrimSpace(n.Name) == "" {
		return errors.New("name is required")
	}
	if len(n.RPCURLs) == 0 {
		return errors.New("at least one RPC URL is required")
	}
	for _, raw := range n.RPCURLs {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return fmt.Errorf("RPC URL %q must be an http(s) or ws(s) URL", raw)
		}
	}
	if n.Confirmations < 0 || (n.Confirmations == 0 && !n.Finalized) {
		return errors.New("confirmations must be positive, or finalized true")
	}
	if n.Finalized && n.Confirmations > 0 {
		// The finalized block would be waited for and the depth silently ignored.
		return fmt.Errorf("confirmations %d with finalized true: set one of them (finalized with confirmations 0)", n.Confirmations)
	}
	if n.NativeSymbol == "" {
		return errors.New("nativeSymbol is required")
	}
	if n.NativeDecimals == 0 {
		n.NativeDecimals = 18
	}
	if n.NativeDecimals < 0 || n.NativeDecimals > 36 {
		// No RPC call can check it (tokens' decimals() are checked at start-up), and every native
		// amount is scaled by it: -1 would credit 1 wei as 10 ETH.
		return errors.New("nativeDecimals must be 0..36 (18 on EVM chains; unset is 18)")
	}
	if n.MinDepositUSD == "" {
		n.MinDepositUSD = DefaultMinDepositUSD
	}
	for what, v := range map[string]string{"nativeMinDeposit": n.NativeMinDeposit, "minDepositUsd": n.MinDepositUSD} {
		if err := checkMinimum(v); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := n.validateSweep(); err != nil {
		return err
	}
	return n.validateTokens()
}

// validateTokens checks each token and that no symbol or contract is listed twice.
func (n *Network) validateTokens() error {
	symbols := map[string]bool{strings.ToUpper(n.NativeSymbol): true}
	// A contract's Transfer logs are one asset's: listed under two symbols, a payment made for
	// one would be recorded (priced, attributed to a session) as the other.
	contracts := map[common.Address]string{}
	for _, t := range n.Tokens {
		if err := checkMinimum(t.MinDeposit); err != nil {
			return fmt.Errorf("token %s: minDeposit: %w", t.Symbol, err)
		}
		if t.Symbol == "" || t.ContractAddress == (common.Address{}) {
			return fmt.Errorf("token %q needs a symbol and a contract address", t.Symbol)
		}
		if t.Decimals < 0 || t.Decimals > 36 {
			return fmt.Errorf("token %s: decimals must be 0..36", t.Symbol)
		}
		if first, ok := contracts[t.ContractAddress]; ok {
			return fmt.Errorf("token contract %s listed twice (%s, %s)", t.ContractAddress.Hex(), first, t.Symbol)
		}
		contracts[t.ContractAddress] = t.Symbol
		if symbols[strings.ToUpper(t.Symbol)] {
			return fmt.Errorf("symbol %s listed twice", t.Symbol)
		}
		symbols[strings.ToUpper(t.Symbol)] = true
	}
	return nil
}

// validateSweep defaults the sweep method to topup and checks the Sweeper goes with eip7702
// only: a Sweeper set on a topup chain would silently do nothing.
func (n *Network) validateSweep() error {
	switch n.SweepMethod {
	case "":
		n.SweepMethod = SweepTopUp
	case SweepTopUp, SweepEIP7702:
	default:
		return fmt.Errorf("sweepMethod %q: must be %q or %q", n.SweepMethod, SweepTopUp, SweepEIP7702)
	}
	hasSweeper := n.SweeperAddress != (common.Address{})
	switch {
	case n.SweepMethod == SweepEIP7702 && !hasSweeper:
		return errors.New("sweepMethod eip7702 needs sweeperAddress: the chain's Sweeper contract, built for this gas tank and bankroll (docs/sweeps-eip7702.md); without one, use sweepMethod topup")
	case n.SweepMethod == SweepTopUp && hasSweeper:
		return errors.New(`sweeperAddress is set but sweepMethod is topup: set "sweepMethod": "eip7702" to use the Sweeper, or remove sweeperAddress`)
	}
	return nil
}

func checkMinimum(v string) error {
	if v == "" {
		return nil
	}
	d, err := decimal.NewFromString(v)
	if err != nil || d.IsNegative() {
		return fmt.Errorf("%q must be a non-negative decimal", v)
	}
	return nil
}

// Networks returns every network, ordered by chain id.
func (r *Registry) Networks() []Network { return r.networks }

// Network returns the network with a chain id.
func (r *Registry) Network(chainID int64) (Network, bool) {
	for _, n := range r.networks {
		if n.ChainID == chainID {
			return n, true
		}
	}
	return Network{}, false
}

// Asset is what a user can pay or be paid in on a network: a token or the native currency.
type Asset struct {
	Symbol   string
	Decimals int32
	// Contract is the zero address for the native currency.
	Contract common.Address
	Native   bool
}

// Asset finds a currency (case-insensitive symbol) on a network.
func (n Network) Asset(symbol string) (Asset, bool) {
	if strings.EqualFold(symbol, n.NativeSymbol) {
		return Asset{Symbol: n.NativeSymbol, Decimals: n.NativeDecimals, Native: true}, true
	}
	for _, t := range n.Tokens {
		if strings.EqualFold(symbol, t.Symbol) {
			return Asset{Symbol: t.Symbol, Decimals: t.Decimals, Contract: t.ContractAddress}, true
		}
	}
	return Asset{}, false
}
