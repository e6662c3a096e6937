package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
)

// cliEnv is what the service team's commands run on: the database and the service layer,
// without a server. DATABASE_URL and COFFER_MASTER_KEY come from the environment, else from
// the dev.json of a `coffer dev` data directory.
type cliEnv struct {
	pool     *pgxpool.Pool
	services *app.Services
}

func openCLIEnv(ctx context.Context, dataDir string, needKey bool) (*cliEnv, error) {
	dbURL, rawKey := os.Getenv("DATABASE_URL"), os.Getenv("COFFER_MASTER_KEY")
	if dbURL == "" || (needKey && rawKey == "") {
		f, err := devenv.ReadFile(dataDir)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("set DATABASE_URL and COFFER_MASTER_KEY, or run `coffer dev` (no dev.json in %s)", dataDir)
		}
		if err != nil {
			return nil, err
		}
		if dbURL == "" {
			dbURL = f.DatabaseURL
		}
		if rawKey == "" {
			rawKey = f.MasterKey
		}
	}
	pool, err := store.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	env := &cliEnv{pool: pool}
	if rawKey != "" || needKey {
		key, err := secret.ParseMasterKey(rawKey)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("COFFER_MASTER_KEY: %w", err)
		}
		box, err := secret.NewBox(key)
		if err != nil {
			pool.Close()
			return nil, err
		}
		chains, _ := chain.NewRegistry(nil)
		env.services = app.NewServices(pool, box, chains, session.Config{TTL: 30 * time.Minute})
	}
	return env, nil
}

func migrate(ctx context.Context, env *cliEnv) ([]string, error) {
	return store.Migrate(ctx, env.pool)
}
