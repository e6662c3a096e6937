package funds_test

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestBalancesOfAssetsNoLongerConfigured: an operator's funds in a token taken out of the
// chains file are still listed in token units, with the decimals its withdrawals were recorded
// with (40 USDT, never 40000000 with decimals 0), by every reader (operator, ops, panel).
func TestBalancesOfAssetsNoLongerConfigured(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	usdt := chain.Token{Symbol: "USDT", ContractAddress: common.HexToAddress("0x00000000000000000000000000000000000000a1"), Decimals: 6}
	network := func(tokens ...chain.Token) *chain.Registry {
		registry, err := chain.NewRegistry([]chain.Network{{ChainID: 1337, Name: "Dev", RPCURLs: []string{"http://127.0.0.1:9"},
			Confirmations: 1, NativeSymbol: "ETH", NativeDecimals: 18, Tokens: tokens}})
		if err != nil {
			t.Fatal(err)
		}
		return registry
	}
	op := testfactory.Operator(ctx, t, pool, nil)
	if _, err := funds.New(pool, network(usdt)).Adjust(ctx, funds.Adjustment{OperatorID: op.ID, ChainID: 1337, Currency: "USDT",
		Amount: "+40", Note: "opening balance", Actor: "service-team:test"}); err != nil {
		t.Fatal(err)
	}
	testfactory.Withdrawal(ctx, t, pool, testfactory.Session(ctx, t, pool, op.ID, &testfactory.SessionOpts{Kind: domain.SessionWithdraw}), nil)

	ledger := funds.New(pool, network()) // USDT taken out
	byOperator := func(scope domain.Scope) ([]funds.Balance, error) {
		list, err := ledger.ByOperator(ctx, scope, op.ID)
		if err != nil || len(list) != 1 {
			return nil, err
		}
		return list[0].Balances, nil
	}
	for _, c := range []struct {
		name string
		list func() ([]funds.Balance, error)
	}{
		{"operator", func() ([]funds.Balance, error) { return ledger.OwnBalances(ctx, domain.Operators(op.ID), op.ID, "") }},
		{"every operator", func() ([]funds.Balance, error) { return ledger.Balances(ctx, domain.AllOperators()) }},
		{"ops and panel", func() ([]funds.Balance, error) { return byOperator(domain.AllOperators()) }},
	} {
		list, err := c.list()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var found bool
		for _, b := range list {
			if b.OperatorID != op.ID || b.Currency != "USDT" {
				continue
			}
			found = true
			if b.Decimals != 6 || b.Available.String() != "40" || !b.Reserved.IsZero() {
				t.Errorf("%s: USDT %+v, want 40 available with 6 decimals", c.name, b)
			}
		}
		if !found {
			t.Errorf("%s: no USDT balance in %+v", c.name, list)
		}
	}
}
