package rpc_test

import (
	"context"
	"os"
	"testing"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

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
