package rpc_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// testBundle is a started API process and the clients a test calls it through.
type testBundle struct {
	env      *apptest.Env
	admin    cofferv1connect.AdminServiceClient
	balances cofferv1connect.BalanceServiceClient
	ops      cofferv1connect.OpsServiceClient // on the internal listener
}

// setup starts the API role on a throwaway database.
func setup(t *testing.T) *testBundle {
	t.Helper()
	env := apptest.StartAPI(t)
	return &testBundle{
		env:      env,
		admin:    cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL),
		balances: cofferv1connect.NewBalanceServiceClient(http.DefaultClient, env.URL),
		ops:      cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL),
	}
}

// bearer sends a Connect call with the credential.
func bearer(ctx context.Context, token string) context.Context {
	ctx, info := connect.NewClientContext(ctx)
	info.RequestHeader().Set("Authorization", "Bearer "+token)
	return ctx
}

// code is an error's Connect code, 0 for none.
func code(err error) connect.Code {
	if err == nil {
		return 0
	}
	return connect.CodeOf(err)
}
