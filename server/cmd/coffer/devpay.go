package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/devpay"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// runDevPay is `coffer dev pay`: it pays from the running dev stack's faucet (its key and
// chain from <data-dir>/dev.json) the way a user's wallet does, and prints the transaction
// hash once the payment is mined. Bad input is a usage error (exit 2) and sends nothing.
func runDevPay(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("dev pay")
	to := fs.String("to", "", "recipient address (0x…), e.g. a deposit address the widget shows")
	currency := fs.String("currency", "", "ETH or a token of the dev chain (USDT, USDC)")
	amount := fs.String("amount", "", "amount in whole units, e.g. 25 or 0.05 (at most the currency's decimals)")
	chainID := fs.Int64("chain-id", 0, "chain id (default: the dev stack's only chain)")
	dataDir := fs.String("data-dir", ".coffer", "data directory of the running coffer dev (its dev.json)")
	asJSON := fs.Bool("json", false, "print {hash, chainId, from, to, currency, amount, block}")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: coffer dev pay --to ADDR --currency SYMBOL --amount DECIMAL [--chain-id N] [--data-dir D] [--json]\n\n"+
			"Pays from the dev faucet of a running `coffer dev` (a plain transfer or an ERC20 transfer()),\n"+
			"waits until it is mined and prints the transaction hash.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	for name, v := range map[string]string{"--to": *to, "--currency": *currency, "--amount": *amount} {
		if v == "" {
			return fmt.Errorf("%w: %s is required (coffer dev pay -h)", errUsage, name)
		}
	}
	f, err := devenv.ReadFile(*dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no %s: start the dev stack first (make run, or coffer dev --data-dir %s)", filepath.Join(*dataDir, "dev.json"), *dataDir)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(*dataDir, "dev.json"), err)
	}
	network, err := devChain(f, *chainID)
	if err != nil {
		return err
	}
	payment, err := devpay.Check(network, *to, *currency, *amount)
	if err != nil {
		return fmt.Errorf("%w: --%s", errUsage, fault.As(err).Message)
	}
	key, err := crypto.HexToECDSA(strings.TrimPrefix(f.FaucetPrivateKey, "0x"))
	if err != nil {
		return fmt.Errorf("dev.json faucetPrivateKey: %w", err)
	}
	client := chain.Dial(network, nil)
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	receipt, err := devpay.New(key, network, client).Pay(ctx, payment)
	if err != nil {
		return errors.New(fault.As(err).Message)
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(receipt)
	}
	_, err = fmt.Fprintln(out, receipt.Hash.Hex())
	return err
}

// devChain is the chain of dev.json with the given id (0: the only one).
func devChain(f devenv.File, id int64) (chain.Network, error) {
	var ids []string
	for _, c := range f.Chains {
		if c.ChainID == id || (id == 0 && len(f.Chains) == 1) {
			return c.Network(), nil
		}
		ids = append(ids, strconv.FormatInt(c.ChainID, 10))
	}
	if id == 0 {
		return chain.Network{}, fmt.Errorf("%w: --chain-id is required: the dev stack runs chains %s", errUsage, strings.Join(ids, ", "))
	}
	return chain.Network{}, fmt.Errorf("%w: --chain-id: the dev stack runs no chain %d (it runs %s)", errUsage, id, strings.Join(ids, ", "))
}
