package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
)

// operatorJSON is the --json form of an operator.
type operatorJSON struct {
	ID              string    `json:"id"`
	OperatorKey     string    `json:"operatorKey,omitempty"`
	Name            string    `json:"name"`
	ParentID        string    `json:"parentId"`
	WebhookURL      string    `json:"webhookUrl"`
	ApprovalMode    string    `json:"approvalMode"`
	ApprovalEnabled bool      `json:"approvalEnabled"`
	PerTxCap        string    `json:"perTxCap"`
	DailyCap        string    `json:"dailyCap"`
	FiatCurrency    string    `json:"fiatCurrency"`
	RedirectURL     string    `json:"redirectUrl"`
	ThemeSlug       string    `json:"themeSlug"`
	DepositFeeBps   int32     `json:"depositFeeBps"`
	Active          bool      `json:"active"`
	KeyPrefixes     []string  `json:"keyPrefixes"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

func toJSON(o domain.Operator, key string, prefixes []string) operatorJSON {
	j := operatorJSON{ID: o.ID, OperatorKey: key, Name: o.Name, ParentID: o.ParentID, WebhookURL: o.WebhookURL,
		ApprovalMode: string(o.ApprovalMode), ApprovalEnabled: o.ApprovalEnabled, FiatCurrency: o.FiatCurrency,
		RedirectURL: o.RedirectURL, ThemeSlug: o.ThemeSlug, DepositFeeBps: o.DepositFeeBps, Active: o.Active,
		KeyPrefixes: prefixes, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
	if o.PerTxCap.Valid {
		j.PerTxCap = o.PerTxCap.Decimal.String()
	}
	if o.DailyCap.Valid {
		j.DailyCap = o.DailyCap.Decimal.String()
	}
	return j
}

// settingsFlags are the operator settings as flags; only flags given on the command line are
// applied (so update changes exactly what it is told).
type settingsFlags struct {
	fs                                                   *flag.FlagSet
	name, webhookURL, mode, perTx, daily, fiat, redirect string
	theme, parent                                        string
	approvalEnabled, inactive, active                    bool
	feeBps                                               int
}

func addSettingsFlags(fs *flag.FlagSet, update bool) *settingsFlags {
	s := &settingsFlags{fs: fs}
	fs.StringVar(&s.name, "name", "", "display name")
	fs.StringVar(&s.webhookURL, "webhook-url", "", "webhook URL (http or https)")
	fs.StringVar(&s.mode, "approval-mode", "", "withdrawal approval mode: sync (default) or external")
	fs.BoolVar(&s.approvalEnabled, "approval-enabled", false, "allow external-approval APPROVEs to release funds")
	fs.StringVar(&s.perTx, "per-tx-cap", "", `per-transaction approval cap in platform fiat ("" removes it)`)
	fs.StringVar(&s.daily, "daily-cap", "", `rolling 24-hour approval cap in platform fiat ("" removes it)`)
	fs.StringVar(&s.fiat, "fiat", "", "platform fiat currency (default USD)")
	fs.StringVar(&s.redirect, "redirect-url", "", `redirect URL of full-page flows ("" removes it)`)
	fs.StringVar(&s.theme, "theme", "", `default widget theme slug ("" removes it)`)
	fs.StringVar(&s.parent, "parent", "", "parent operator id (makes a sub-operator)")
	fs.IntVar(&s.feeBps, "fee-bps", 0, "deposit fee in basis points (0..5000: at most half of a deposit)")
	fs.BoolVar(&s.inactive, "inactive", false, "create or set the operator inactive")
	if update {
		fs.BoolVar(&s.active, "active", false, "set the operator active (--active=false to deactivate)")
	}
	return s
}

func (s *settingsFlags) settings() (domain.OperatorSettings, error) {
	set := map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	str := func(name, v string) *string {
		if !set[name] {
			return nil
		}
		return &v
	}
	var out domain.OperatorSettings
	out.Name, out.WebhookURL, out.PerTxCap, out.DailyCap = str("name", s.name), str("webhook-url", s.webhookURL), str("per-tx-cap", s.perTx), str("daily-cap", s.daily)
	out.FiatCurrency, out.RedirectURL, out.ThemeSlug, out.ParentID = str("fiat", s.fiat), str("redirect-url", s.redirect), str("theme", s.theme), str("parent", s.parent)
	if m := str("approval-mode", strings.ToUpper(s.mode)); m != nil {
		mode := domain.ApprovalMode(*m)
		out.ApprovalMode = &mode
	}
	if set["approval-enabled"] {
		out.ApprovalEnabled = &s.approvalEnabled
	}
	if set["fee-bps"] {
		// The flag is an int; the column an int32. Out of range it would wrap, not fail.
		if s.feeBps < math.MinInt32 || s.feeBps > math.MaxInt32 {
			return out, fmt.Errorf("%w: --fee-bps %d is out of range", errUsage, s.feeBps)
		}
		bps := int32(s.feeBps)
		out.DepositFeeBps = &bps
	}
	if set["inactive"] {
		active := !s.inactive
		out.Active = &active
	}
	if set["active"] {
		out.Active = &s.active
	}
	return out, nil
}

func runOperator(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: coffer operator create|update|get|list|rotate-key|treasury|balance|adjust [flags]", errUsage)
	}
	sub, args := args[0], args[1:]
	if isFundsSubcommand(sub) {
		return runOperatorFunds(ctx, sub, args, out)
	}
	fs := newEnvFlags("operator " + sub)
	asJSON := fs.Bool("json", false, "print JSON")
	var id, parentFilter *string
	var settings *settingsFlags
	var grace *time.Duration
	switch sub {
	case "create":
		settings = addSettingsFlags(fs.FlagSet, false)
	case "update":
		id = fs.String("id", "", "operator id (required)")
		settings = addSettingsFlags(fs.FlagSet, true)
	case "get":
		id = fs.String("id", "", "operator id (required)")
	case "list":
		parentFilter = fs.String("parent", "", "only the sub-operators of this operator")
	case "rotate-key":
		id = fs.String("id", "", "operator id (required)")
		grace = fs.Duration("grace", operator.DefaultGrace, "how long the previous key keeps working (0 revokes it now)")
	default:
		return fmt.Errorf("%w: unknown subcommand %q (create, update, get, list, rotate-key, treasury, balance, adjust)", errUsage, sub)
	}
	env, err := fs.open(ctx, args, needServices, func() error {
		var checks []error
		if id != nil {
			checks = append(checks, usageIf(*id == "", "--id is required"), badOperatorID("id", *id))
		}
		if parentFilter != nil {
			checks = append(checks, badOperatorID("parent", *parentFilter))
		}
		if settings != nil {
			checks = append(checks, badOperatorID("parent", settings.parent))
		}
		return cmp.Or(checks...)
	})
	if err != nil {
		return err
	}
	defer env.close()
	ops := env.services.Operators
	show := func(o domain.Operator, key string) error {
		prefixes, err := ops.KeyPrefixes(ctx, o.ID)
		if err != nil {
			return err
		}
		return printOperator(out, toJSON(o, key, prefixes), *asJSON)
	}
	switch sub {
	case "create":
		in, err := settings.settings()
		if err != nil {
			return err
		}
		o, key, err := ops.Create(ctx, in)
		if err != nil {
			return err
		}
		return show(o, key)
	case "update":
		in, err := settings.settings()
		if err != nil {
			return err
		}
		o, err := ops.Update(ctx, *id, in)
		if err != nil {
			return err
		}
		return show(o, "")
	case "get":
		o, err := ops.Get(ctx, *id)
		if err != nil {
			return err
		}
		return show(o, "")
	case "list":
		list, err := ops.List(ctx, *parentFilter)
		if err != nil {
			return err
		}
		if *asJSON {
			items := make([]operatorJSON, 0, len(list))
			for _, o := range list {
				prefixes, err := ops.KeyPrefixes(ctx, o.ID)
				if err != nil {
					return err
				}
				items = append(items, toJSON(o, "", prefixes))
			}
			return json.NewEncoder(out).Encode(items)
		}
		return printTable(out, "", "ID\tNAME\tPARENT\tMODE\tACTIVE\tWEBHOOK", list,
			func(o domain.Operator) []any {
				return []any{o.ID, o.Name, o.ParentID, o.ApprovalMode, o.Active, o.WebhookURL}
			})
	default: // rotate-key
		key, exp, err := ops.RotateKey(ctx, *id, *grace)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(out).Encode(map[string]any{"id": *id, "operatorKey": key, "previousKeyExpiresAt": exp})
		}
		fmt.Fprintf(out, "operator key: %s\n(shown once; the previous key works until %s)\n", key, exp.Format(time.RFC3339))
		return nil
	}
}

func printOperator(out io.Writer, o operatorJSON, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(out).Encode(o)
	}
	tw := newTable(out)
	rows := [][2]string{{"id", o.ID}, {"name", o.Name}, {"parent", o.ParentID}, {"webhook url", o.WebhookURL},
		{"approval mode", o.ApprovalMode}, {"approval enabled", strconv.FormatBool(o.ApprovalEnabled)}, {"per-tx cap", o.PerTxCap},
		{"daily cap", o.DailyCap}, {"fiat", o.FiatCurrency}, {"redirect url", o.RedirectURL}, {"theme", o.ThemeSlug},
		{"deposit fee (bps)", strconv.Itoa(int(o.DepositFeeBps))}, {"active", strconv.FormatBool(o.Active)}, {"keys", strings.Join(o.KeyPrefixes, ", ")}}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	if o.OperatorKey != "" {
		fmt.Fprintf(tw, "operator key:\t%s\t(shown once: store it now)\n", o.OperatorKey)
	}
	return tw.Flush()
}

const adminUsage = "coffer admin create --email E --password P [--operator-id ID] [--totp] [--json]\n" +
	"       coffer admin disable|enable|revoke-sessions --id ID|--email E [--json]"

func runAdmin(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, adminUsage)
	}
	switch args[0] {
	case "create":
		return runAdminCreate(ctx, args[1:], out)
	case "disable", "enable", "revoke-sessions":
		return runAdminAccess(ctx, args[0], args[1:], out)
	}
	return fmt.Errorf("%w: unknown subcommand %q\n%s", errUsage, args[0], adminUsage)
}

func runAdminCreate(ctx context.Context, args []string, out io.Writer) error {
	fs := newEnvFlags("admin create")
	email := fs.String("email", "", "login email (required)")
	password := fs.String("password", "", "password, at least 12 characters (default $COFFER_ADMIN_PASSWORD)")
	operatorID := fs.String("operator-id", "", "limit the admin to this operator and its sub-operators (default: service team)")
	totp := fs.Bool("totp", false, "enrol TOTP and print its otpauth:// URI once")
	asJSON := fs.Bool("json", false, "print JSON")
	env, err := fs.open(ctx, args, needServices, func() error {
		*password = cmp.Or(*password, os.Getenv("COFFER_ADMIN_PASSWORD"))
		return cmp.Or(usageIf(*email == "" || *password == "", "--email and --password (or $COFFER_ADMIN_PASSWORD) are required"),
			badOperatorID("operator-id", *operatorID))
	})
	if err != nil {
		return err
	}
	defer env.close()
	a, uri, err := env.services.Admins.Create(ctx, *email, *password, *operatorID, *totp)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(map[string]any{"id": a.ID, "email": a.Email, "operatorId": a.OperatorID, "totpUri": uri})
	}
	fmt.Fprintf(out, "admin %s created (id %s)\n", a.Email, a.ID)
	if uri != "" {
		fmt.Fprintf(out, "TOTP enrolment URI (shown once): %s\n", uri)
	}
	return nil
}

// runAdminAccess disables or enables an admin, or revokes its tokens (the service team's
// answer to a lost laptop or a departed colleague); each takes effect at once.
func runAdminAccess(ctx context.Context, sub string, args []string, out io.Writer) error {
	fs := newEnvFlags("admin " + sub)
	id := fs.String("id", "", "admin id")
	email := fs.String("email", "", "admin login email")
	asJSON := fs.Bool("json", false, "print JSON")
	env, err := fs.open(ctx, args, needServices, func() error {
		return usageIf((*id == "") == (*email == ""), "name the admin with --id or --email (one of them)")
	})
	if err != nil {
		return err
	}
	defer env.close()
	admins := env.services.Admins
	var a domain.Admin
	var revoked int64
	switch sub {
	case "disable":
		a, revoked, err = admins.Disable(ctx, *id, *email)
	case "enable":
		a, err = admins.Enable(ctx, *id, *email)
	default:
		a, revoked, err = admins.RevokeSessions(ctx, *id, *email)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		res := map[string]any{"id": a.ID, "email": a.Email, "operatorId": a.OperatorID, "active": a.Active}
		if sub != "enable" {
			res["revokedSessions"] = revoked
		}
		return json.NewEncoder(out).Encode(res)
	}
	switch sub {
	case "disable":
		fmt.Fprintf(out, "admin %s (id %s) disabled; %d sessions revoked\n", a.Email, a.ID, revoked)
	case "enable":
		fmt.Fprintf(out, "admin %s (id %s) enabled\n", a.Email, a.ID)
	default:
		fmt.Fprintf(out, "admin %s (id %s): %d sessions revoked\n", a.Email, a.ID, revoked)
	}
	return nil
}

func runDeposit(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "reorged" {
		return runDepositReorged(ctx, args[1:], out)
	}
	if len(args) > 0 && args[0] == "resolve" {
		return runDepositResolve(ctx, args[1:], out)
	}
	if len(args) == 0 || args[0] != "replay" {
		return fmt.Errorf("%w: coffer deposit replay --chain-id N --tx-hash H | reorged [--operator-id ID] [--all] [--json] | "+
			"resolve --id N --resolution reinstate|write-off --note TEXT [--json]", errUsage)
	}
	fs := newEnvFlags("deposit replay")
	chainID := fs.Int64("chain-id", 0, "chain id (required)")
	txHash := fs.String("tx-hash", "", "transaction hash, 0x + 64 hex (required)")
	asJSON := fs.Bool("json", false, "print JSON")
	env, err := fs.open(ctx, args[1:], needServices, func() error {
		return usageIf(*chainID <= 0 || !txHashPattern.MatchString(*txHash), "--chain-id (positive) and --tx-hash (0x + 64 hex) are required")
	})
	if err != nil {
		return err
	}
	defer env.close()
	res, err := env.services.Deposits.Replay(ctx, cliActor(), domain.AllOperators(), *chainID, common.HexToHash(*txHash))
	if err != nil {
		return replayError(err)
	}
	if *asJSON {
		type item struct {
			DepositID int64  `json:"depositId"`
			Status    string `json:"status"`
			Currency  string `json:"currency"`
			Amount    string `json:"grossAmount"`
			LogIndex  int64  `json:"logIndex"`
		}
		items := []item{}
		for _, d := range res.Deposits {
			items = append(items, item{d.ID, string(d.Status), d.Currency, d.GrossAmount.String(), d.LogIndex})
		}
		return json.NewEncoder(out).Encode(map[string]any{"alreadyKnown": res.AlreadyKnown, "deposits": items})
	}
	if res.AlreadyKnown {
		fmt.Fprintln(out, "already known; nothing changed:")
	} else {
		fmt.Fprintln(out, "replayed; the deposit is swept and its DEPOSIT webhook sent by the running service's workers:")
	}
	for _, d := range res.Deposits {
		fmt.Fprintf(out, "  deposit %d  %s %s (raw)  log index %d  %s\n", d.ID, d.GrossAmount, d.Currency, d.LogIndex, d.Status)
	}
	return nil
}

var txHashPattern = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)

// replayError spells out why a transaction does not qualify.
func replayError(err error) error {
	fe := fault.As(err)
	if reason, ok := fe.Details["reason"]; ok {
		return fmt.Errorf("%s (%s)", fe.Message, reason)
	}
	return err
}
