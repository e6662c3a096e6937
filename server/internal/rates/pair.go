package rates

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// Pricer answers both questions pricing needs (Chain does).
type Pricer interface {
	Source
	Fiat
}

// Pair reads what pricing a fiat amount in an asset needs: the asset's USD price and the
// units of the fiat currency one USD buys. A value that cannot be read now is UNAVAILABLE
// (fault.NotAvailable), naming it; the caller may try again.
func Pair(ctx context.Context, p Pricer, symbol, fiat string) (usd Price, perUSD decimal.Decimal, err error) {
	if usd, err = p.USD(ctx, symbol); err != nil {
		return Price{}, decimal.Decimal{}, fault.NotAvailable(err, "price of %s", symbol)
	}
	if perUSD, err = p.PerUSD(ctx, fiat); err != nil {
		return Price{}, decimal.Decimal{}, fault.NotAvailable(err, "rate of %s", fiat)
	}
	return usd, perUSD, nil
}

// PricedAsset is an asset of a network, with what pricing a fiat amount in it needs.
type PricedAsset struct {
	Network chain.Network
	Asset   chain.Asset
	USD     Price           // of one unit of the asset
	PerUSD  decimal.Decimal // units of the fiat currency one USD buys
}

// PriceAsset finds currency on chain chainID and prices it in fiat (Pair): what a deposit
// address and a withdrawal quote start from. A chain or asset that is not configured is
// INVALID_ARGUMENT naming chainId or currency ("USDT is not <offered> on …"); a price or rate
// that cannot be read, UNAVAILABLE.
func PriceAsset(ctx context.Context, chains *chain.Registry, p Pricer, chainID int64, currency, fiat, offered string) (PricedAsset, error) {
	n, ok := chains.Network(chainID)
	if !ok {
		return PricedAsset{}, fault.Invalid("chainId", "chain %d is not supported; GET /chain lists the networks", chainID)
	}
	asset, ok := n.Asset(currency)
	if !ok {
		return PricedAsset{}, fault.Invalid("currency", "%s is not %s on %s (chain %d)", currency, offered, n.Name, chainID)
	}
	usd, perUSD, err := Pair(ctx, p, asset.Symbol, fiat)
	return PricedAsset{Network: n, Asset: asset, USD: usd, PerUSD: perUSD}, err
}
