package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/rpc"
	"github.com/cofferhq/coffer/server/internal/testwebhook"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

const opsUsage = "coffer ops pause|resume --scope global|chain|operator [--chain-id N] [--operator ID] --reason TEXT [--json] | pauses [--all] [--json] | " +
	"tx list [--stuck] [--json] | tx resend|cancel|fail --id N --reason TEXT [--json] | " +
	"threshold set --chain-id N --wallet ADDR --currency SYMBOL --amount DECIMAL|\"\" --reason TEXT [--json] | threshold list [--json] | " +
	"batches [--chain-id N] [--open] [--limit N] [--json] | deadletters [--operator ID] [--limit N] [--json] | redeliver --id EVENT_ID [--json] | " +
	"test-webhook --operator ID --event DEPOSIT|WITHDRAW_REQUEST|WITHDRAW_COMPLETE [--amount DECIMAL] [--currency SYMBOL] [--chain-id N] [--address ADDR] [--json]"

// runOps is `coffer ops`: the service team's payout actions, audited with the CLI actor.
func runOps(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, opsUsage)
	}
	switch args[0] {
	case "pause", "resume":
		return runOpsPause(ctx, args[0], args[1:], out)
	case "pauses":
		return runOpsPauses(ctx, args[1:], out)
	case "threshold":
		if len(args) > 1 && args[1] == "set" {
			return runOpsThresholdSet(ctx, args[2:], out)
		}
		if len(args) > 1 && args[1] == "list" {
			return runOpsThresholdList(ctx, args[2:], out)
		}
		return fmt.Errorf("%w: %s", errUsage, opsUsage)
	case "batches":
		return runOpsBatches(ctx, args[1:], out)
	case "deadletters":
		return runOpsDeadLetters(ctx, args[1:], out)
	case "redeliver":
		return runOpsRedeliver(ctx, args[1:], out)
	case "test-webhook":
		return runOpsTestWebhook(ctx, args[1:], out)
	case "tx":
		if len(args) > 1 && args[1] == "list" {
			return runOpsTxList(ctx, args[2:], out)
		}
		if len(args) > 1 && (args[1] == "resend" || args[1] == "cancel" || args[1] == "fail") {
			return runOpsTxAction(ctx, args[1], args[2:], out)
		}
		return fmt.Errorf("%w: %s", errUsage, opsUsage)
	default:
		return fmt.Errorf("%w: unknown subcommand %q: %s", errUsage, args[0], opsUsage)
	}
}

// runOpsPause is `coffer ops pause` and `coffer ops resume`.
func runOpsPause(ctx context.Context, sub string, args []string, out io.Writer) error {
	fs := newEnvFlags("ops " + sub)
	scope := fs.String("scope", "", "global, chain or operator (required)")
	chainID := fs.Int64("chain-id", 0, "the chain (--scope chain)")
	operatorID := fs.String("operator", "", "the operator id (--scope operator)")
	reason := fs.String("reason", "", "why (required; kept in the audit trail)")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.PausePayouts or ResumePayouts response)")
	env, err := fs.open(ctx, args, needServices, func() error {
		s := domain.PauseScope(*scope)
		switch {
		case s != domain.PauseGlobal && s != domain.PauseChain && s != domain.PauseOperator:
			return fmt.Errorf("%w: --scope must be global, chain or operator", errUsage)
		case (s == domain.PauseChain) != (*chainID != 0), (s == domain.PauseOperator) != (*operatorID != ""):
			return fmt.Errorf("%w: --chain-id goes with (only with) --scope chain, --operator with (only with) --scope operator", errUsage)
		}
		return cmp.Or(badOperatorID("operator", *operatorID), usageIf(*reason == "", "--reason is required"))
	})
	if err != nil {
		return err
	}
	defer env.close()
	p := withdrawal.Pause{Scope: domain.PauseScope(*scope), ChainID: *chainID, OperatorID: *operatorID, Reason: *reason, Actor: cliActor()}
	var got domain.PayoutPause
	if sub == "pause" {
		got, err = env.services.Withdrawals.PausePayouts(ctx, p)
	} else {
		got, err = env.services.Withdrawals.ResumePayouts(ctx, p)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		if sub == "pause" {
			return printProtoJSON(out, &cofferv1.PausePayoutsResponse{Pause: rpc.PauseProto(got)})
		}
		return printProtoJSON(out, &cofferv1.ResumePayoutsResponse{Pause: rpc.PauseProto(got)})
	}
	if sub == "pause" {
		fmt.Fprintf(out, "pause %d: %s\n", got.ID, got.Describe())
	} else {
		fmt.Fprintf(out, "pause %d lifted by %s: %s\n", got.ID, got.ResumedBy, got.ResumeReason)
	}
	return nil
}

