package funds_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestWalletThresholds: thresholds are set, replaced and removed with an audited actor and
// reason; bad input changes nothing; the check exports each threshold and logs a WARN for a
// wallet under its threshold, and none for one above.
func TestWalletThresholds(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	usdt, _ := dev.Token("USDT")
	n := chain.Network{ChainID: dev.ChainID(), Name: "Dev", RPCURLs: []string{dev.RPCURL()}, Confirmations: 1,
		NativeSymbol: "ETH", NativeDecimals: 18, Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: usdt.Address, Decimals: 6}}}
	registry, client := testfactory.Dial(t, n)
	ledger := funds.New(pool, registry)
	rich, poor := common.HexToAddress("0x00000000000000000000000000000000000000aa"), common.HexToAddress("0x00000000000000000000000000000000000000bb")
	testfactory.Fund(ctx, t, dev, rich, 5, 100_000_000) // 5 ETH, 100 USDT
	testfactory.Fund(ctx, t, dev, poor, 0, 1_000_000)   // 1 USDT

	set := func(wallet common.Address, currency, amount, reason string) (domain.WalletThreshold, error) {
		return ledger.SetThreshold(ctx, funds.ThresholdChange{ChainID: dev.ChainID(), Wallet: strings.ToLower(wallet.Hex()), Currency: currency,
			Amount: amount, Reason: reason, Actor: "service-team:test"})
	}
	for _, c := range []struct {
		name                     string
		chainID                  int64
		wallet, currency, amount string
		code                     fault.Code
	}{
		{"unknown chain", 999, rich.Hex(), "ETH", "1", fault.NotFound},
		{"unknown asset", dev.ChainID(), rich.Hex(), "DOGE", "1", fault.InvalidArgument},
		{"bad wallet", dev.ChainID(), "0x12", "ETH", "1", fault.InvalidArgument},
		{"negative", dev.ChainID(), rich.Hex(), "ETH", "-1", fault.InvalidArgument},
		{"too precise", dev.ChainID(), rich.Hex(), "USDT", "0.0000001", fault.InvalidArgument},
		{"beyond any balance (uint256)", dev.ChainID(), rich.Hex(), "USDT", "1e80", fault.InvalidArgument},
		{"an exponent too large to write out", dev.ChainID(), rich.Hex(), "ETH", "1e1000000000", fault.InvalidArgument},
	} {
		_, err := ledger.SetThreshold(ctx, funds.ThresholdChange{ChainID: c.chainID, Wallet: c.wallet, Currency: c.currency, Amount: c.amount,
			Reason: "x", Actor: "service-team:test"})
		if fault.As(err).Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if _, err := set(rich, "ETH", "1", " "); fault.As(err).Code != fault.InvalidArgument {
		t.Fatalf("no reason: %v", err)
	}
	if list, _ := ledger.Thresholds(ctx); len(list) != 0 {
		t.Fatalf("bad input set thresholds: %+v", list)
	}

	mustSet := func(wallet common.Address, currency, amount string) {
		t.Helper()
		if _, err := set(wallet, currency, amount, "on-call runbook"); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(rich, "ETH", "1")
	mustSet(rich, "ETH", "2") // replaces
	mustSet(rich, "USDT", "50")
	mustSet(poor, "USDT", "10")
	mustSet(poor, "ETH", "0.1")
	mustSet(poor, "ETH", "") // removes
	list, err := ledger.Thresholds(ctx)
	if err != nil || len(list) != 3 || list[0].SetBy != "service-team:test" || list[0].Reason != "on-call runbook" {
		t.Fatalf("thresholds: %+v %v", list, err)
	}
	for _, th := range list {
		if th.Wallet == rich.Hex() && th.Currency == "ETH" && th.Amount.String() != "2" {
			t.Fatalf("a replaced threshold: %+v", th)
		}
	}

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := funds.CheckThresholds(ctx, ledger, map[int64]*chain.Client{dev.ChainID(): client}, log); err != nil {
		t.Fatal(err)
	}
	chainID := dev.ChainID()
	if got := testutil.ToFloat64(metrics.WalletLowBalanceThreshold.WithLabelValues(itoa(chainID), poor.Hex(), "USDT")); got != 10 {
		t.Fatalf("gauge: %v", got)
	}
	if n := testutil.CollectAndCount(metrics.WalletLowBalanceThreshold); n != 3 {
		t.Fatalf("%d threshold series, want 3", n)
	}
	// The alert's series (CofferWalletBelowThreshold): 1 for the one wallet under its threshold.
	var below []string
	for _, th := range list {
		v := 0
		if th.Wallet == poor.Hex() && th.Currency == "USDT" {
			v = 1
		}
		below = append(below, fmt.Sprintf("coffer_wallet_below_threshold{chain_id=%q,currency=%q,wallet=%q} %d", itoa(chainID), th.Currency, th.Wallet, v))
	}
	slices.Sort(below)
	if err := testutil.CollectAndCompare(metrics.WalletBelowThreshold, strings.NewReader("# HELP coffer_wallet_below_threshold "+
		"1 while a service wallet's balance in one asset is under its low-balance threshold (OpsService.SetWalletThreshold), 0 otherwise, from the latest check.\n"+
		"# TYPE coffer_wallet_below_threshold gauge\n"+strings.Join(below, "\n")+"\n")); err != nil {
		t.Error(err)
	}
	out := logs.String()
	if strings.Count(out, "under its low-balance threshold") != 1 || !strings.Contains(out, "wallet="+poor.Hex()) ||
		!strings.Contains(out, "currency=USDT") {
		t.Fatalf("warnings: %s", out)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
