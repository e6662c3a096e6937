package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
)

// ChainServer implements coffer.v1.ChainService.
type ChainServer struct {
	Chains *chain.Registry
}

// ListChains lists the configured networks without secrets.
func (s *ChainServer) ListChains(context.Context, *cofferv1.ListChainsRequest) (*cofferv1.ListChainsResponse, error) {
	res := &cofferv1.ListChainsResponse{}
	for _, n := range s.Chains.Networks() {
		c := &cofferv1.Chain{ChainId: n.ChainID, Name: n.Name, NativeSymbol: n.NativeSymbol, NativeDecimals: n.NativeDecimals,
			Confirmations: n.Confirmations, Finalized: n.Finalized, Tokens: []*cofferv1.Token{}}
		for _, t := range n.Tokens {
			c.Tokens = append(c.Tokens, &cofferv1.Token{Symbol: t.Symbol, ContractAddress: t.ContractAddress.Hex(), Decimals: t.Decimals})
		}
		res.Chains = append(res.Chains, c)
	}
	return res, nil
}