// runOpsPauses is `coffer ops pauses`: the active pauses, or all with --all.
func runOpsPauses(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops pauses")
	all := fs.Bool("all", false, "lifted pauses too")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListPayoutPauses response)")
	env, err := fs.open(ctx, args, needServices, nil)
	if err != nil {
		return err
	}
	defer env.close()
	list, err := env.services.Withdrawals.PayoutPauses(ctx, *all, 0)
	if err != nil {
		return err
	}
	return printList(out, *asJSON, rpc.PausesProto(list), "payouts are not paused", "ID\tSCOPE\tCHAIN\tOPERATOR\tPAUSED BY\tSINCE\tREASON\tRESUMED", list,
		func(p domain.PayoutPause) []any {
			chain, resumed := "-", "-"
			if p.ChainID != 0 {
				chain = strconv.FormatInt(p.ChainID, 10)
			}
			if p.ResumedAt != nil {
				resumed = fmt.Sprintf("%s by %s: %s", p.ResumedAt.UTC().Format(time.DateTime), p.ResumedBy, p.ResumeReason)
			}
			return []any{p.ID, p.Scope, chain, orDash(p.OperatorID), p.PausedBy, p.PausedAt.UTC().Format(time.DateTime), p.Reason, resumed}
		})
}

// runOpsTxList is `coffer ops tx list`: transactions, or with --stuck those needing an engineer.
func runOpsTxList(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops tx list")
	stuck := fs.Bool("stuck", false, "only those needing an engineer: pending for longer than --stuck-after, reverted or cancelled payouts not resolved")
	stuckAfter := fs.Duration("stuck-after", rpc.DefaultStuckAfter, "pending for longer than this counts as stuck")
	limit := limitFlag(fs.FlagSet, 100, 500, "transactions")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListChainTransactions response)")
	env, err := fs.open(ctx, args, needServices, nil)
	if err != nil {
		return err
	}
	defer env.close()
	list, err := env.services.Withdrawals.ChainTxs(ctx, *stuck, *stuckAfter, *limit)
	if err != nil {
		return err
	}
	return printList(out, *asJSON, rpc.ChainTxsProto(list), "no transactions", "ID\tCHAIN\tPURPOSE\tWITHDRAWAL\tNONCE\tSTATE\tATTEMPTS\tREQUESTED\tCREATED\tLATEST HASH", list,
		func(t withdrawal.TxWithActions) []any {
			return []any{t.ID, t.ChainID, t.Purpose, orDash(t.WithdrawalID), t.Nonce, t.State, len(t.Attempts), orDash(string(t.RequestedAction)),
				t.CreatedAt.UTC().Format(time.DateTime), t.Latest().Hash}
		})
}

