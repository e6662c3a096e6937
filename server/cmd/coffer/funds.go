package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// isFundsSubcommand reports the operator subcommands about funds.
func isFundsSubcommand(sub string) bool {
	switch sub {
	case "treasury", "balance", "adjust":
		return true
	}
	return false
}

// balanceJSON is one line of `coffer operator balance --json` (DESIGN.md's shape).
type balanceJSON struct {
	ChainID   int64  `json:"chainId"`
	Currency  string `json:"currency"`
	Available string `json:"available"`
	Reserved  string `json:"reserved"`
}

func toBalanceJSON(b funds.Balance) balanceJSON {
	return balanceJSON{ChainID: b.ChainID, Currency: b.Currency, Available: b.Available.StringFixed(b.Decimals),
		Reserved: b.Reserved.StringFixed(b.Decimals)}
}

// cliActor names the service-team member behind a CLI entry in the funds' audit trail.
func cliActor() domain.Actor {
	who := os.Getenv("USER")
	if who == "" {
		who = "unknown"
	}
	return domain.ServiceTeamActor("cli:" + who)
}

// runOperatorFunds is `coffer operator treasury|balance|adjust`.
func runOperatorFunds(ctx context.Context, sub string, args []string, out io.Writer) error {
	fs := newFlags("operator " + sub)
	dataDir := fs.String("data-dir", ".coffer", "coffer dev data directory, used when DATABASE_URL is unset")
	asJSON := fs.Bool("json", false, "print JSON")
	id := fs.String("id", "", "operator id (required)")
	var chainID *int64
	var currency, amount, note *string
	switch sub {
	case "treasury":
		chainID = fs.Int64("chain-id", 0, "chain id (required)")
	case "adjust":
		chainID = fs.Int64("chain-id", 0, "chain id (required)")
		currency = fs.String("currency", "", "asset symbol, e.g. USDT (required)")
		amount = fs.String("amount", "", "signed amount in token units, e.g. +100 or -2.5 (required)")
		note = fs.String("note", "", "why the funds change (required; kept in the audit trail)")
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return fmt.Errorf("%w: --id is required", errUsage)
	}
	if chainID != nil && *chainID <= 0 {
		return fmt.Errorf("%w: --chain-id (positive) is required", errUsage)
	}
	if sub == "adjust" && (*currency == "" || *amount == "" || strings.TrimSpace(*note) == "") {
		return fmt.Errorf("%w: --currency, --amount and --note are required", errUsage)
	}
	env, err := openCLIEnv(ctx, *dataDir, needServices)
	if err != nil {
		return err
	}
	defer env.close()
	s := env.services
	if _, err := s.Operators.Get(ctx, *id); err != nil {
		return err
	}
	switch sub {
	case "treasury":
		addr, err := s.Deposits.TreasuryOn(ctx, *id, *chainID)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(out).Encode(map[string]string{"address": addr.Hex()})
		}
		fmt.Fprintf(out, "%s\n(payments to it on chain %d fund the operator's payouts; the same address serves every EVM chain)\n", addr.Hex(), *chainID)
		return nil
	case "balance":
		list, err := s.Funds.Balances(ctx, domain.Operators(*id))
		if err != nil {
			return err
		}
		items := make([]balanceJSON, len(list))
		for i, b := range list {
			items[i] = toBalanceJSON(b)
		}
		if *asJSON {
			return json.NewEncoder(out).Encode(items)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHAIN\tCURRENCY\tAVAILABLE\tRESERVED")
		for _, b := range items {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.ChainID, b.Currency, b.Available, b.Reserved)
		}
		return tw.Flush()
	default: // adjust
		b, err := s.Funds.Adjust(ctx, funds.Adjustment{OperatorID: *id, ChainID: *chainID, Currency: *currency, Amount: *amount,
			Note: *note, Actor: cliActor()})
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(out).Encode(toBalanceJSON(b))
		}
		j := toBalanceJSON(b)
		fmt.Fprintf(out, "adjusted: %s on chain %d now %s available, %s reserved\n", j.Currency, j.ChainID, j.Available, j.Reserved)
		return nil
	}
}

// runReconcile is `coffer reconcile`: the service's on-chain holdings against every
// operator's funds, per chain and asset. It exits 1 when any line is short.
func runReconcile(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("reconcile")
	dataDir := fs.String("data-dir", ".coffer", "coffer dev data directory, used when DATABASE_URL is unset")
	chainID := fs.Int64("chain-id", 0, "only this chain")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	env, err := openCLIEnv(ctx, *dataDir, needServices)
	if err != nil {
		return err
	}
	defer env.close()
	lines, err := env.services.Reconciler.Reconcile(ctx, *chainID)
	if err != nil {
		return err
	}
	res := rpc.ReconcileProto(lines, time.Now())
	if *asJSON {
		b, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(res)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(b))
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "CHAIN\tCURRENCY\tHOLDINGS\tOWED\tSURPLUS\tOK")
		for _, l := range res.Lines {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%t\n", l.ChainId, l.Currency, l.Holdings, l.Owed, l.Surplus, l.Ok)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !res.Ok {
		return errors.New("the books are not covered on every line: on-chain holdings are short of what operators hold")
	}
	return nil
}
