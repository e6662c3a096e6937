package chain

import "fmt"

// Connected is the configured networks and a client for each: where the deposit pipeline and
// the withdrawal service look up the chain a deposit or a payout is on.
type Connected struct {
	*Registry

	Clients map[int64]*Client
}

// Lookup returns a chain's network and client, or an error when either is missing.
func (c Connected) Lookup(chainID int64) (Network, *Client, error) {
	n, ok := c.Network(chainID)
	cl := c.Clients[chainID]
	if !ok || cl == nil {
		return n, nil, fmt.Errorf("chain %d is not configured", chainID)
	}
	return n, cl, nil
}