// runOpsBatches is `coffer ops batches`: EIP-7702 batch sweeps newest first, one line per
// address a batch carried (grep an address or a deposit id to find its batch).
func runOpsBatches(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops batches")
	chainID := fs.Int64("chain-id", 0, "only this chain (0: every chain)")
	open := fs.Bool("open", false, "only batches still on their way (SENDING)")
	limit := limitFlag(fs.FlagSet, 100, 500, "batches")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListSweepBatches response)")
	env, err := fs.open(ctx, args, needServices, func() error { return usageIf(*chainID < 0, "--chain-id must be positive (or 0 for every chain)") })
	if err != nil {
		return err
	}
	defer env.close()
	list, err := env.services.Deposits.ListBatches(ctx, *chainID, *open, *limit)
	if err != nil {
		return err
	}
	res := rpc.SweepBatchesProto(list)
	type line struct {
		b *cofferv1.SweepBatch
		e *cofferv1.SweepBatchEntry
	}
	var lines []line
	for _, b := range res.GetBatches() {
		for _, e := range b.GetEntries() {
			lines = append(lines, line{b, e})
		}
	}
	return printList(out, *asJSON, res, "no batches", "BATCH\tCHAIN\tSTATUS\tTX\tSTATE\tCREATED\tSWEEP\tADDRESS\tAMOUNTS\tAUTHORIZED\tOUTCOME\tSKIPS\tSWEEP NOW\tDEPOSITS\tHASH",
		lines, func(l line) []any {
			amounts := make([]string, 0, len(l.e.GetAssets()))
			deposits := make([]string, 0, len(l.e.GetDepositIds()))
			for _, a := range l.e.GetAssets() {
				amount := strings.TrimSpace(a.GetAmount() + " " + cmp.Or(a.GetCurrency(), a.GetToken()))
				if a.GetFee() != "" && a.GetFee() != "0" {
					amount += " (fee " + a.GetFee() + ")"
				}
				amounts = append(amounts, amount)
			}
			for _, id := range l.e.GetDepositIds() {
				deposits = append(deposits, strconv.FormatInt(id, 10))
			}
			now := l.e.GetSweepStatus()
			if l.e.GetCurrentBatchId() != 0 && l.e.GetCurrentBatchId() != l.b.GetId() {
				now += " in batch " + strconv.FormatInt(l.e.GetCurrentBatchId(), 10)
			}
			authorized := "no"
			if l.e.GetAuthorized() {
				authorized = "yes"
			}
			return []any{l.b.GetId(), l.b.GetChainId(), l.b.GetStatus(), l.b.GetTxId(), l.b.GetTxState(),
				l.b.GetCreatedAt().AsTime().UTC().Format(time.DateTime), l.e.GetSweepId(), l.e.GetAddress(), strings.Join(amounts, ","),
				authorized, l.e.GetOutcome(), l.e.GetSkips(), orDash(now), orDash(strings.Join(deposits, ",")), orDash(l.b.GetMinedHash())}
		})
}

// runOpsTxAction is `coffer ops tx resend|cancel|fail`.
func runOpsTxAction(ctx context.Context, action string, args []string, out io.Writer) error {
	fs := newEnvFlags("ops tx " + action)
	id := fs.Int64("id", 0, "transaction id (required; `coffer ops tx list --stuck`)")
	reason := fs.String("reason", "", "why (required; kept in the audit trail)")
	asJSON := fs.Bool("json", false, "print JSON (the transaction, as OpsService answers it)")
	env, err := fs.open(ctx, args, needServices, func() error { return usageIf(*id <= 0 || *reason == "", "--id and --reason are required") })
	if err != nil {
		return err
	}
	defer env.close()
	var t withdrawal.TxWithActions
	switch action {
	case "fail":
		t, err = env.services.Withdrawals.FailPayout(ctx, *id, cliActor(), *reason)
	default:
		t, err = env.services.Withdrawals.RequestTx(ctx, *id, domain.TxAction(action), cliActor(), *reason)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printProtoJSON(out, rpc.ChainTxProto(t))
	}
	switch action {
	case "fail":
		fmt.Fprintf(out, "transaction %d marked failed; withdrawal %s is open again, its funds released\n", t.ID, t.WithdrawalID)
	default:
		fmt.Fprintf(out, "transaction %d: %s requested; the worker advancing it sends the new attempt\n", t.ID, action)
	}
	return nil
}

