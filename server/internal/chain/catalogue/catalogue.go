// Package catalogue holds presets for public EVM networks: their USDT and USDC contracts, the
// Chainlink USD feeds of their assets, a recommended confirmation policy and a public RPC
// endpoint. `coffer chains init` turns presets into a chains file (chain.Network); the
// operator supplies the bankroll and, for production, their own RPC endpoints.
//
// The presets are data: presets.yaml, embedded, where every address is written in its EIP-55
// (checksummed) form under the sources it was taken from; a test checks the checksums,
// decimals and duplicates.
package catalogue

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"go.yaml.in/yaml/v3"

	"github.com/cofferhq/coffer/server/internal/chain"
)

// Token is an ERC-20 contract of a preset.
type Token struct {
	Symbol   string `yaml:"symbol"`
	Address  string `yaml:"address"` // EIP-55
	Decimals int32  `yaml:"decimals"`
}

// Preset is one public network.
type Preset struct {
	// Name is what --preset takes ("base", "base-sepolia").
	Name    string `yaml:"name"`
	Title   string `yaml:"title"`
	ChainID int64  `yaml:"chainId"`
	// Mainnet is, for a testnet, the name of its mainnet's preset ("" for a mainnet).
	Mainnet string `yaml:"mainnet"`
	// RPC is a public endpoint, good for trying things out: rate-limited and without any
	// guarantee. Production passes its provider's URLs (--rpc).
	RPC string `yaml:"rpc"`
	// Finalized waits for the chain's finalized block; otherwise Confirmations blocks.
	Finalized      bool    `yaml:"finalized"`
	Confirmations  int32   `yaml:"confirmations"`
	NativeSymbol   string  `yaml:"nativeSymbol"`
	NativeDecimals int32   `yaml:"nativeDecimals"`
	Tokens         []Token `yaml:"tokens"`
	// Feeds are Chainlink AggregatorV3 USD feeds (proxies) by asset symbol, EIP-55.
	Feeds map[string]string `yaml:"feeds"`
}

// Testnet reports whether the preset is a public testnet.
func (p Preset) Testnet() bool { return p.Mainnet != "" }

//go:embed presets.yaml
var presetsYAML []byte

// parsePresets reads a presets file: mainnets, then testnets, each in the file's order. A
// field it does not know is an error, so a misspelt key cannot drop a value silently.
func parsePresets(data []byte) ([]Preset, error) {
	var file struct {
		Mainnets []Preset `yaml:"mainnets"`
		Testnets []Preset `yaml:"testnets"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("presets: %w", err)
	}
	return slices.Concat(file.Mainnets, file.Testnets), nil
}

// All is every preset: mainnets, then testnets, each ordered as presets.yaml lists them. It
// is a new slice each call (parsed afresh: nothing a caller changes is shared).
func All() []Preset {
	all, err := parsePresets(presetsYAML)
	if err != nil {
		panic(err) // the embedded file is fixed at build time, and its tests parse it
	}
	return all
}

// Names is every preset's name, in All's order.
func Names() []string {
	all := All()
	names := make([]string, 0, len(all))
	for _, p := range all {
		names = append(names, p.Name)
	}
	return names
}

// UnknownError is a preset name that is in no preset.
type UnknownError struct{ Name string }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("unknown preset %q (known: %s)", e.Name, strings.Join(Names(), ", "))
}

// Lookup finds a preset by name or chain id ("base", "8453"), case-insensitively.
func Lookup(name string) (Preset, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, p := range All() {
		if p.Name == key || strconv.FormatInt(p.ChainID, 10) == key {
			return p, nil
		}
	}
	return Preset{}, &UnknownError{Name: name}
}

// Select looks up each name of a comma-separated list ("ethereum,base"); a preset named
// twice is an error, as a chains file lists a chain once.
func Select(list string) ([]Preset, error) {
	var out []Preset
	seen := map[int64]bool{}
	for name := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		p, err := Lookup(name)
		if err != nil {
			return nil, err
		}
		if seen[p.ChainID] {
			return nil, fmt.Errorf("preset %s named twice", p.Name)
		}
		seen[p.ChainID] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no preset named (known: %s)", strings.Join(Names(), ", "))
	}
	return out, nil
}

// Network is the preset as a chains file's network: rpcURLs (the preset's public endpoint
// when empty) and the bankroll that receives swept deposits.
func (p Preset) Network(rpcURLs []string, bankroll common.Address) chain.Network {
	if len(rpcURLs) == 0 {
		rpcURLs = []string{p.RPC}
	}
	n := chain.Network{
		ChainID: p.ChainID, Name: p.Title, RPCURLs: slices.Clone(rpcURLs),
		Confirmations: p.Confirmations, Finalized: p.Finalized,
		NativeSymbol: p.NativeSymbol, NativeDecimals: p.NativeDecimals,
		BankrollAddress: bankroll, Tokens: []chain.Token{},
	}
	for _, t := range p.Tokens {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: common.HexToAddress(t.Address), Decimals: t.Decimals})
	}
	if len(p.Feeds) > 0 {
		n.PriceFeeds = map[string]common.Address{}
		for _, symbol := range slices.Sorted(maps.Keys(p.Feeds)) {
			n.PriceFeeds[symbol] = common.HexToAddress(p.Feeds[symbol])
		}
	}
	return n
}
