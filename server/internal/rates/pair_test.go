package rates

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// Pair is the one place that reads a price and a rate for pricing (deposit addresses,
// withdrawal quotes, test webhooks): either missing is UNAVAILABLE naming which.
func TestPair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := NewChain(nil, DevStatic())
	usd, perUSD, err := Pair(ctx, p, "eth", "eur")
	if err != nil || usd.Value.String() != "3000" || perUSD.String() != "0.92" {
		t.Fatalf("ETH/EUR: %v %v %v", usd, perUSD, err)
	}
	for _, c := range []struct{ symbol, fiat, want string }{
		{"DOGE", "EUR", "the price of DOGE is not available right now; try again shortly"},
		{"ETH", "JPY", "the rate of JPY is not available right now; try again shortly"},
	} {
		_, _, err := Pair(ctx, p, c.symbol, c.fiat)
		fe := fault.As(err)
		var unknown UnknownError
		if fe.Code != fault.Unavailable || fe.Message != c.want || !errors.As(err, &unknown) {
			t.Errorf("%s/%s: %v, want UNAVAILABLE %q with the cause", c.symbol, c.fiat, err, c.want)
		}
	}
}

// PriceAsset: the network and asset a deposit address or a withdrawal quote names, priced;
// what is not configured is INVALID_ARGUMENT on its field.
func TestPriceAsset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	chains, err := chain.NewRegistry([]chain.Network{{ChainID: 1337, Name: "Dev", RPCURLs: []string{"http://127.0.0.1:9"},
		Confirmations: 1, NativeSymbol: "ETH", NativeDecimals: 18}})
	if err != nil {
		t.Fatal(err)
	}
	p := NewChain(nil, DevStatic())
	got, err := PriceAsset(ctx, chains, p, 1337, "eth", "GBP", "accepted")
	if err != nil || got.Network.ChainID != 1337 || !got.Asset.Native || got.USD.Value.String() != "3000" || got.PerUSD.String() != "0.79" {
		t.Fatalf("ETH on 1337 in GBP: %+v %v", got, err)
	}
	for _, c := range []struct {
		chainID        int64
		currency, fiat string
		code           fault.Code
		field, message string
	}{
		{1, "ETH", "USD", fault.InvalidArgument, "chainId", "chain 1 is not supported; GET /chain lists the networks"},
		{1337, "USDT", "USD", fault.InvalidArgument, "currency", "USDT is not accepted on Dev (chain 1337)"},
		{1337, "ETH", "JPY", fault.Unavailable, "", "the rate of JPY is not available right now; try again shortly"},
	} {
		_, err := PriceAsset(ctx, chains, p, c.chainID, c.currency, c.fiat, "accepted")
		if fe := fault.As(err); fe.Code != c.code || fe.Field != c.field || !strings.HasSuffix(fe.Message, c.message) {
			t.Errorf("%d %s %s: %+v", c.chainID, c.currency, c.fiat, fe)
		}
	}
}
