// Command coffer is the one Coffer binary: the service (dev, serve), its migrations, and the
// service team's tools (operator, admin, deposit replay).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/google/uuid"
)

// badOperatorID is the usage error of an operator-id flag that is set but not an operator id
// (a UUID), else nil. The Connect services refuse such an id in their request validation; the
// CLI calls the services directly, and the database would answer a uuid syntax error (INTERNAL).
func badOperatorID(flagName, id string) error {
	if id == "" {
		return nil
	}
	_, err := uuid.Parse(id)
	return usageIf(err != nil, fmt.Sprintf("--%s must be an operator id (a UUID), not %q", flagName, id))
}

// errUsage marks a usage error: exit code 2.
var errUsage = errors.New("usage")

// errUnchecked marks a check that could not be made (a chain or the database did not answer):
// exit code 3, so that an alert on a check tells it from a check that failed (exit 1).
var errUnchecked = errors.New("could not check")

// exitCode is a command's exit code for the error it returned, and whether to print the
// error: the one place errors become exit codes.
func exitCode(err error) (code int, report bool) {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0, false
	case errors.Is(err, errUsage):
		return 2, true
	case errors.Is(err, errUnchecked):
		return 3, true
	default:
		return 1, true
	}
}

// usageIf is a usage error saying msg when bad holds, else nil.
func usageIf(bad bool, msg string) error {
	if !bad {
		return nil
	}
	return fmt.Errorf("%w: %s", errUsage, msg)
}

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, out io.Writer) error
}

func commands() []command {
	return []command{
		{"dev", "run everything on this machine: private PostgreSQL, dev chain, demo operator; dev pay: pay from its faucet", runDev},
		{"serve", "run the service (config from the environment; --role api|worker|all)", runServe},
		{"migrate", "apply database migrations", runMigrate},
		{"keygen", "print a new master key and ops token", runKeygen},
		{"keys", "master key custody: status, new-master, rotate-master", runKeys},
		{"operator", "manage operators: create, update, get, list, rotate-key, treasury, balance, adjust", runOperator},
		{"admin", "manage panel admins: create, disable, enable, revoke-sessions", runAdmin},
		{"deposit", "missed deposits: replay --chain-id N --tx-hash H; reorged deposits: reorged, resolve", runDeposit},
		{"reconcile", "prove on-chain holdings cover every operator's funds, per chain and asset", runReconcile},
		{"chains", "chains files: init --preset base,… (public-network presets), list, validate --file F", runChains},
		{"ops", "payout actions: pause, resume, pauses; stuck transactions: tx list, tx resend|cancel|fail; threshold set|list; EIP-7702 sweep batches; webhook deadletters, redeliver; onboarding test-webhook", runOps},
		{"version", "print the build: version, commit, build time, Go version (--json)", runVersion},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: coffer <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `coffer <command> -h` for a command's flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop() // before os.Exit, which runs no deferred call
	os.Exit(code)
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(errOut)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], out)
			code, report := exitCode(err)
			if report {
				fmt.Fprintln(errOut, "coffer "+c.name+":", err)
			}
			return code
		}
	}
	fmt.Fprintf(errOut, "coffer: unknown command %q\n\n", args[0])
	usage(errOut)
	return 2
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("coffer "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

// limitFlag registers --limit, a list's size from 1 to most: a value outside is refused as the
// flags are parsed, before anything is opened.
func limitFlag(fs *flag.FlagSet, def, most int, what string) *int {
	l := &boundedInt{n: def, most: most}
	fs.Var(l, "limit", fmt.Sprintf("at most this many %s, newest first (1..%d)", what, most))
	return &l.n
}

type boundedInt struct{ n, most int }

func (b *boundedInt) String() string { return strconv.Itoa(b.n) }

func (b *boundedInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > b.most {
		return fmt.Errorf("must be 1..%d", b.most)
	}
	b.n = n
	return nil
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}
