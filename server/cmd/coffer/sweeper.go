package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
)

// runChainsSweeper is `coffer chains sweeper --chain-id ID`: the EIP-7702 Sweeper a chain
// needs (sweepMethod eip7702, docs/sweeps-eip7702.md). It checks the chain's sweeperAddress
// against this database's gas tank and the chain's bankroll; without one, it prints the
// creation code of a Sweeper for them. Coffer does not deploy it itself: the gas tank's nonces
// belong to its transaction engine, and any funded account can deploy it (the constructor fixes
// the gas tank and the bankroll, whoever sends it).
func runChainsSweeper(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("chains sweeper")
	chainID := fs.Int64("chain-id", 0, "the chain, as the chains file lists it")
	env, err := fs.open(ctx, args, needServices, func() error {
		return usageIf(*chainID <= 0, "--chain-id is required")
	})
	if err != nil {
		return err
	}
	defer env.close()
	s := env.services
	n, ok := s.Chains.Network(*chainID)
	if !ok {
		return fmt.Errorf("chain %d is not in the chains file", *chainID)
	}
	gasTank := s.Wallet.GasTankAddress()
	fmt.Fprintf(out, "chain %d (%s): gas tank %s, bankroll %s, feeAddress %s, sweepMethod %s\n", n.ChainID, n.Name, gasTank.Hex(),
		n.BankrollAddress.Hex(), orNone(n.FeeAddress), n.SweepMethod)
	if n.SweeperAddress != (common.Address{}) {
		if err := batchsweep.Verify(ctx, s.Clients[n.ChainID], n.SweeperAddress, gasTank, n.BankrollAddress, n.FeeAddress); err != nil {
			return fmt.Errorf("sweeperAddress of chain %d: %w", n.ChainID, err)
		}
		fmt.Fprintf(out, "sweeperAddress %s obeys this gas tank, pays this bankroll and sends fees to this feeAddress: ok\n", n.SweeperAddress.Hex())
		return nil
	}
	fmt.Fprintf(out, "no sweeperAddress. Deploy this creation code from any funded account (not the gas tank: its nonces are "+
		"Coffer's), then set \"sweepMethod\": \"eip7702\" and \"sweeperAddress\" to the new contract on chain %d in the chains file "+
		"and run this command again:\n%s\n", n.ChainID, hexutil.Encode(batchsweep.DeployData(gasTank, n.BankrollAddress, n.FeeAddress)))
	return nil
}

// orNone is an optional address for a message: "none" when unset.
func orNone(a common.Address) string {
	if a == (common.Address{}) {
		return "none"
	}
	return a.Hex()
}
