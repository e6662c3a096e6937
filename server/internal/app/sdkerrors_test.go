package app_test

import (
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/coffer"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestGoSDKErrorAccessors: against the real server, the SDK's typed code and field accessor
// read what a refused call carries, over Connect and gRPC alike.
func TestGoSDKErrorAccessors(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	for name, opts := range map[string][]connect.ClientOption{"connect": nil, "grpc": {connect.WithGRPC()}} {
		c := coffer.New(env.URL, key, coffer.WithClientOptions(opts...))
		_, err := c.Sessions.CreateDepositSession(t.Context(), &cofferv1.CreateDepositSessionRequest{
			ExternalUserId: "user-1", Lang: "en", PlatformFiatCurrency: "USD", UserBalance: "0.00", Amount: "-3"})
		if coffer.ErrorCode(err) != coffer.CodeInvalidArgument || coffer.ErrorField(err) != "amount" {
			t.Errorf("%s: code %q field %q (%v)", name, coffer.ErrorCode(err), coffer.ErrorField(err), err)
		}
		_, err = c.Withdrawals.GetWithdrawal(t.Context(), &cofferv1.GetWithdrawalRequest{WithdrawRequestId: "5f0c8b5e-0000-4000-8000-000000000000"})
		if coffer.ErrorCode(err) != coffer.CodeNotFound {
			t.Errorf("%s: unknown withdrawal: code %q (%v)", name, coffer.ErrorCode(err), err)
		}
	}
}
