package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/secret"
)

func runDev(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "pay" {
		return runDevPay(ctx, args[1:], out)
	}
	fs := newFlags("dev")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: coffer dev [flags]\n       coffer dev pay --to ADDR --currency SYMBOL --amount DECIMAL   (pay from the dev faucet; -h for more)\n\nFlags:")
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", ".coffer", "data directory (PostgreSQL cluster, dev chain, dev.json, secrets); a restart on it resumes the stack")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address of the API, widget and panel")
	internalAddr := fs.String("internal-addr", "127.0.0.1:8081", "listen address of /metrics, OpsService and gRPC reflection")
	blockTime := fs.Duration("block-time", time.Second, "dev chain block interval")
	chainAddr := fs.String("chain-addr", "127.0.0.1:8545", "listen address of the dev chain's JSON-RPC (loopback; port 0 picks a free one)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parse(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("%w: --log-level: %w", errUsage, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	return devenv.Run(ctx, devenv.Options{DataDir: *dataDir, Addr: *addr, InternalAddr: *internalAddr, BlockTime: *blockTime, ChainAddr: *chainAddr,
		DatabaseURL: os.Getenv("DATABASE_URL"), Log: log, Out: out})
}

func runServe(ctx context.Context, args []string, _ io.Writer) error {
	fs := newFlags("serve")
	role := fs.String("role", "", "api, worker or all (default $COFFER_ROLE, else all)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: coffer serve [--role api|worker|all]\n\nEnvironment:")
		for _, e := range config.Entries() {
			fmt.Fprintf(fs.Output(), "  %-30s %s (default %q)\n", e.Name, e.Help, e.Default)
		}
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := config.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if *role != "" {
		if err := config.CheckRole(*role); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		cfg.Role = *role
	}
	log := cfg.Logger()
	if err := chain.Check(ctx, cfg.Chains, cfg.ChainsValidate, log); err != nil {
		return fmt.Errorf("%w\n(fix the chains file, or set COFFER_CHAINS_VALIDATE=warn to start anyway; `coffer chains validate --file F` runs this check)", err)
	}
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	var ln net.Listener
	if cfg.Role != config.RoleWorker {
		if ln, err = a.Listen(ctx); err != nil {
			a.Pool.Close()
			return err
		}
	}
	return a.Run(ctx, ln)
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	env, err := newEnvFlags("migrate").open(ctx, args, needDB, nil)
	if err != nil {
		return err
	}
	defer env.close()
	applied, err := migrate(ctx, env)
	for _, m := range applied {
		fmt.Fprintln(out, "applied", m)
	}
	if err == nil && len(applied) == 0 {
		fmt.Fprintln(out, "database is up to date")
	}
	return err
}

func runKeygen(_ context.Context, args []string, out io.Writer) error {
	if err := parse(newFlags("keygen"), args); err != nil {
		return err
	}
	fmt.Fprintf(out, "COFFER_MASTER_KEY=%s\nCOFFER_OPS_TOKEN=%s\n", secret.NewMasterKey(), secret.Token("ops_"))
	return nil
}