// runOpsThresholdSet is `coffer ops threshold set`.
func runOpsThresholdSet(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops threshold set")
	chainID := fs.Int64("chain-id", 0, "the chain (required)")
	wallet := fs.String("wallet", "", "the wallet's address: hot wallet, gas tank, bankroll, a treasury (required)")
	currency := fs.String("currency", "", "asset symbol, e.g. ETH or USDT (required)")
	amount := fs.String("amount", "", "threshold in token units, e.g. 0.5; empty removes it")
	reason := fs.String("reason", "", "why (required; kept in the audit trail)")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.SetWalletThreshold response)")
	env, err := fs.open(ctx, args, needServices, func() error {
		return usageIf(*chainID <= 0 || *wallet == "" || *currency == "" || *reason == "", "--chain-id, --wallet, --currency and --reason are required")
	})
	if err != nil {
		return err
	}
	defer env.close()
	t, err := env.services.Funds.SetThreshold(ctx, funds.ThresholdChange{ChainID: *chainID, Wallet: *wallet, Currency: *currency,
		Amount: *amount, Reason: *reason, Actor: cliActor()})
	if err != nil {
		return err
	}
	if *asJSON {
		return printProtoJSON(out, &cofferv1.SetWalletThresholdResponse{Threshold: rpc.ThresholdProto(t)})
	}
	if t.Removed {
		fmt.Fprintf(out, "threshold of %s %s on chain %d removed\n", t.Wallet, t.Currency, t.ChainID)
		return nil
	}
	fmt.Fprintf(out, "threshold of %s on chain %d: %s %s\n", t.Wallet, t.ChainID, t.Amount, t.Currency)
	return nil
}

// runOpsThresholdList is `coffer ops threshold list`.
func runOpsThresholdList(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops threshold list")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListWalletThresholds response)")
	env, err := fs.open(ctx, args, needServices, nil)
	if err != nil {
		return err
	}
	defer env.close()
	list, err := env.services.Funds.Thresholds(ctx)
	if err != nil {
		return err
	}
	return printList(out, *asJSON, rpc.ThresholdsProto(list), "no thresholds", "CHAIN\tWALLET\tCURRENCY\tTHRESHOLD\tSET BY\tREASON", list,
		func(t domain.WalletThreshold) []any {
			return []any{t.ChainID, t.Wallet, t.Currency, t.Amount, t.SetBy, t.Reason}
		})
}

// runOpsDeadLetters is `coffer ops deadletters`: webhooks that exhausted their attempts,
// newest first, as OpsService.ListDeadLetteredWebhooks lists them (its first page).
func runOpsDeadLetters(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops deadletters")
	operatorID := fs.String("operator", "", "only this operator's (its id)")
	limit := limitFlag(fs.FlagSet, webhook.DefaultPageSize, webhook.MaxPageSize, "dead letters")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.ListDeadLetteredWebhooks response)")
	env, err := fs.open(ctx, args, needServices, func() error { return badOperatorID("operator", *operatorID) })
	if err != nil {
		return err
	}
	defer env.close()
	list, next, err := env.services.Webhooks.ListDead(ctx, domain.AllOperators(), *operatorID, *limit, "")
	if err != nil {
		return err
	}
	return printList(out, *asJSON, rpc.DeadLettersProto(list, next), "no dead letters", "EVENT\tOPERATOR\tTYPE\tATTEMPTS\tDEAD SINCE\tURL\tLAST ERROR", list,
		func(e domain.WebhookEvent) []any {
			dead := "-"
			if e.DeadAt != nil {
				dead = e.DeadAt.UTC().Format(time.DateTime)
			}
			return []any{e.ID, e.OperatorID, e.EventType, e.Attempts, dead, orDash(e.LastURL), orDash(e.LastError)}
		})
}

