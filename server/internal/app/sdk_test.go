package app_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/coffer"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

func TestGoSDKAgainstServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	c := coffer.New(env.URL+"/", key)

	res, err := c.Sessions.CreateDepositSession(ctx, &cofferv1.CreateDepositSessionRequest{
		ExternalUserId: "user-1", Lang: "en", PlatformFiatCurrency: "USD", UserBalance: "0.00", Amount: "25.00"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Url, env.URL+"/widget/?sid=") || res.Sid == "" {
		t.Fatalf("session %+v", res)
	}
	check, err := c.Depositors.CheckDepositor(ctx, &cofferv1.CheckDepositorRequest{ExternalUserId: "user-1"})
	if err != nil || !check.Exists {
		t.Fatalf("check: %+v %v", check, err)
	}
	chains, err := c.Chains.ListChains(ctx, &cofferv1.ListChainsRequest{})
	if err != nil || len(chains.Chains) != 1 {
		t.Fatalf("chains: %v", err)
	}

	_, err = c.Sessions.CreateDepositSession(ctx, &cofferv1.CreateDepositSessionRequest{
		ExternalUserId: "user-1", Lang: "en", PlatformFiatCurrency: "USD", UserBalance: "0.00", Amount: "-3"})
	if connect.CodeOf(err) != connect.CodeInvalidArgument || coffer.ErrorCode(err) != "INVALID_ARGUMENT" {
		t.Fatalf("bad amount: %v (%s)", err, coffer.ErrorCode(err))
	}
	bad := coffer.New(env.URL, "sk_wrong", coffer.WithClientOptions(connect.WithGRPCWeb()))
	if _, err := bad.Depositors.CheckDepositor(ctx, &cofferv1.CheckDepositorRequest{ExternalUserId: "u"}); coffer.ErrorCode(err) != "UNAUTHENTICATED" {
		t.Fatalf("wrong key: %v", err)
	}
	if coffer.ErrorCode(nil) != "" {
		t.Fatal("ErrorCode(nil)")
	}
}
