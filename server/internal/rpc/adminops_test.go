package rpc_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestPayoutActionsAreTheServiceTeams: an operator-bound admin is refused every payout action
// (PERMISSION_DENIED) and changes nothing; a service-team admin's pause is audited as
// admin:<id>, the ops API's resume of it as service-team:ops-api.
func TestPayoutActionsAreTheServiceTeams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	env, client, ctx := b.env, b.admin, context.Background()
	op, _ := env.Operator(t, domain.OperatorSettings{})
	_, opToken := env.Admin(t, op.ID)
	team, teamToken := env.Admin(t, "")
	target := &cofferv1.PayoutPauseTarget{Scope: cofferv1.PauseScope_PAUSE_SCOPE_OPERATOR, OperatorId: op.ID, Reason: "mine"}
	tx := &cofferv1.ChainTransactionTarget{Id: 1, Reason: "mine"}
	calls := map[string]func(context.Context) error{
		"ListPayoutPauses":       ignoreAnswer(client.ListPayoutPauses, &cofferv1.AdminServiceListPayoutPausesRequest{}),
		"PausePayouts":           ignoreAnswer(client.PausePayouts, &cofferv1.AdminServicePausePayoutsRequest{Target: target}),
		"ResumePayouts":          ignoreAnswer(client.ResumePayouts, &cofferv1.AdminServiceResumePayoutsRequest{Target: target}),
		"ListChainTransactions":  ignoreAnswer(client.ListChainTransactions, &cofferv1.AdminServiceListChainTransactionsRequest{}),
		"ResendChainTransaction": ignoreAnswer(client.ResendChainTransaction, &cofferv1.AdminServiceResendChainTransactionRequest{Target: tx}),
		"CancelChainTransaction": ignoreAnswer(client.CancelChainTransaction, &cofferv1.AdminServiceCancelChainTransactionRequest{Target: tx}),
		"FailChainTransaction":   ignoreAnswer(client.FailChainTransaction, &cofferv1.AdminServiceFailChainTransactionRequest{Target: tx}),
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
	// The panel copy runs the ops handler: through the ops API the actor is the ops API again.
	resumed, err := b.ops.ResumePayouts(bearer(ctx, env.OpsToken), &cofferv1.ResumePayoutsRequest{Target: target})
	if err != nil || resumed.Pause.ResumedBy != "service-team:ops-api" || resumed.Pause.PausedBy != "admin:"+team.ID {
		t.Fatalf("ops resume of the panel's pause: %v %v", resumed, err)
	}
}

// ignoreAnswer is a call of one RPC whose answer the test does not read: only its error.
func ignoreAnswer[Req, Res any](rpc func(context.Context, *Req) (*Res, error), req *Req) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := rpc(ctx, req)
		return err
	}
}
