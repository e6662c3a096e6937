package funds_test

import (
	"bytes"
	"context"
	"log/slog"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestReconcileCountsFundsOfAssetsNoLongerConfigured: operators' funds in an asset taken out
// of the chains file (a token, or a whole chain) stay owed; the reconciliation lists them as
// not OK (their holdings cannot be read) instead of answering OK without them, in token units
// when the asset's deposits or withdrawals say its decimals.
func TestReconcileCountsFundsOfAssetsNoLongerConfigured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	full := testfactory.DevNetwork(dev, 1)
	registry, client := testfactory.Dial(t, full)
	hot := common.HexToAddress("0x00000000000000000000000000000000000000c1")
	reconcile := func(registry *chain.Registry, chainID int64) ([]funds.Line, error) {
		r := &funds.Reconciler{Ledger: funds.New(pool, registry), Clients: map[int64]*chain.Client{dev.ChainID(): client}, HotWallet: hot}
		return r.Reconcile(ctx, chainID)
	}

	op := testfactory.Operator(ctx, t, pool, nil)
	if _, err := funds.New(pool, registry).Adjust(ctx, funds.Adjustment{OperatorID: op.ID, ChainID: dev.ChainID(), Currency: "USDT",
		Amount: "+40", Note: "opening balance", Actor: "service-team:test"}); err != nil {
		t.Fatal(err)
	}
	testfactory.Fund(ctx, t, dev, full.BankrollAddress, 0, 40_000_000) // the 40 USDT owed
	// A USDT withdrawal of the operator records the token's decimals.
	testfactory.Withdrawal(ctx, t, pool, testfactory.Session(ctx, t, pool, op.ID, &testfactory.SessionOpts{Kind: domain.SessionWithdraw}), nil)
	// Funds on a chain no longer configured at all, with nothing recording its decimals.
	if _, ok, err := store.New(pool).MoveFunds(ctx, domain.FundEntry{OperatorID: op.ID, ChainID: 999, Currency: "ETH",
		Kind: domain.FundAdjustment, AvailableDelta: big.NewInt(1000), ReservedDelta: new(big.Int), Ref: "adjustment",
		Actor: "service-team:test", Note: "held while chain 999 was configured"}); err != nil || !ok {
		t.Fatalf("funds on chain 999: %v %v", ok, err)
	}

	lines, err := reconcile(registry, 0)
	if err != nil {
		t.Fatal(err)
	}
	if usdt := lineOf(t, lines, dev.ChainID(), "USDT"); !usdt.OK || usdt.Unconfigured || usdt.Owed.String() != "40" {
		t.Fatalf("USDT configured: %+v", usdt)
	}

	withoutUSDT := full
	withoutUSDT.Tokens = slices.DeleteFunc(slices.Clone(full.Tokens), func(tk chain.Token) bool { return tk.Symbol == "USDT" })
	fewer, err := chain.NewRegistry([]chain.Network{withoutUSDT})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		filter   int64
		chainID  int64
		currency string
		owed     string
	}{
		{"token removed, every chain", 0, dev.ChainID(), "USDT", "40"},
		{"token removed, its chain", dev.ChainID(), dev.ChainID(), "USDT", "40"},
		{"chain removed, every chain (smallest unit: no decimals recorded)", 0, 999, "ETH", "1000"},
		{"chain removed, that chain", 999, 999, "ETH", "1000"},
	} {
		lines, err := reconcile(fewer, c.filter)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		l := lineOf(t, lines, c.chainID, c.currency)
		if l.OK || !l.Unconfigured || l.Owed.String() != c.owed || l.Available.String() != c.owed || !l.Holdings.IsZero() ||
			l.Surplus.String() != "-"+c.owed {
			t.Errorf("%s: %+v, want not OK, owed %s, no holdings", c.name, l, c.owed)
		}
	}
}

