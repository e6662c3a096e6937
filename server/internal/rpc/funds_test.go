package rpc_test

import (
	"context"
	"slices"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestFundsScopes: who sees whose funds, now that the rule lives in the funds service. An
// operator sees its own and its sub-operators'; a panel admin the operators of its scope, by
// name; the service team any operator, and an unknown one is NOT_FOUND.
func TestFundsScopes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	env, ctx := b.env, context.Background()
	zed, alpha := "Zed operator", "Alpha operator"
	parent, parentKey := env.Operator(t, domain.OperatorSettings{Name: &zed})
	child, _ := env.Operator(t, domain.OperatorSettings{Name: &alpha, ParentID: &parent.ID})
	stranger, strangerKey := env.Operator(t, domain.OperatorSettings{})
	env.Fund(t, child.ID, 1337, "USDT", "12.5")
	const unknown = "00000000-0000-4000-8000-000000000000"

	own, err := b.balances.ListBalances(bearer(ctx, parentKey), &cofferv1.ListBalancesRequest{})
	if err != nil || len(own.Items) == 0 || own.Items[0].OperatorId != parent.ID {
		t.Fatalf("own balances: %v %v", own, err)
	}
	sub, err := b.balances.ListBalances(bearer(ctx, parentKey), &cofferv1.ListBalancesRequest{OperatorId: child.ID})
	if err != nil || !slices.ContainsFunc(sub.Items, func(b *cofferv1.OperatorBalance) bool {
		return b.OperatorId == child.ID && b.Currency == "USDT" && b.Available == "12.500000"
	}) {
		t.Fatalf("a sub-operator's balances: %v %v", sub, err)
	}
	if _, err := b.balances.ListBalances(bearer(ctx, strangerKey), &cofferv1.ListBalancesRequest{OperatorId: child.ID}); code(err) != connect.CodeNotFound {
		t.Fatalf("another operator's sub-operator: %v", err)
	}

	names := func(token, operatorID string) ([]string, error) {
		res, err := b.admin.ListOperatorFunds(bearer(ctx, token), &cofferv1.ListOperatorFundsRequest{OperatorId: operatorID})
		var out []string
		for _, op := range res.GetOperators() {
			out = append(out, op.OperatorName)
		}
		return out, err
	}
	_, parentAdmin := env.Admin(t, parent.ID)
	if got, err := names(parentAdmin, ""); err != nil || !slices.Equal(got, []string{alpha, zed}) {
		t.Fatalf("an operator admin's funds: %v %v; want its two operators by name", got, err)
	}
	if _, err := names(parentAdmin, stranger.ID); code(err) != connect.CodeNotFound {
		t.Fatalf("an operator outside the admin's scope: %v", err)
	}
	_, teamAdmin := env.Admin(t, "")
	if got, err := names(teamAdmin, stranger.ID); err != nil || !slices.Equal(got, []string{stranger.Name}) {
		t.Fatalf("the service team, one operator: %v %v", got, err)
	}
	if got, err := names(teamAdmin, ""); err != nil || len(got) < 3 || !slices.IsSorted(got) {
		t.Fatalf("the service team, every operator: %v %v", got, err)
	}
	if _, err := names(teamAdmin, unknown); code(err) != connect.CodeNotFound {
		t.Fatalf("an unknown operator: %v", err)
	}

	opsCtx := bearer(ctx, env.OpsToken)
	if res, err := b.ops.ListOperatorBalances(opsCtx, &cofferv1.ListOperatorBalancesRequest{OperatorId: child.ID}); err != nil ||
		len(res.Items) == 0 || res.Items[0].OperatorId != child.ID {
		t.Fatalf("ops balances: %v %v", res, err)
	}
	if _, err := b.ops.ListOperatorBalances(opsCtx, &cofferv1.ListOperatorBalancesRequest{OperatorId: unknown}); code(err) != connect.CodeNotFound {
		t.Fatalf("ops balances of an unknown operator: %v", err)
	}
	if _, err := b.ops.GetTreasuryAddress(opsCtx, &cofferv1.GetTreasuryAddressRequest{OperatorId: child.ID, ChainId: 99}); code(err) != connect.CodeInvalidArgument {
		t.Fatalf("a treasury on an unconfigured chain: %v", err)
	}
	if res, err := b.ops.GetTreasuryAddress(opsCtx, &cofferv1.GetTreasuryAddressRequest{OperatorId: child.ID, ChainId: 1337}); err != nil || res.Address == "" {
		t.Fatalf("treasury: %v %v", res, err)
	}
}
