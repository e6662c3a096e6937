package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chain/catalogue"
)

const chainsUsage = "coffer chains init --preset NAME[,NAME…] --bankroll [CHAIN_ID=]0x… [--rpc CHAIN_ID=URL …] [--out FILE] | list | validate [--file FILE] | sweeper --chain-id ID"

// runChains is `coffer chains`: write a chains file from the presets, list them, or check a
// chains file against its RPC endpoints.
func runChains(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, chainsUsage)
	}
	switch args[0] {
	case "init":
		return runChainsInit(args[1:], out)
	case "list":
		return runChainsList(args[1:], out)
	case "validate":
		return runChainsValidate(ctx, args[1:], out)
	case "sweeper":
		return runChainsSweeper(ctx, args[1:], out)
	}
	return fmt.Errorf("%w: unknown subcommand %q: %s", errUsage, args[0], chainsUsage)
}

// assignment is a repeated CHAIN_ID=VALUE flag (or a bare VALUE for every chain, when the
// flag allows one).
type assignment struct {
	name    string
	all     string // the bare value, for every chain
	byChain map[int64][]string
	bare    bool // whether a bare value is allowed
}

func (a *assignment) set(v string) error {
	id, value, ok := strings.Cut(v, "=")
	if !ok {
		if !a.bare {
			return fmt.Errorf("want CHAIN_ID=VALUE, got %q", v)
		}
		if a.all != "" {
			return errors.New("given twice for every chain")
		}
		a.all = v
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("%q: the chain id must be a positive integer", v)
	}
	if a.byChain == nil {
		a.byChain = map[int64][]string{}
	}
	a.byChain[n] = append(a.byChain[n], strings.TrimSpace(value))
	return nil
}

var (
	hexAddress    = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	quotedAddress = regexp.MustCompile(`"0x[0-9a-f]{40}"`)
)

// parseAddress takes an address as an operator types it: 0x and 40 hex digits, all lower or
// all upper case, or mixed case with a valid EIP-55 checksum (a typo in a checksummed
// address is caught rather than sweeping funds to it). The zero address is refused.
func parseAddress(s string) (common.Address, error) {
	if !hexAddress.MatchString(s) {
		return common.Address{}, fmt.Errorf("%q is not an address (0x and 40 hex digits)", s)
	}
	a := common.HexToAddress(s)
	digits := s[2:]
	if digits != strings.ToLower(digits) && digits != strings.ToUpper(digits) && a.Hex() != s {
		return common.Address{}, fmt.Errorf("%s: the EIP-55 checksum does not match (a typo?); it would be %s", s, a.Hex())
	}
	if a == (common.Address{}) {
		return common.Address{}, errors.New("the zero address cannot be a bankroll")
	}
	return a, nil
}