// lineOf is the reconciliation's line of an asset (a zero Line, reported, when there is none).
func lineOf(t *testing.T, lines []funds.Line, chainID int64, currency string) funds.Line {
	t.Helper()
	for _, l := range lines {
		if l.ChainID == chainID && l.Currency == currency {
			return l
		}
	}
	t.Errorf("no %s line for chain %d in %+v", currency, chainID, lines)
	return funds.Line{}
}

// What was seen: the every-minute reconciliation job (funds.reconcile) read every chain with
// Reconcile, which stops at the first chain it cannot read: one chain's node down left every
// other chain's coffer_funds_surplus and wallet balances unset, so a real shortfall elsewhere
// went unalerted, and nothing named the chain that could not be read. The job now publishes
// each chain it reads, and marks the unread one: an ERROR log naming it and
// coffer_reconcile_chain_unread 1 (0 for the chains read).
func TestReconcileJobPublishesEveryChainItCanRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	readable := testfactory.DevNetwork(dev, 1)
	down := readable
	down.ChainID, down.Name = 700_001, "Down Chain" // a chain id no other test publishes
	proxy := testfactory.NewNodeProxy(t, dev.RPCURL())
	proxy.Answer(func(testfactory.NodeCall) (string, bool) {
		return `"error":{"code":-32000,"message":"header not found"}`, true
	})
	down.RPCURLs = []string{proxy.URL}
	registry, err := chain.NewRegistry([]chain.Network{readable, down})
	if err != nil {
		t.Fatal(err)
	}
	clients := map[int64]*chain.Client{}
	for _, n := range registry.Networks() {
		clients[n.ChainID] = chain.Dial(n, nil)
		t.Cleanup(clients[n.ChainID].Close)
	}
	ledger := funds.New(pool, registry)
	op := testfactory.Operator(ctx, t, pool, nil)
	if _, err := ledger.Adjust(ctx, funds.Adjustment{OperatorID: op.ID, ChainID: dev.ChainID(), Currency: "USDT", Amount: "+40",
		Note: "opening balance", Actor: "service-team:test"}); err != nil {
		t.Fatal(err)
	}
	testfactory.Fund(ctx, t, dev, readable.BankrollAddress, 0, 30_000_000) // 10 USDT short

	var logs bytes.Buffer
	w := &funds.ReconcileWorker{Reconciler: &funds.Reconciler{Ledger: ledger, Clients: clients,
		HotWallet: common.HexToAddress("0x00000000000000000000000000000000000000c1")},
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))}
	if err := w.Work(ctx, &river.Job[funds.ReconcileArgs]{}); err != nil {
		t.Errorf("the job failed: %v (want the readable chain published)", err)
	}
	readID, downID := strconv.FormatInt(dev.ChainID(), 10), strconv.FormatInt(down.ChainID, 10)
	got := gauges(t, metrics.FundsSurplus, metrics.ReconcileChainUnread)
	for _, c := range []struct {
		series string
		want   float64
	}{
		{"coffer_funds_surplus{" + readID + ",USDT}", -10},
		{"coffer_reconcile_chain_unread{" + readID + "}", 0},
		{"coffer_reconcile_chain_unread{" + downID + "}", 1},
	} {
		if v, ok := got[c.series]; !ok || v != c.want {
			t.Errorf("%s = %v (set: %v), want %v", c.series, v, ok, c.want)
		}
	}
	if _, ok := got["coffer_funds_surplus{"+downID+",ETH}"]; ok {
		t.Errorf("a surplus was published for the chain that could not be read")
	}
	for _, want := range []string{"chain=" + downID + " ", "holdings cannot be read", "chain=" + readID + " currency=USDT"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no ERROR log with %q:\n%s", want, logs.String())
		}
	}
}

// gauges are the collectors' series, by name{label values in order}.
func gauges(t *testing.T, collectors ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var values []string
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			out[f.GetName()+"{"+strings.Join(values, ",")+"}"] = m.GetGauge().GetValue()
		}
	}
	return out
}
