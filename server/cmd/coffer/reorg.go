package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// runDepositReorged is `coffer deposit reorged`: the deposits whose block left the chain after
// their confirmation depth (unresolved ones; --all for every one), with what was reversed.
func runDepositReorged(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("deposit reorged")
	operatorID := fs.String("operator-id", "", "only this operator")
	all := fs.Bool("all", false, "resolved ones too")
	limit := limitFlag(fs.FlagSet, 50, 200, "deposits")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListReorgedDeposits response)")
	env, err := fs.open(ctx, args, needServices, func() error { return badOperatorID("operator-id", *operatorID) })
	if err != nil {
		return err
	}
	defer env.close()
	list, next, err := env.services.Deposits.ListReorgs(ctx, domain.AllOperators(), *operatorID, *all, *limit, "")
	if err != nil {
		return err
	}
	res := rpc.ReorgsProto(list, next)
	err = printList(out, *asJSON, res, "no reorged deposits", "DEPOSIT\tOPERATOR\tCHAIN\tCURRENCY\tGROSS (RAW)\tREVERSED (RAW)\tBLOCK\tWAS\tMINED AGAIN\tRESOLUTION",
		res.Items, func(r *cofferv1.ReorgedDeposit) []any {
			d := r.GetDeposit()
			again, resolution := "-", "unresolved"
			if r.GetReincludedBlock() > 0 {
				again = strconv.FormatInt(r.GetReincludedBlock(), 10)
			}
			if r.GetResolution() != cofferv1.ReorgResolution_REORG_RESOLUTION_UNSPECIFIED {
				resolution = fmt.Sprintf("%s by %s: %s", strings.TrimPrefix(r.GetResolution().String(), "REORG_RESOLUTION_"), r.GetResolvedBy(), r.GetNote())
			}
			return []any{d.GetDepositId(), d.GetOperatorId(), d.GetChainId(), d.GetCurrency(), d.GetGrossAmount(), r.GetReversedAmount(),
				r.GetBlockNumber(), strings.TrimPrefix(r.GetPriorStatus().String(), "DEPOSIT_STATUS_"), again, resolution}
		})
	if err != nil || *asJSON {
		return err
	}
	for _, r := range res.Items {
		d := r.GetDeposit()
		fmt.Fprintf(out, "deposit %d: tx %s (log index %d)\n", d.GetDepositId(), d.GetTransactionHash(), d.GetLogIndex())
	}
	return nil
}

// runDepositResolve is `coffer deposit resolve`: an engineer's decision on a reorged deposit,
// audited with the note and the CLI actor.
func runDepositResolve(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("deposit resolve")
	id := fs.Int64("id", 0, "deposit id (required)")
	resolution := fs.String("resolution", "", "reinstate (count it again: the payment was re-sent or re-included) or write-off (its credit stays reversed) (required)")
	note := fs.String("note", "", "why (required; kept in the audit trail)")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ResolveReorgedDeposit response)")
	env, err := fs.open(ctx, args, needServices, func() error {
		return usageIf(*id <= 0 || *resolution == "" || strings.TrimSpace(*note) == "", "--id, --resolution reinstate|write-off and --note are required")
	})
	if err != nil {
		return err
	}
	defer env.close()
	r, err := env.services.Deposits.ResolveReorg(ctx, deposit.Resolution{DepositID: *id, Resolution: *resolution, Note: *note,
		Actor: cliActor()})
	if err != nil {
		return err
	}
	res := &cofferv1.ResolveReorgedDepositResponse{Item: rpc.ReorgedProto(r)}
	if *asJSON {
		return printProtoJSON(out, res)
	}
	fmt.Fprintf(out, "deposit %d: %s by %s; it is now %s\n", *id, r.Resolution, r.ResolvedBy, r.Deposit.Status)
	return nil
}
