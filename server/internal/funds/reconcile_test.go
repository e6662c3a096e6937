package funds_test

import (
	"context"
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
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
