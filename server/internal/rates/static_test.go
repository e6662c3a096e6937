package rates

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/contracts"
)

func TestStatic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := NewStatic(map[string]decimal.Decimal{"eth": dec("3000.5"), "USDT": dec("1")},
		map[string]decimal.Decimal{"eur": dec("0.92"), "USD": dec("1")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.USD(ctx, "Eth")
	if err != nil || !p.Value.Equal(dec("3000.5")) || p.Source != "static" || time.Since(p.At) > time.Minute {
		t.Fatalf("ETH: %+v %v", p, err)
	}
	for cur, want := range map[string]string{"EUR": "0.92", "eur": "0.92", "USD": "1", "usd": "1"} {
		if v, err := s.PerUSD(ctx, cur); err != nil || !v.Equal(dec(want)) {
			t.Errorf("PerUSD(%s) = %v %v", cur, v, err)
		}
	}

	var u UnknownError
	if _, err := s.USD(ctx, "btc"); !errors.As(err, &u) || u != (UnknownError{Kind: "symbol", Name: "BTC"}) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := s.PerUSD(ctx, "jpy"); !errors.As(err, &u) || u != (UnknownError{Kind: "currency", Name: "JPY"}) || err.Error() != `rates: unknown currency "JPY"` {
		t.Fatalf("unknown currency: %v", err)
	}

	if err := s.SetUSD("ETH", dec("3100")); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.USD(ctx, "ETH"); !p.Value.Equal(dec("3100")) {
		t.Fatalf("after SetUSD: %s", p.Value)
	}
	for _, bad := range []error{
		s.SetUSD("ETH", dec("0")),
		s.SetUSD("ETH", dec("-1")),
		s.SetUSD(" ", dec("1")),
		s.SetPerUSD("EUR", dec("0")),
		s.SetPerUSD("USD", dec("1.01")),
	} {
		if bad == nil {
			t.Error("invalid table value accepted")
		}
	}
	if _, err := NewStatic(map[string]decimal.Decimal{"ETH": dec("0")}, nil); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("NewStatic with a zero price: %v", err)
	}

	dev := DevStatic()
	if p, _ := dev.USD(ctx, "ETH"); !p.Value.Equal(dec("3000")) {
		t.Fatalf("dev ETH %s", p.Value)
	}
}

// fakeFeed is an AggregatorV3 answering from memory (bind.ContractCaller).
type fakeFeed struct {
	mu        sync.Mutex
	decimals  uint8
	answer    *big.Int
	updatedAt int64
	calls     int
	release   chan struct{} // when set, calls wait for it
}

func (f *fakeFeed) CodeAt(context.Context, common.Address, *big.Int) ([]byte, error) {
	return []byte{1}, nil
}

func (f *fakeFeed) CallContract(ctx context.Context, msg ethereum.CallMsg, _ *big.Int) ([]byte, error) {
	f.mu.Lock()
	f.calls++
	release := f.release
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	methods := contracts.NewMockAggregator().GetABI().Methods
	switch {
	case bytes.Equal(msg.Data[:4], methods["decimals"].ID):
		return methods["decimals"].Outputs.Pack(f.decimals)
	case bytes.Equal(msg.Data[:4], methods["latestRoundData"].ID):
		u := big.NewInt(f.updatedAt)
		return methods["latestRoundData"].Outputs.Pack(big.NewInt(7), f.answer, u, u, big.NewInt(7))
	}
	return nil, errors.New("fake feed: unexpected call")
}

var ethFeed = common.HexToAddress("0x00000000000000000000000000000000000e7e00")

func TestChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	feed := &fakeFeed{decimals: 8, answer: big.NewInt(2950_00000000), updatedAt: now.Unix()}
	clk := newClock(now)
	agg := NewAggregator(feed, map[string]common.Address{"ETH": ethFeed}, AggregatorOptions{Now: clk.Now})
	static, _ := NewStatic(map[string]decimal.Decimal{"ETH": dec("1"), "USDT": dec("0.999")}, map[string]decimal.Decimal{"EUR": dec("0.92")})
	c := NewChain([]*Aggregator{agg}, static)

	if p, err := c.USD(ctx, "eth"); err != nil || !p.Value.Equal(dec("2950")) || p.Source != "aggregator:"+ethFeed.Hex() {
		t.Fatalf("ETH from its feed: %+v %v", p, err)
	}
	if p, err := c.USD(ctx, "USDT"); err != nil || !p.Value.Equal(dec("0.999")) || p.Source != "static" {
		t.Fatalf("USDT from the table: %+v %v", p, err)
	}
	var u UnknownError
	if _, err := c.USD(ctx, "BTC"); !errors.As(err, &u) {
		t.Fatalf("BTC: %v", err)
	}
	if v, err := c.PerUSD(ctx, "EUR"); err != nil || !v.Equal(dec("0.92")) {
		t.Fatalf("EUR: %v %v", v, err)
	}

	// A failing feed is an error, not a fall-back to the table's ETH price.
	clk.Add(2 * time.Hour)
	if _, err := c.USD(ctx, "ETH"); !errors.Is(err, ErrStale) {
		t.Fatalf("stale feed: %v", err)
	}

	// Either side may be missing.
	feedsOnly := NewChain([]*Aggregator{agg}, nil)
	if _, err := feedsOnly.USD(ctx, "USDT"); !errors.As(err, &u) {
		t.Fatalf("no table: %v", err)
	}
	if v, err := feedsOnly.PerUSD(ctx, "usd"); err != nil || !v.Equal(dec("1")) {
		t.Fatalf("no table, USD: %v %v", v, err)
	}
	if _, err := feedsOnly.PerUSD(ctx, "EUR"); !errors.As(err, &u) {
		t.Fatalf("no table, EUR: %v", err)
	}
	if p, err := NewChain(nil, static).USD(ctx, "ETH"); err != nil || !p.Value.Equal(dec("1")) {
		t.Fatalf("no feeds: %v %v", p, err)
	}
}

func TestAggregatorIncompleteRound(t *testing.T) {
	t.Parallel()
	feed := &fakeFeed{decimals: 8, answer: big.NewInt(1), updatedAt: 0}
	agg := NewAggregator(feed, map[string]common.Address{"ETH": ethFeed}, AggregatorOptions{})
	if _, err := agg.USD(context.Background(), "ETH"); !errors.Is(err, ErrStale) {
		t.Fatalf("updatedAt 0: %v", err)
	}
}

// TestAggregatorWaitersHonourTheirContext: a caller that gives up does not cancel the read
// that other callers share, and its context bounds its own wait.
func TestAggregatorWaitersHonourTheirContext(t *testing.T) {
	release := make(chan struct{})
	feed := &fakeFeed{decimals: 8, answer: big.NewInt(3000_00000000), updatedAt: time.Now().Unix(), release: release}
	agg := NewAggregator(feed, map[string]common.Address{"ETH": ethFeed}, AggregatorOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := agg.USD(ctx, "ETH"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("impatient caller: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := agg.USD(context.Background(), "ETH")
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("patient caller: %v", err)
	}
	feed.mu.Lock()
	defer feed.mu.Unlock()
	if feed.calls != 2 { // decimals + latestRoundData, shared by both callers
		t.Fatalf("%d calls, want 2", feed.calls)
	}
}

func TestAggregatorCallTimeout(t *testing.T) {
	feed := &fakeFeed{decimals: 8, answer: big.NewInt(1), updatedAt: time.Now().Unix(), release: make(chan struct{})}
	agg := NewAggregator(feed, map[string]common.Address{"ETH": ethFeed}, AggregatorOptions{CallTimeout: 30 * time.Millisecond})
	if _, err := agg.USD(context.Background(), "ETH"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung RPC: %v", err)
	}
	// The failure is not cached: the next call reads again.
	feed.mu.Lock()
	feed.release = nil
	feed.mu.Unlock()
	if _, err := agg.USD(context.Background(), "ETH"); err != nil {
		t.Fatalf("after the RPC recovers: %v", err)
	}
}
