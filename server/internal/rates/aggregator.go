package rates

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/contracts"
)

// Defaults of AggregatorOptions.
const (
	DefaultMaxAge      = time.Hour
	DefaultTTL         = 5 * time.Second
	DefaultCallTimeout = 10 * time.Second
)

// AggregatorOptions tune an Aggregator. Zero values take the defaults.
type AggregatorOptions struct {
	// MaxAge refuses a feed whose latest round's updatedAt is older than this (default 1 h).
	// Chainlink feeds update on a deviation or a heartbeat; set it above the feeds' heartbeat.
	MaxAge time.Duration
	// TTL is how long a feed's answer is reused before the next eth_call (default 5 s);
	// negative disables caching. MaxAge is still checked on every read of a cached answer.
	TTL time.Duration
	// CallTimeout bounds one refresh of a feed (default 10 s). A refresh is shared by every
	// caller waiting for that feed, so it does not run under any one caller's context.
	CallTimeout time.Duration
	// Now is the clock updatedAt is compared with (default time.Now).
	Now func() time.Time
}

// Aggregator reads USD prices from Chainlink AggregatorV3 feeds (latestRoundData and
// decimals), one feed per symbol, through an eth_call backend (ethclient.Client, the
// simulated client, …). It is safe for concurrent use.
//
// Each feed's latest round is cached for TTL, and concurrent readers of a feed whose cache
// expired share a single refresh: a burst of conversions costs one latestRoundData call
// (plus, once per feed and process, one decimals call). Answers ≤ 0 are refused with
// ErrInvalidAnswer; rounds older than MaxAge, or never completed, with ErrStale.
type Aggregator struct {
	opts  AggregatorOptions
	feeds map[string]*feed
	abi   *contracts.MockAggregator // the AggregatorV3 interface (and setAnswer), parsed once
}

type feed struct {
	symbol   string
	address  common.Address
	contract *bind.BoundContract

	mu       sync.Mutex
	decimals int32 // -1 until read
	round    *round
	inflight *refresh
}

// round is a feed's latest round as read, with the time it was read (for the TTL).
type round struct {
	answer    *big.Int
	updatedAt *big.Int // Unix seconds; 0 for a round never completed
	decimals  int32
	readAt    time.Time
}

type refresh struct {
	done  chan struct{}
	round *round
	err   error
}

// NewAggregator reads the feeds (symbol → AggregatorV3 contract address) through backend.
func NewAggregator(backend bind.ContractCaller, feeds map[string]common.Address, opts AggregatorOptions) *Aggregator {
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	a := &Aggregator{opts: opts, feeds: map[string]*feed{}, abi: contracts.NewMockAggregator()}
	for sym, addr := range feeds {
		sym = normalize(sym)
		a.feeds[sym] = &feed{
			symbol:   sym,
			address:  addr,
			contract: bind.NewBoundContract(addr, a.abi.GetABI(), backend, nil, nil),
			decimals: -1,
		}
	}
	return a
}

// Has reports whether symbol has a feed.
func (a *Aggregator) Has(symbol string) bool {
	_, ok := a.feeds[normalize(symbol)]
	return ok
}

// Symbols lists the symbols that have a feed, sorted.
func (a *Aggregator) Symbols() []string {
	out := make([]string, 0, len(a.feeds))
	for s := range a.feeds {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// USD implements Source.
func (a *Aggregator) USD(ctx context.Context, symbol string) (Price, error) {
	f, ok := a.feeds[normalize(symbol)]
	if !ok {
		return Price{}, UnknownError{Kind: "symbol", Name: normalize(symbol)}
	}
	r, err := a.latest(ctx, f)
	if err != nil {
		return Price{}, err
	}
	return a.price(f, r)
}

// latest returns the feed's cached round, or refreshes it, sharing one refresh between
// concurrent callers.
func (a *Aggregator) latest(ctx context.Context, f *feed) (*round, error) {
	f.mu.Lock()
	if r := f.round; r != nil && a.opts.TTL > 0 && a.opts.Now().Sub(r.readAt) < a.opts.TTL {
		f.mu.Unlock()
		return r, nil
	}
	call := f.inflight
	if call == nil {
		call = &refresh{done: make(chan struct{})}
		f.inflight = call
		// The refresh is shared by every caller waiting on it: one caller giving up must
		// not cancel it for the others, so it keeps ctx's values but not its cancellation.
		go a.refresh(context.WithoutCancel(ctx), f, call)
	}
	f.mu.Unlock()

	select {
	case <-call.done:
		return call.round, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *Aggregator) refresh(ctx context.Context, f *feed, call *refresh) {
	ctx, cancel := context.WithTimeout(ctx, a.opts.CallTimeout)
	defer cancel()
	r, err := a.read(ctx, f)

	f.mu.Lock()
	if err == nil {
		f.round = r
	}
	f.inflight = nil
	f.mu.Unlock()
	call.round, call.err = r, err
	close(call.done)
}

// read calls the feed: decimals (once per feed; immutable in AggregatorV3) and
// latestRoundData.
func (a *Aggregator) read(ctx context.Context, f *feed) (*round, error) {
	opts := &bind.CallOpts{Context: ctx}
	f.mu.Lock()
	decimals := f.decimals
	f.mu.Unlock()
	if decimals < 0 {
		d, err := bind.Call(f.contract, opts, a.abi.PackDecimals(), a.abi.UnpackDecimals)
		if err != nil {
			return nil, fmt.Errorf("rates: %s feed %s: decimals: %w", f.symbol, f.address, err)
		}
		decimals = int32(d)
		f.mu.Lock()
		f.decimals = decimals
		f.mu.Unlock()
	}
	out, err := bind.Call(f.contract, opts, a.abi.PackLatestRoundData(), a.abi.UnpackLatestRoundData)
	if err != nil {
		return nil, fmt.Errorf("rates: %s feed %s: latestRoundData: %w", f.symbol, f.address, err)
	}
	return &round{answer: out.Answer, updatedAt: out.UpdatedAt, decimals: decimals, readAt: a.opts.Now()}, nil
}

// price checks a round (on every read, cached or not) and converts it.
func (a *Aggregator) price(f *feed, r *round) (Price, error) {
	if r.answer.Sign() <= 0 {
		return Price{}, fmt.Errorf("%w: %s feed %s answered %s (not a positive price)", ErrInvalidAnswer, f.symbol, f.address, r.answer)
	}
	if r.updatedAt.Sign() == 0 {
		return Price{}, fmt.Errorf("%w: %s feed %s has no completed round", ErrStale, f.symbol, f.address)
	}
	if !r.updatedAt.IsInt64() || r.updatedAt.Int64() > 1<<40 {
		return Price{}, fmt.Errorf("%w: %s feed %s answered updatedAt %s", ErrInvalidAnswer, f.symbol, f.address, r.updatedAt)
	}
	updatedAt := time.Unix(r.updatedAt.Int64(), 0)
	if age := a.opts.Now().Sub(updatedAt); age > a.opts.MaxAge {
		return Price{}, fmt.Errorf("%w: %s feed %s last updated %s (%s ago, max age %s)", ErrStale,
			f.symbol, f.address, updatedAt.UTC().Format(time.RFC3339), age.Truncate(time.Second), a.opts.MaxAge)
	}
	return Price{
		Value:  decimal.NewFromBigInt(r.answer, -r.decimals),
		At:     updatedAt,
		Source: "aggregator:" + f.address.Hex(),
	}, nil
}