// runOpsRedeliver is `coffer ops redeliver`: a dead letter queued again (the same id and body),
// as OpsService.RedeliverDeadLetter does; the running service's workers deliver it.
func runOpsRedeliver(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops redeliver")
	id := fs.String("id", "", "the webhook's event id (required; `coffer ops deadletters`)")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.RedeliverDeadLetter response)")
	env, err := fs.open(ctx, args, needServices, func() error {
		if *id == "" {
			return usageIf(true, "--id is required")
		}
		_, err := uuid.Parse(*id)
		return usageIf(err != nil, fmt.Sprintf("--id must be a webhook's event id (a UUID), not %q", *id))
	})
	if err != nil {
		return err
	}
	defer env.close()
	d, err := env.services.Webhooks.Redeliver(ctx, domain.AllOperators(), *id)
	if err != nil {
		return err
	}
	if *asJSON {
		return printProtoJSON(out, rpc.RedeliveryProto(d))
	}
	fmt.Fprintf(out, "webhook %s queued again (%d attempts so far); the running service's workers deliver it\n", d.ID, d.Attempts)
	return nil
}

// runOpsTestWebhook is `coffer ops test-webhook`: an onboarding test event sent to an
// operator's webhookUrl and its answer printed, as OpsService.SendTestEvent does. It exits 0
// whatever the endpoint answered: the answer is the result.
func runOpsTestWebhook(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("ops test-webhook")
	operatorID := fs.String("operator", "", "the operator whose webhookUrl receives the event (required)")
	event := fs.String("event", "", "DEPOSIT, WITHDRAW_REQUEST or WITHDRAW_COMPLETE (required)")
	amount := fs.String("amount", "", "token units for DEPOSIT, fiat for the withdrawal events (default 25 in the operator's currency)")
	currency := fs.String("currency", "", "token symbol (default: the first chain's first token)")
	chainID := fs.Int64("chain-id", 0, "chain id (default: the first configured chain)")
	address := fs.String("address", "", "withdrawal destination (withdrawal events)")
	asJSON := fs.Bool("json", false, "print JSON (the OpsService.SendTestEvent response)")
	req := &cofferv1.SendTestEventRequest{}
	env, err := fs.open(ctx, args, needServices, func() error {
		req.OperatorId = strings.ToLower(*operatorID)
		req.Event = cofferv1.WebhookEventType(cofferv1.WebhookEventType_value["WEBHOOK_EVENT_TYPE_"+strings.ToUpper(*event)])
		req.Amount, req.Currency, req.Address = optional(*amount), optional(*currency), optional(*address)
		if *chainID != 0 {
			req.ChainId = chainID
		}
		if err := rpc.Validate(req); err != nil {
			return usageIf(true, err.Error()+" (--operator, --event DEPOSIT|WITHDRAW_REQUEST|WITHDRAW_COMPLETE, --amount, --currency, --chain-id, --address)")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer env.close()
	sent, err := env.services.TestWebhooks().SendToOperator(ctx, req.GetOperatorId(), domain.EventType(strings.ToUpper(*event)),
		testwebhook.Overrides{Amount: req.Amount, Currency: req.Currency, ChainID: req.ChainId, Address: req.Address})
	if err != nil {
		return err
	}
	if *asJSON {
		return printProtoJSON(out, rpc.TestEventProto(sent))
	}
	r := sent.Result
	switch {
	case r.Acked:
		fmt.Fprintf(out, "test %s %s delivered: HTTP %d, error 0\n", sent.Event, sent.EventID, r.Status)
	case r.Err != nil:
		fmt.Fprintf(out, "test %s %s not delivered: %v (code %d)\n", sent.Event, sent.EventID, r.Err, sent.Code)
	default:
		fmt.Fprintf(out, "test %s %s refused: HTTP %d, error %d %q\n", sent.Event, sent.EventID, r.Status, sent.Code, r.Description)
	}
	return nil
}

// optional is a flag's value as an optional field: nil when it is empty.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