func runChainsInit(args []string, out io.Writer) error {
	fs := newFlags("chains init")
	var presets []string
	rpcs := &assignment{name: "rpc"}
	bankrolls := &assignment{name: "bankroll", bare: true}
	fs.Func("preset", "comma-separated presets (`coffer chains list`), e.g. ethereum,base (required; repeatable)", func(v string) error {
		presets = append(presets, v)
		return nil
	})
	fs.Func("rpc", "CHAIN_ID=URL: an RPC endpoint of a chain, instead of the preset's public one (repeat for failover endpoints)", rpcs.set)
	fs.Func("bankroll", "0x… (every chain) or CHAIN_ID=0x…: the address swept deposits go to (required for every chain)", bankrolls.set)
	outPath := fs.String("out", "-", "file to write (- for standard output); an existing file is kept unless --force")
	force := fs.Bool("force", false, "overwrite --out")
	if err := parse(fs, args); err != nil {
		return err
	}
	selected, err := catalogue.Select(strings.Join(presets, ","))
	if err != nil {
		return fmt.Errorf("%w: --preset: %w", errUsage, err)
	}
	byID := map[int64]catalogue.Preset{}
	for _, p := range selected {
		byID[p.ChainID] = p
	}
	chosen := func() string {
		s := make([]string, 0, len(selected))
		for _, p := range selected {
			s = append(s, fmt.Sprintf("%s=%d", p.Name, p.ChainID))
		}
		return strings.Join(s, ", ")
	}
	for _, a := range []*assignment{rpcs, bankrolls} {
		for id := range a.byChain {
			if _, ok := byID[id]; !ok {
				return fmt.Errorf("%w: --%s %d=…: chain %d is not among the presets (%s)", errUsage, a.name, id, id, chosen())
			}
		}
	}
	var networks []chain.Network
	var public []string
	for _, p := range selected {
		raw := bankrolls.all
		if b := bankrolls.byChain[p.ChainID]; len(b) > 1 {
			return fmt.Errorf("%w: --bankroll %d=…: given %d times", errUsage, p.ChainID, len(b))
		} else if len(b) == 1 {
			raw = b[0]
		}
		if raw == "" {
			return fmt.Errorf("%w: no bankroll for chain %d (%s): pass --bankroll 0x… (every chain) or --bankroll %d=0x…",
				errUsage, p.ChainID, p.Name, p.ChainID)
		}
		bankroll, err := parseAddress(raw)
		if err != nil {
			return fmt.Errorf("%w: --bankroll for chain %d (%s): %w", errUsage, p.ChainID, p.Name, err)
		}
		if len(rpcs.byChain[p.ChainID]) == 0 {
			public = append(public, fmt.Sprintf("chain %d (%s) uses the public endpoint %s: rate-limited, for trying out; pass --rpc %d=URL for production",
				p.ChainID, p.Name, p.RPC, p.ChainID))
		}
		networks = append(networks, p.Network(rpcs.byChain[p.ChainID], bankroll))
	}
	// What LoadFile will check, checked now, so a bad --rpc is a usage error here.
	if _, err := chain.NewRegistry(append([]chain.Network(nil), networks...)); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	b, err := json.MarshalIndent(networks, "", "  ")
	if err != nil {
		return err
	}
	// go-ethereum writes addresses in lower case; the file shows them as explorers and the
	// sources do, checksummed.
	b = append(quotedAddress.ReplaceAllFunc(b, func(q []byte) []byte {
		return []byte(`"` + common.HexToAddress(string(q[1:len(q)-1])).Hex() + `"`)
	}), '\n')
	if *outPath == "-" {
		_, err := out.Write(b)
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if *force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	// 0600: RPC URLs often carry a provider's API key.
	f, err := os.OpenFile(*outPath, flags, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists (--force overwrites it)", errUsage, *outPath)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if _, err := chain.LoadFile(*outPath); err != nil {
		return fmt.Errorf("the written file does not load: %w", err)
	}
	fmt.Fprintf(out, "wrote %s: %s\n", *outPath, chosen())
	for _, p := range public {
		fmt.Fprintln(out, "note:", p)
	}
	fmt.Fprintf(out, "check it against the chains: coffer chains validate --file %s\n", *outPath)
	return nil
}

func runChainsList(args []string, out io.Writer) error {
	if err := parse(newFlags("chains list"), args); err != nil {
		return err
	}
	return printTable(out, "", "PRESET\tCHAIN ID\tNETWORK\tKIND\tWAITS FOR\tTOKENS\tUSD FEEDS\tPUBLIC RPC", catalogue.All(),
		func(p catalogue.Preset) []any {
			kind := "mainnet"
			if p.Testnet() {
				kind = "testnet of " + p.Mainnet
			}
			wait := "finalized block"
			if !p.Finalized {
				wait = fmt.Sprintf("%d confirmations", p.Confirmations)
			}
			tokens := make([]string, 0, len(p.Tokens))
			var feeds []string
			for _, t := range p.Tokens {
				tokens = append(tokens, fmt.Sprintf("%s(%d)", t.Symbol, t.Decimals))
			}
			for _, s := range append([]string{p.NativeSymbol}, "USDT", "USDC") {
				if _, ok := p.Feeds[s]; ok {
					feeds = append(feeds, s)
				}
			}
			return []any{p.Name, p.ChainID, p.Title, kind, wait, orDash(strings.Join(tokens, " ")), orDash(strings.Join(feeds, " ")), p.RPC}
		})
}

func runChainsValidate(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("chains validate")
	file := fs.String("file", os.Getenv("COFFER_CHAINS_FILE"), "chains file (default $COFFER_CHAINS_FILE)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return fmt.Errorf("%w: --file is required (or COFFER_CHAINS_FILE)", errUsage)
	}
	r, err := chain.LoadFile(*file)
	if err != nil {
		return err
	}
	if err := chain.Verify(ctx, r); err != nil {
		return err
	}
	for _, n := range r.Networks() {
		fmt.Fprintf(out, "chain %d (%s): %d RPC endpoint(s), %d token(s), %d price feed(s): ok\n", n.ChainID, n.Name, len(n.RPCURLs), len(n.Tokens), len(n.PriceFeeds))
		if n.SweepMethod == chain.SweepEIP7702 {
			fmt.Fprintf(out, "chain %d (%s): sweeperAddress %s pays the bankroll: ok (the gas tank it obeys: coffer chains sweeper --chain-id %d)\n",
				n.ChainID, n.Name, n.SweeperAddress.Hex(), n.ChainID)
		}
	}
	fmt.Fprintf(out, "%s matches its RPC endpoints\n", *file)
	return nil
}
