package rates

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// clock is a settable clock for TTL and staleness.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// counter wraps a backend and counts eth_calls by method.
type counter struct {
	bind.ContractCaller

	mu    sync.Mutex
	calls map[string]int
}

func newCounter(b bind.ContractCaller) *counter {
	return &counter{ContractCaller: b, calls: map[string]int{}}
}

func (c *counter) CallContract(ctx context.Context, msg ethereum.CallMsg, block *big.Int) ([]byte, error) {
	c.mu.Lock()
	c.calls[methodName(msg.Data)]++
	c.mu.Unlock()
	return c.ContractCaller.CallContract(ctx, msg, block)
}

func (c *counter) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func methodName(data []byte) string {
	for name, m := range contracts.NewMockAggregator().GetABI().Methods {
		if len(data) >= 4 && bytes.Equal(data[:4], m.ID) {
			return name
		}
	}
	return "?"
}

func startChain(t *testing.T, opts devchain.Options) *devchain.Chain {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return testfactory.DevChain(ctx, t, opts)
}

// feedsOf maps the dev chain's pairs to symbols: "ETH/USD" → ETH.
func feedsOf(c *devchain.Chain) map[string]common.Address {
	m := map[string]common.Address{}
	for _, a := range c.Aggregators() {
		sym, _, _ := strings.Cut(a.Pair, "/")
		m[sym] = a.Address
	}
	return m
}

// setAnswer pushes a price (in USD, 8 decimals on the dev feeds) and seals it into a block.
func setAnswer(t *testing.T, c *devchain.Chain, pair string, usd string) {
	t.Helper()
	answer := ToUnits(dec(usd), int32(devchain.AggregatorDecimals))
	if _, err := c.SetAnswer(context.Background(), pair, answer); err != nil {
		t.Fatal(err)
	}
	c.Commit()
}

func TestAggregatorReadsDevChainFeeds(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{})
	agg := NewAggregator(c.Client(), feedsOf(c), AggregatorOptions{})
	for sym, want := range map[string]string{"ETH": "3000", "usdt": "1", " USDC ": "1"} { //nolint:gocritic // the spaces are the point: USD trims and upper-cases a symbol
		p, err := agg.USD(ctx, sym)
		if err != nil {
			t.Fatalf("%s: %v", sym, err)
		}
		if !p.Value.Equal(dec(want)) {
			t.Errorf("%s = %s, want %s", sym, p.Value, want)
		}
		if age := time.Since(p.At); age < -time.Minute || age > time.Minute {
			t.Errorf("%s: At %s is not the feed's recent update", sym, p.At)
		}
		if addr := feedsOf(c)[normalize(sym)]; p.Source != "aggregator:"+addr.Hex() {
			t.Errorf("%s: source %q", sym, p.Source)
		}
	}
	var unknown UnknownError
	if _, err := agg.USD(ctx, "BTC"); !errors.As(err, &unknown) || unknown.Name != "BTC" || unknown.Kind != "symbol" {
		t.Fatalf("BTC: %v", err)
	}
	if !agg.Has("eth") || agg.Has("BTC") || strings.Join(agg.Symbols(), ",") != "ETH,USDC,USDT" {
		t.Fatalf("Has/Symbols: %v", agg.Symbols())
	}
	// A fractional price keeps the feed's 8 decimals exactly.
	setAnswer(t, c, "ETH/USD", "3123.45678901")
	agg2 := NewAggregator(c.Client(), feedsOf(c), AggregatorOptions{})
	if p, err := agg2.USD(ctx, "ETH"); err != nil || p.Value.String() != "3123.45678901" {
		t.Fatalf("fractional price %v %v", p.Value, err)
	}
}

