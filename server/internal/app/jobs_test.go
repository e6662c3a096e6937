package app_test

import (
	"log/slog"
	"testing"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/secret"
)

// The services insert jobs through one inserter that exists before them; the process binds it
// to its River client (every role), the CLI's insert-only client binds it too, and nothing
// binds it twice.
func TestWiringBindsTheJobInserter(t *testing.T) {
	for _, role := range []string{config.RoleAll, config.RoleAPI} {
		t.Run(role, func(t *testing.T) {
			env := apptest.Start(t, apptest.Options{Role: role})
			if !env.Services.Jobs.Bound() {
				t.Fatal("the process's services have an unbound job inserter")
			}
			if err := env.Services.Jobs.Bind(env.App.River); err == nil {
				t.Fatal("the inserter was bound a second time")
			}
		})
	}
	env := apptest.Start(t, apptest.Options{})
	box, err := secret.NewBox(env.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := app.NewServices(t.Context(), env.Pool, box, app.ServicesConfig{Wallet: app.WalletPublicOrCreate, Chains: env.Services.Chains})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if cli.Jobs == nil || cli.Jobs.Bound() {
		t.Fatal("NewServices: want an inserter, not yet bound")
	}
	if _, err := app.InsertOnlyRiver(env.Pool, cli, slog.New(slog.DiscardHandler)); err != nil || !cli.Jobs.Bound() {
		t.Fatalf("InsertOnlyRiver: %v (bound %v)", err, cli.Jobs.Bound())
	}
}
