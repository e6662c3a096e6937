package funds_test

import (
	"context"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestAdjustRefusesBadInput: every malformed service-team adjustment (the CLI's, which no
// request schema checks first) is refused with its own code naming the field, and writes nothing.
func TestAdjustRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	registry, err := chain.NewRegistry([]chain.Network{{ChainID: 1337, Name: "Dev", RPCURLs: []string{"http://127.0.0.1:9"}, Confirmations: 1,
		NativeSymbol: "ETH", NativeDecimals: 18,
		Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: common.HexToAddress("0x00000000000000000000000000000000000000a1"), Decimals: 6}}}})
	if err != nil {
		t.Fatal(err)
	}
	ledger := funds.New(pool, registry)
	op := testfactory.Operator(ctx, t, pool, nil)
	adjust := func(operatorID string, chainID int64, currency, amount, note string) error {
		_, err := ledger.Adjust(ctx, funds.Adjustment{OperatorID: operatorID, ChainID: chainID, Currency: currency, Amount: amount,
			Note: note, Actor: "service-team:test"})
		return err
	}
	for _, c := range []struct {
		name                          string
		operatorID                    string
		chainID                       int64
		currency, amount, note, field string
		code                          fault.Code
	}{
		{"unknown chain", op.ID, 99, "USDT", "+1", "n", "chainId", fault.InvalidArgument},
		{"unknown asset", op.ID, 1337, "DOGE", "+1", "n", "currency", fault.InvalidArgument},
		{"zero", op.ID, 1337, "USDT", "0", "n", "amount", fault.InvalidArgument},
		{"not a number", op.ID, 1337, "USDT", "ten", "n", "amount", fault.InvalidArgument},
		{"too precise", op.ID, 1337, "USDT", "0.0000001", "n", "amount", fault.InvalidArgument},
		{"beyond any balance (uint256)", op.ID, 1337, "USDT", "1e80", "n", "amount", fault.InvalidArgument},
		{"beyond any balance, written out", op.ID, 1337, "ETH", "+1" + zeros(70), "n", "amount", fault.InvalidArgument},
		{"beyond a uint256 by one unit", op.ID, 1337, "USDT", "-115792089237316195423570985008687907853269984665640564039457584007913129.639936", "n",
			"amount", fault.InvalidArgument},
		{"an exponent too large to write out", op.ID, 1337, "USDT", "1e1000000000", "n", "amount", fault.InvalidArgument},
		{"no note", op.ID, 1337, "USDT", "+1", "  ", "note", fault.InvalidArgument},
		{"unknown operator", "00000000-0000-4000-8000-000000000000", 1337, "USDT", "+1", "n", "", fault.NotFound},
		{"not an operator id", "not-a-uuid", 1337, "USDT", "+1", "n", "", fault.NotFound},
		{"debit beyond available", op.ID, 1337, "USDT", "-1", "n", "", fault.Conflict},
	} {
		err := adjust(c.operatorID, c.chainID, c.currency, c.amount, c.note)
		fe := fault.As(err)
		if fe == nil || fe.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
			continue
		}
		if c.field != "" && fe.Field != c.field {
			t.Errorf("%s: %v names %q, want the field %s", c.name, err, fe.Field, c.field)
		}
	}
	if n := testdb.Count(ctx, t, pool, `SELECT count(*) FROM fund_entries`); n != 0 {
		t.Fatalf("%d fund entries written by refused adjustments", n)
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}
