package chain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// VerifyMode is what start-up does with a chains file its RPC endpoints contradict
// (COFFER_CHAINS_VALIDATE).
type VerifyMode string

// Verify modes.
const (
	// VerifyStrict refuses to start: a wrong token contract or decimals would credit the
	// wrong amounts, an endpoint of another chain would sweep and pay on it.
	VerifyStrict VerifyMode = "strict"
	// VerifyWarn logs every problem and starts.
	VerifyWarn VerifyMode = "warn"
	// VerifyOff checks nothing.
	VerifyOff VerifyMode = "off"
)

// ParseVerifyMode reads a mode: strict, warn or off.
func ParseVerifyMode(s string) (VerifyMode, error) {
	switch m := VerifyMode(s); m {
	case VerifyStrict, VerifyWarn, VerifyOff:
		return m, nil
	}
	return "", fmt.Errorf("%q is not strict, warn or off", s)
}

// Check verifies the registry in a mode: strict returns Verify's error, warn logs each
// problem and returns nil, off does nothing.
func Check(ctx context.Context, r *Registry, mode VerifyMode, log *slog.Logger) error {
	if mode == VerifyOff || len(r.Networks()) == 0 {
		return nil
	}
	err := Verify(ctx, r)
	if err == nil {
		log.Info("chains file verified against its RPC endpoints", "chains", len(r.Networks()))
		return nil
	}
	if mode == VerifyWarn {
		for _, e := range unjoin(err) {
			log.Warn("chains file does not match its RPC endpoint (COFFER_CHAINS_VALIDATE=warn: starting anyway)", "error", e)
		}
		return nil
	}
	return err
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Verify checks every network against its RPC endpoints, the networks at once: each endpoint
// answers eth_chainId with the network's id; the finalized block is served when the network
// waits for it; each token contract has code and its decimals() agrees with the file; each
// price feed answers decimals() and latestRoundData() with a positive price; eth_getLogs
// answers for the tokens (the deposit scanner needs it). It returns every problem, joined,
// each naming its field: "chains file: chain 8453 tokens[1] (USDC) contractAddress 0x…: no
// code at this address".
func Verify(ctx context.Context, r *Registry) error {
	networks := r.Networks()
	found := make([][]error, len(networks))
	var wg sync.WaitGroup
	for i, n := range networks {
		wg.Go(func() { found[i] = verifyNetwork(ctx, n) })
	}
	wg.Wait()
	return errors.Join(slices.Concat(found...)...)
}

func verifyNetwork(ctx context.Context, n Network) []error {
	var errs []error
	fail := func(format string, args ...any) {
		for i, a := range args {
			if err, ok := a.(error); ok {
				args[i] = scrub(err)
			}
		}
		errs = append(errs, fmt.Errorf("chains file: chain %d "+format, append([]any{n.ChainID}, args...)...))
	}
	// Every endpoint, not just one: failover to an endpoint of another chain would sweep
	// and pay there.
	var good []string
	wrongChain := false
	for i, u := range n.RPCURLs {
		id, err := endpointChainID(ctx, u)
		switch {
		case err != nil:
			fail("rpcUrls[%d] (%s): eth_chainId: %w", i, redact(u), err)
		case id.Cmp(big.NewInt(n.ChainID)) != 0:
			fail("rpcUrls[%d] (%s): eth_chainId answers %s: the endpoint serves another chain", i, redact(u), id)
			wrongChain = true
		default:
			good = append(good, u)
		}
	}
	if wrongChain || len(good) == 0 {
		return errs // contracts read from another chain, or from none, prove nothing
	}
	checked := n
	checked.RPCURLs = good
	c := Dial(checked, nil)
	defer c.Close()

	if n.Finalized {
		if _, err := c.Finalized(ctx); err != nil {
			fail("finalized: the endpoint does not serve the finalized block (set confirmations instead): %w", err)
		}
	}
	var tokens []common.Address
	for i, t := range n.Tokens {
		field := fmt.Sprintf("tokens[%d] (%s)", i, t.Symbol)
		if err := hasCode(ctx, c, t.ContractAddress); err != nil {
			fail("%s contractAddress %s: %w", field, t.ContractAddress.Hex(), err)
			continue
		}
		tokens = append(tokens, t.ContractAddress)
		d, err := callUint(ctx, c, t.ContractAddress, selDecimals)
		switch {
		case err != nil:
			fail("%s contractAddress %s: decimals(): %w", field, t.ContractAddress.Hex(), err)
		case !d.IsInt64() || d.Int64() != int64(t.Decimals):
			fail("%s decimals: the file says %d, the contract's decimals() answers %s", field, t.Decimals, d)
		}
	}
	for _, symbol := range slices.Sorted(maps.Keys(n.PriceFeeds)) {
		feed := n.PriceFeeds[symbol]
		field := fmt.Sprintf("priceFeeds.%s %s", symbol, feed.Hex())
		if err := hasCode(ctx, c, feed); err != nil {
			fail("%s: %w", field, err)
			continue
		}
		if _, err := callUint(ctx, c, feed, selDecimals); err != nil {
			fail("%s: decimals(): %w", field, err)
			continue
		}
		if err := latestRound(ctx, c, feed); err != nil {
			fail("%s: latestRoundData(): %w", field, err)
		}
	}
	if n.SweepMethod == SweepEIP7702 {
		verifySweeper(ctx, c, n, fail)
	}
	if len(tokens) > 0 {
		head, err := c.BlockNumber(ctx)
		if err == nil {
			block := new(big.Int).SetUint64(head)
			_, err = c.Logs(ctx, ethereum.FilterQuery{FromBlock: block, ToBlock: block, Addresses: tokens})
		}
		if err != nil {
			fail("rpcUrls: eth_getLogs (the deposit scanner reads token transfers with it): %w", err)
		}
	}
	return errs
}

// verifySweeper checks an eip7702 chain's sweeperAddress as far as the chains file can: a
// contract that answers bankroll() with the chain's bankrollAddress and feeAddress() with its
// feeAddress. Which gas tank it obeys needs the database (coffer chains sweeper checks it).
func verifySweeper(ctx context.Context, c *Client, n Network, fail func(string, ...any)) {
	field := "sweeperAddress " + n.SweeperAddress.Hex()
	if err := hasCode(ctx, c, n.SweeperAddress); err != nil {
		fail("%s: %w", field, err)
		return
	}
	got, err := callUint(ctx, c, n.SweeperAddress, selBankroll)
	switch {
	case err != nil:
		fail("%s: bankroll(): %w (not a Sweeper: docs/sweeps-eip7702.md)", field, err)
		return
	case common.BigToAddress(got) != n.BankrollAddress:
		fail("%s pays bankroll %s, not this chain's bankrollAddress %s: deploy one for this bankroll (coffer chains sweeper)",
			field, common.BigToAddress(got).Hex(), n.BankrollAddress.Hex())
		return
	}
	got, err = callUint(ctx, c, n.SweeperAddress, selFeeAddress)
	switch {
	case err != nil:
		fail("%s: feeAddress(): %w (a Sweeper of an earlier version: deploy a new one, coffer chains sweeper)", field, err)
	case common.BigToAddress(got) != n.FeeAddress:
		fail("%s sends fees to %s, not this chain's feeAddress %s: deploy one for this feeAddress (coffer chains sweeper)",
			field, common.BigToAddress(got).Hex(), n.FeeAddress.Hex())
	}
}

// scrub drops the path and query of an RPC URL quoted in err (net/http quotes the URL it
// failed to reach): providers put API keys there, and these errors are logged.
func scrub(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.URL != redact(ue.URL) {
		return errors.New(strings.ReplaceAll(err.Error(), ue.URL, redact(ue.URL)))
	}
	return err
}

func endpointChainID(ctx context.Context, u string) (*big.Int, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	rc, err := rpc.DialOptions(ctx, u, rpc.WithHTTPClient(rpcHTTPClient))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ethclient.NewClient(rc).ChainID(ctx)
}

// Selectors of the read-only calls Verify makes.
const (
	selDecimals        = "\x31\x3c\xe5\x67" // decimals()
	selLatestRoundData = "\xfe\xaf\x96\x8c" // latestRoundData()
	selBankroll        = "\x0c\x65\x7e\xb0" // bankroll() (the Sweeper's)
	selFeeAddress      = "\x41\x27\x53\x58" // feeAddress() (the Sweeper's)
)

var errNoCode = errors.New("no code at this address")

func hasCode(ctx context.Context, c *Client, addr common.Address) error {
	code, err := c.CodeAt(ctx, addr, nil)
	if err != nil {
		return fmt.Errorf("eth_getCode: %w", err)
	}
	if len(code) == 0 {
		return errNoCode
	}
	return nil
}

func callUint(ctx context.Context, c *Client, to common.Address, selector string) (*big.Int, error) {
	out, err := c.CallContract(ctx, ethereum.CallMsg{To: &to, Data: []byte(selector)}, nil)
	if err != nil {
		return nil, err
	}
	if len(out) < 32 {
		return nil, fmt.Errorf("answered %d bytes, not a number", len(out))
	}
	return new(big.Int).SetBytes(out[:32]), nil
}

// latestRound checks that a feed answers a positive price with a time.
func latestRound(ctx context.Context, c *Client, feed common.Address) error {
	out, err := c.CallContract(ctx, ethereum.CallMsg{To: &feed, Data: []byte(selLatestRoundData)}, nil)
	if err != nil {
		return err
	}
	if len(out) < 5*32 {
		return fmt.Errorf("answered %d bytes, not (roundId, answer, startedAt, updatedAt, answeredInRound)", len(out))
	}
	answer := new(big.Int).SetBytes(out[32:64])
	if out[32]&0x80 != 0 || answer.Sign() == 0 { // int256: a negative price has its top bit set
		return errors.New("answers no positive price")
	}
	if new(big.Int).SetBytes(out[96:128]).Sign() == 0 {
		return errors.New("answers a round that was never updated")
	}
	return nil
}
