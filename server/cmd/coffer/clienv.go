package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/custody"
	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// cliEnv is what the service team's commands run on: the database and the service layer,
// without a server. DATABASE_URL, the master key settings (COFFER_MASTER_KEY, _FILE or _URL)
// and COFFER_CHAINS_FILE come from the environment, else from the dev.json of a `coffer dev`
// data directory. Jobs the commands queue (a replayed deposit's settlement) are worked by the
// running service's workers. The CLI holds the HD wallet's public half only: it never signs.
type cliEnv struct {
	pool     *pgxpool.Pool
	box      *secret.Box
	services *app.Services
	close    func()
}

// What a command needs of the environment.
const (
	needDB       = iota // the database only (migrate)
	needBox             // the database and the master keys (keys)
	needServices        // the service layer (operator, admin, deposit, reconcile)
)

// devDefaults fills what the environment leaves out from `coffer dev`'s dev.json: the
// database URL when dbURL is empty, the master key when none is set.
func devDefaults(dataDir, dbURL string, keySet bool) (*devenv.File, string, func(string) string, error) {
	f, err := devenv.ReadFile(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", nil, fmt.Errorf("set DATABASE_URL and the master key (%s, %s or %s; and COFFER_CHAINS_FILE for chain commands), or run `coffer dev` (no dev.json in %s)",
			custody.EnvKey, custody.EnvKeyFile, custody.EnvKeyURL, dataDir)
	}
	if err != nil {
		return nil, "", nil, err
	}
	if dbURL == "" {
		dbURL = f.DatabaseURL
	}
	getenv := os.Getenv
	if !keySet {
		getenv = func(k string) string {
			if k == custody.EnvKey {
				return f.MasterKey
			}
			return os.Getenv(k)
		}
	}
	return &f, dbURL, getenv, nil
}

// envFlags is the flag set of a command that runs on the database, with its --data-dir: the
// `coffer dev` data directory whose dev.json fills in what the environment leaves out.
type envFlags struct {
	*flag.FlagSet

	dataDir *string
}

func newEnvFlags(name string) envFlags {
	fs := newFlags(name)
	return envFlags{FlagSet: fs, dataDir: fs.String("data-dir", ".coffer", "coffer dev data directory, used when DATABASE_URL is unset")}
}

// open parses args and opens what need names (openCLIEnv); the caller closes it. check, when
// set, judges the parsed flags first: input it refuses is an error that has opened nothing.
func (f envFlags) open(ctx context.Context, args []string, need int, check func() error) (*cliEnv, error) {
	if err := parse(f.FlagSet, args); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return openCLIEnv(ctx, *f.dataDir, need)
}

func openCLIEnv(ctx context.Context, dataDir string, need int) (*cliEnv, error) {
	// Every variable is checked as `coffer serve` checks it: a bad one is an error, not a default.
	cfg, err := config.Read(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	dbURL := cfg.DatabaseURL
	keySet := os.Getenv(custody.EnvKey) != "" || os.Getenv(custody.EnvKeyFile) != "" || os.Getenv(custody.EnvKeyURL) != ""
	getenv := os.Getenv
	var dev *devenv.File
	if dbURL == "" || (need > needDB && !keySet) {
		if dev, dbURL, getenv, err = devDefaults(dataDir, dbURL, keySet); err != nil {
			return nil, err
		}
	}
	pool, err := store.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	env := &cliEnv{pool: pool, close: pool.Close}
	if need == needDB {
		return env, nil
	}
	fail := func(err error) (*cliEnv, error) {
		pool.Close()
		return nil, err
	}
	if err := store.New(pool).CheckMigrated(ctx); err != nil {
		return fail(err)
	}
	sources, err := custody.SourcesFromEnv(getenv)
	if err != nil {
		return fail(err)
	}
	if env.box, err = custody.OpenBox(ctx, pool, sources); err != nil {
		return fail(err)
	}
	if need == needBox {
		return env, nil
	}
	chains := cfg.Chains // COFFER_CHAINS_FILE's, else none
	if os.Getenv("COFFER_CHAINS_FILE") == "" && dev != nil {
		var networks []chain.Network
		for _, c := range dev.Chains {
			networks = append(networks, c.Network())
		}
		if chains, err = chain.NewRegistry(networks); err != nil {
			return fail(err)
		}
	}
	if dev != nil && len(cfg.FiatRates) == 0 && len(cfg.StaticPrices) == 0 {
		// `coffer dev` prices with the dev tables: the CLI accepts the currencies it does.
		cfg.StaticPrices, cfg.FiatRates = rates.DevUSD(), rates.DevPerUSD()
	}
	if dev != nil && os.Getenv("COFFER_WEBHOOK_ALLOW") == "" {
		cfg.WebhookReach = webhook.ReachLoopback // as `coffer dev` does: its receiver is on loopback
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if env.services, err = app.NewServices(ctx, pool, env.box, app.ServicesConfig{Wallet: app.WalletPublicOrCreate, Chains: chains,
		Sessions: session.Config{TTL: cfg.SessionTTL}, StaticPrices: cfg.StaticPrices, FiatRates: cfg.FiatRates,
		WebhookReach: cfg.WebhookReach, Log: log}); err != nil {
		return fail(err)
	}
	if _, err := app.InsertOnlyRiver(pool, env.services, log); err != nil {
		env.services.Close()
		return fail(err)
	}
	env.close = func() { env.services.Close(); pool.Close() }
	return env, nil
}

func migrate(ctx context.Context, env *cliEnv) ([]string, error) {
	return store.Migrate(ctx, env.pool)
}
