package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
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
	fs := newEnvFlags("operator " + sub)
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
	env, err := fs.open(ctx, args, needServices, func() error {
		return cmp.Or(usageIf(*id == "", "--id is required"),
			usageIf(chainID != nil && *chainID <= 0, "--chain-id (positive) is required"),
			usageIf(sub == "adjust" && (*currency == "" || *amount == "" || strings.TrimSpace(*note) == ""), "--currency, --amount and --note are required"),
			badOperatorID("id", *id))
	})
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
		return printTable(out, "", "CHAIN\tCURRENCY\tAVAILABLE\tRESERVED", items,
			func(b balanceJSON) []any { return []any{b.ChainID, b.Currency, b.Available, b.Reserved} })
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
// operator's funds, per chain and asset. It exits 1 when any line that was read is short,
// else 3 when a chain or the database could not be read (could not check): an alert must
// tell missing money from an outage.
func runReconcile(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("reconcile")
	chainID := fs.Int64("chain-id", 0, "only this chain")
	asJSON := fs.Bool("json", false, "print JSON")
	env, err := fs.open(ctx, args, needServices, nil)
	if err != nil {
		return uncheckedUnlessUsage(err)
	}
	defer env.close()
	rep, err := env.services.Reconciler.ReconcileEach(ctx, *chainID)
	if err != nil {
		return uncheckedUnlessUsage(err)
	}
	res := rpc.ReconcileProto(rep.Lines, time.Now())
	res.Ok = rep.Covered()
	err = printList(out, *asJSON, res, "", "CHAIN\tCURRENCY\tHOLDINGS\tOWED\tSURPLUS\tOK", res.Lines,
		func(l *cofferv1.ReconciliationLine) []any {
			return []any{l.ChainId, l.Currency, l.Holdings, l.Owed, l.Surplus, l.Ok}
		})
	if err != nil {
		return err
	}
	unread := make([]error, len(rep.Unread))
	for i, u := range rep.Unread {
		unread[i] = u.Err
	}
	if rep.Short() {
		return errors.Join(append([]error{errors.New("the books are not covered on every line: on-chain holdings are short of what operators hold")},
			unread...)...)
	}
	if len(unread) > 0 {
		return fmt.Errorf("%w: %w", errUnchecked, errors.Join(unread...))
	}
	return nil
}

// uncheckedUnlessUsage is a reconciliation's error that stopped it before any line was
// judged: bad input (INVALID_ARGUMENT: an unconfigured chain) is a usage error, anything
// else (the database, the configuration) means the books could not be checked.
func uncheckedUnlessUsage(err error) error {
	if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return err
	}
	if fault.Is(err, fault.InvalidArgument) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return fmt.Errorf("%w: %w", errUnchecked, err)
}
