package app_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// Reorged deposits over the wire: OpsService lists and resolves them; bad resolutions get the
// documented codes (connect.Code plus the ErrorInfo reason) and change nothing; the panel lists
// them within the admin's scope.
func TestReorgedDepositsOverTheWire(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ctx, ops, panel := consoles(t, env)
	opA, _ := env.Operator(t, domain.OperatorSettings{})
	opB, _ := env.Operator(t, domain.OperatorSettings{})
	// A credited deposit of operator A whose block left the chain, as a rollback leaves it.
	hash := "0x" + strings.Repeat("cd", 32)
	var depositID, reorgID int64
	if err := env.Pool.QueryRow(t.Context(), `INSERT INTO deposits (operator_id, external_user_id, chain_id, tx_hash, log_index,
		block_number, block_hash, address, address_index, currency, decimals, gross_amount, fee_amount, amount, status, idempotency_key)
		VALUES ($1, 'u1', 1337, $2, 0, 10, $2, '0x00000000000000000000000000000000000000b1', 0, 'USDT', 6, 7000000, 0, 7000000,
		'REORGED', 'k-wire') RETURNING id`, opA.ID, hash).Scan(&depositID); err != nil {
		t.Fatal(err)
	}
	if err := env.Pool.QueryRow(t.Context(), `INSERT INTO deposit_reorgs (deposit_id, chain_id, fork_block, block_number, block_hash,
		prior_status, reversed) VALUES ($1, 1337, 9, 10, $2, 'CREDITED', 7000000) RETURNING id`, depositID, hash).Scan(&reorgID); err != nil {
		t.Fatal(err)
	}

	list, err := ops.ListReorgedDeposits(ctx, &cofferv1.ListReorgedDepositsRequest{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetDeposit().GetStatus() != cofferv1.DepositStatus_DEPOSIT_STATUS_REORGED ||
		list.Items[0].GetPriorStatus() != cofferv1.DepositStatus_DEPOSIT_STATUS_CREDITED || list.Items[0].GetReversedAmount() != "7000000" {
		t.Fatalf("ListReorgedDeposits: %v %v", list, err)
	}
	for _, c := range []struct {
		admin string
		want  int
	}{{"", 1}, {opA.ID, 1}, {opB.ID, 0}} {
		_, token := env.Admin(t, c.admin)
		res, err := panel.ListDepositReorgs(withBearer(t.Context(), token), &cofferv1.ListDepositReorgsRequest{})
		if err != nil || len(res.Items) != c.want {
			t.Errorf("panel list for admin of %q: %v %v", c.admin, res, err)
		}
	}

	bad := []struct {
		req    *cofferv1.ResolveReorgedDepositRequest
		code   connect.Code
		reason string
	}{
		{&cofferv1.ResolveReorgedDepositRequest{DepositId: 987654, Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF, Note: "n"},
			connect.CodeNotFound, "NOT_FOUND"},
		{&cofferv1.ResolveReorgedDepositRequest{DepositId: depositID, Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF},
			connect.CodeInvalidArgument, "INVALID_ARGUMENT"},
		{&cofferv1.ResolveReorgedDepositRequest{DepositId: depositID, Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF, Note: "   "},
			connect.CodeInvalidArgument, "INVALID_ARGUMENT"},
		{&cofferv1.ResolveReorgedDepositRequest{DepositId: depositID, Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_REINCLUDED, Note: "n"},
			connect.CodeInvalidArgument, "INVALID_ARGUMENT"},
		{&cofferv1.ResolveReorgedDepositRequest{DepositId: depositID, Note: "n"}, connect.CodeInvalidArgument, "INVALID_ARGUMENT"},
	}
	for _, c := range bad {
		_, err := ops.ResolveReorgedDeposit(ctx, c.req)
		if code, reason := connectErrorInfo(err); code != c.code || reason != c.reason {
			t.Errorf("ResolveReorgedDeposit(%v): %v (%s), want %v %s", c.req, code, reason, c.code, c.reason)
		}
	}
	if n := env.Count(t, "deposit_reorg_actions"); n != 0 {
		t.Fatalf("%d audit rows after refused resolutions", n)
	}

	res, err := ops.ResolveReorgedDeposit(ctx, &cofferv1.ResolveReorgedDepositRequest{DepositId: depositID,
		Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF, Note: "double-spent"})
	if err != nil || res.GetItem().GetResolution() != cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF ||
		res.GetItem().GetResolvedBy() != "service-team:ops-api" || len(res.GetItem().GetHistory()) != 1 {
		t.Fatalf("ResolveReorgedDeposit: %v %v", res, err)
	}
	_, err = ops.ResolveReorgedDeposit(ctx, &cofferv1.ResolveReorgedDepositRequest{DepositId: depositID,
		Resolution: cofferv1.ReorgResolution_REORG_RESOLUTION_REINSTATE, Note: "again"})
	if code, reason := connectErrorInfo(err); code != connect.CodeAlreadyExists || reason != "CONFLICT" {
		t.Fatalf("resolve twice: %v (%s)", code, reason)
	}
	if n := env.Count(t, "deposit_reorg_actions"); n != 1 {
		t.Fatalf("%d audit rows, want the one resolution", n)
	}
	if list, _ := ops.ListReorgedDeposits(ctx, &cofferv1.ListReorgedDepositsRequest{}); len(list.GetItems()) != 0 {
		t.Fatalf("still listed as unresolved: %v", list)
	}
}