// TestAggregatorOverHTTP reads the feeds through a JSON-RPC ethclient.Client, as production does.
func TestAggregatorOverHTTP(t *testing.T) {
	c := startChain(t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	ec, err := ethclient.Dial(c.RPCURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	agg := NewAggregator(ec, feedsOf(c), AggregatorOptions{})
	p, err := agg.USD(context.Background(), "ETH")
	if err != nil || !p.Value.Equal(dec("3000")) {
		t.Fatalf("ETH over HTTP: %v %v", p.Value, err)
	}
}

func TestAggregatorCacheTTL(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{})
	clk := newClock(time.Now())
	backend := newCounter(c.Client())
	agg := NewAggregator(backend, feedsOf(c), AggregatorOptions{TTL: 5 * time.Second, Now: clk.Now})

	expect := func(want string, calls int) {
		t.Helper()
		p, err := agg.USD(ctx, "ETH")
		if err != nil || !p.Value.Equal(dec(want)) {
			t.Fatalf("ETH = %v %v, want %s", p.Value, err, want)
		}
		if n := backend.count("latestRoundData"); n != calls {
			t.Fatalf("%d latestRoundData calls, want %d", n, calls)
		}
	}
	expect("3000", 1)
	setAnswer(t, c, "ETH/USD", "3100")
	expect("3000", 1) // still cached
	clk.Add(4 * time.Second)
	expect("3000", 1)
	clk.Add(time.Second) // TTL reached
	expect("3100", 2)
	expect("3100", 2)
	if n := backend.count("decimals"); n != 1 {
		t.Fatalf("decimals read %d times, want once", n)
	}

	// Without a cache, every read calls the feed.
	noCache := NewAggregator(backend, feedsOf(c), AggregatorOptions{TTL: -1, Now: clk.Now})
	for range 3 {
		if _, err := noCache.USD(ctx, "USDT"); err != nil {
			t.Fatal(err)
		}
	}
	if n := backend.count("latestRoundData"); n != 5 {
		t.Fatalf("%d latestRoundData calls with caching off, want 5", n)
	}
}

// TestAggregatorBurst: concurrent conversions on a cold cache share one feed read.
func TestAggregatorBurst(t *testing.T) {
	c := startChain(t, devchain.Options{})
	backend := newCounter(c.Client())
	agg := NewAggregator(backend, feedsOf(c), AggregatorOptions{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			p, err := agg.USD(context.Background(), "ETH")
			if err != nil || !p.Value.Equal(dec("3000")) {
				t.Errorf("ETH = %v %v", p.Value, err)
			}
		})
	}
	wg.Wait()
	if r, d := backend.count("latestRoundData"), backend.count("decimals"); r != 1 || d != 1 {
		t.Fatalf("burst of 50 made %d latestRoundData and %d decimals calls, want 1 and 1", r, d)
	}
}

func TestAggregatorRefusesStale(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{})
	// Two hours from now, the feeds deployed a moment ago are two hours old.
	clk := newClock(time.Now().Add(2 * time.Hour))
	agg := NewAggregator(c.Client(), feedsOf(c), AggregatorOptions{MaxAge: time.Hour, TTL: 5 * time.Second, Now: clk.Now})
	_, err := agg.USD(ctx, "ETH")
	if !errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "max age 1h0m0s") || !strings.Contains(err.Error(), "ETH") {
		t.Fatalf("stale feed: %v", err)
	}

	// The chain's clock moves two hours on and the feed is updated: fresh again once the
	// cached round expires.
	if err := c.AdjustTime(2 * time.Hour); err != nil {
		t.Fatal(err)
	}
	setAnswer(t, c, "ETH/USD", "3050")
	if _, err := agg.USD(ctx, "ETH"); !errors.Is(err, ErrStale) {
		t.Fatalf("cached stale round: %v", err)
	}
	clk.Add(5 * time.Second)
	p, err := agg.USD(ctx, "ETH")
	if err != nil || !p.Value.Equal(dec("3050")) {
		t.Fatalf("updated feed: %v %v", p.Value, err)
	}
	// USDT was not updated: still stale.
	if _, err := agg.USD(ctx, "USDT"); !errors.Is(err, ErrStale) {
		t.Fatalf("USDT: %v", err)
	}

	// A cached answer goes stale while cached: MaxAge is checked on every read.
	clk2 := newClock(time.Now())
	agg2 := NewAggregator(c.Client(), feedsOf(c), AggregatorOptions{MaxAge: time.Hour, TTL: time.Hour, Now: clk2.Now})
	if _, err := agg2.USD(ctx, "USDT"); err != nil {
		t.Fatal(err)
	}
	clk2.Add(61 * time.Minute)
	if _, err := agg2.USD(ctx, "USDT"); !errors.Is(err, ErrStale) {
		t.Fatalf("cached answer aged past MaxAge: %v", err)
	}
}

func TestAggregatorRefusesNonPositive(t *testing.T) {
	ctx := context.Background()
	c := startChain(t, devchain.Options{})
	clk := newClock(time.Now())
	agg := NewAggregator(c.Client(), feedsOf(c), AggregatorOptions{Now: clk.Now})
	for _, answer := range []string{"-1", "0", "-0.00000001"} {
		setAnswer(t, c, "USDC/USD", answer)
		clk.Add(DefaultTTL)
		_, err := agg.USD(ctx, "USDC")
		if !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), "not a positive price") {
			t.Fatalf("answer %s: %v", answer, err)
		}
	}
	setAnswer(t, c, "USDC/USD", "0.9998")
	clk.Add(DefaultTTL)
	if p, err := agg.USD(ctx, "USDC"); err != nil || !p.Value.Equal(dec("0.9998")) {
		t.Fatalf("recovered feed: %v %v", p.Value, err)
	}
}

func TestAggregatorNoContract(t *testing.T) {
	c := startChain(t, devchain.Options{})
	addr := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	agg := NewAggregator(c.Client(), map[string]common.Address{"ETH": addr}, AggregatorOptions{})
	_, err := agg.USD(context.Background(), "ETH")
	if !errors.Is(err, bind.ErrNoCode) || !strings.Contains(err.Error(), addr.Hex()) {
		t.Fatalf("feed without code: %v", err)
	}
}
