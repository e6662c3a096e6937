package rpc_test

import (
	"context"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestPayoutActionsAreTheServiceTeams: an operator-bound admin is refused every payout action
// (PERMISSION_DENIED) and changes nothing; a service-team admin's pause is audited as
// admin:<id>.
func TestPayoutActionsAreTheServiceTeams(t *testing.T) {
	env := apptest.Start(t, apptest.Options{Role: config.RoleAPI})
	ctx := context.Background()
	op, _ := env.Operator(t, domain.OperatorSettings{})
	_, opToken := env.Admin(t, op.ID)
	team, teamToken := env.Admin(t, "")
	client := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	target := &cofferv1.PayoutPauseTarget{Scope: cofferv1.PauseScope_PAUSE_SCOPE_OPERATOR, OperatorId: op.ID, Reason: "mine"}
	tx := &cofferv1.ChainTransactionTarget{Id: 1, Reason: "mine"}
	calls := map[string]func(context.Context) error{
		"ListPayoutPauses": func(c context.Context) error {
			_, err := client.ListPayoutPauses(c, &cofferv1.AdminServiceListPayoutPausesRequest{})
			return err
		},
		"PausePayouts": func(c context.Context) error {
			_, err := client.PausePayouts(c, &cofferv1.AdminServicePausePayoutsRequest{Target: target})
			return err
		},
		"ResumePayouts": func(c context.Context) error {
			_, err := client.ResumePayouts(c, &cofferv1.AdminServiceResumePayoutsRequest{Target: target})
			return err
		},
		"ListChainTransactions": func(c context.Context) error {
			_, err := client.ListChainTransactions(c, &cofferv1.AdminServiceListChainTransactionsRequest{})
			return err
		},
		"ResendChainTransaction": func(c context.Context) error {
			_, err := client.ResendChainTransaction(c, &cofferv1.AdminServiceResendChainTransactionRequest{Target: tx})
			return err
		},
		"CancelChainTransaction": func(c context.Context) error {
			_, err := client.CancelChainTransaction(c, &cofferv1.AdminServiceCancelChainTransactionRequest{Target: tx})
			return err
		},
		"FailChainTransaction": func(c context.Context) error {
			_, err := client.FailChainTransaction(c, &cofferv1.AdminServiceFailChainTransactionRequest{Target: tx})
			return err
		},
	}
	for name, call := range calls {
		if err := call(bearer(ctx, opToken)); connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Errorf("%s by an operator's admin: %v", name, err)
		}
	}
	list, err := client.ListPayoutPauses(bearer(ctx, teamToken), &cofferv1.AdminServiceListPayoutPausesRequest{IncludeResumed: true})
	if err != nil || len(list.Pauses) != 0 {
		t.Fatalf("an operator's admin changed the pauses: %v %v", list, err)
	}
	res, err := client.PausePayouts(bearer(ctx, teamToken), &cofferv1.AdminServicePausePayoutsRequest{Target: target})
	if err != nil || res.Pause.PausedBy != "admin:"+team.ID || res.Pause.Reason != "mine" {
		t.Fatalf("service-team pause: %v %v", res, err)
	}
}
