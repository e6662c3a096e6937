package app_test

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestReconciliationIsolation: over Connect, an operator reads its own deposits and
// withdrawals; another operator's are NOT_FOUND and never listed; a parent reads a
// sub-operator's by naming it, and a sub-operator never reads its parent's.
func TestReconciliationIsolation(t *testing.T) {
	env, a, b, sub := startTenants(t)
	as := func(key string) context.Context { return withBearer(t.Context(), key) }
	deposits := cofferv1connect.NewDepositServiceClient(http.DefaultClient, env.URL)
	withdrawals := cofferv1connect.NewWithdrawalServiceClient(http.DefaultClient, env.URL)

	records := map[string]struct {
		deposit    int64
		withdrawal string
	}{}
	for i, op := range []domain.Operator{a.Operator, b.Operator, sub.Operator} {
		d := env.InsertDeposit(t, domain.Deposit{OperatorID: op.ID, ExternalUserID: "iso-user", ChainID: 1337,
			TxHash: fmt.Sprintf("0x%064x", i+1), LogIndex: 0,
			BlockNumber: 1, BlockHash: "0xb1", Address: matrixAddress, Currency: "USDT", Decimals: 6,
			ContractAddress: "0x00000000000000000000000000000000000000a1", GrossAmount: big.NewInt(5_000_000),
			Status: domain.DepositOrphaned, IdempotencyKey: "iso-" + strconv.Itoa(i)})
		id := tenantWithdrawal(t, env, op, domain.WithdrawalRejected)
		records[op.ID] = struct {
			deposit    int64
			withdrawal string
		}{d.ID, id}
	}

	// Lists: each key sees exactly its own; the parent sees the sub-operator's by naming it.
	for _, c := range []struct {
		name, key, operatorID, want string
	}{
		{"A", a.key, "", a.ID}, {"B", b.key, "", b.ID}, {"sub-operator", sub.key, "", sub.ID},
		{"A naming its sub-operator", a.key, sub.ID, sub.ID},
	} {
		ds, err := deposits.ListDeposits(as(c.key), &cofferv1.DepositServiceListDepositsRequest{OperatorId: c.operatorID})
		if err != nil || len(ds.Deposits) != 1 || ds.Deposits[0].DepositId != records[c.want].deposit {
			t.Errorf("%s lists deposits: %v %v, want only %d", c.name, ds, err, records[c.want].deposit)
		}
		ws, err := withdrawals.ListWithdrawals(as(c.key), &cofferv1.WithdrawalServiceListWithdrawalsRequest{OperatorId: c.operatorID})
		if err != nil || len(ws.Withdrawals) != 1 || ws.Withdrawals[0].WithdrawRequestId != records[c.want].withdrawal {
			t.Errorf("%s lists withdrawals: %v %v, want only %s", c.name, ws, err, records[c.want].withdrawal)
		}
		d, err := deposits.GetDeposit(as(c.key), &cofferv1.GetDepositRequest{DepositId: records[c.want].deposit, OperatorId: c.operatorID})
		if err != nil || d.Deposit.GetOperatorId() != c.want {
			t.Errorf("%s gets its deposit: %v %v", c.name, d, err)
		}
		w, err := withdrawals.GetWithdrawal(as(c.key), &cofferv1.GetWithdrawalRequest{WithdrawRequestId: records[c.want].withdrawal,
			OperatorId: c.operatorID})
		if err != nil || w.Withdrawal.GetOperatorId() != c.want {
			t.Errorf("%s gets its withdrawal: %v %v", c.name, w, err)
		}
	}

	// NOT_FOUND, never PERMISSION_DENIED: another operator's records, and operators that are not
	// the caller's sub-operators.
	for _, c := range []struct {
		name, key, owner, operatorID string
	}{
		{"B reads A's", b.key, a.ID, ""},
		{"B reads A's naming A", b.key, a.ID, a.ID},
		{"A reads B's", a.key, b.ID, ""},
		{"A reads B's naming B", a.key, b.ID, b.ID},
		{"A reads its sub-operator's without naming it", a.key, sub.ID, ""},
		{"the sub-operator reads its parent's", sub.key, a.ID, a.ID},
		{"A reads B's naming its sub-operator", a.key, b.ID, sub.ID},
	} {
		_, err := deposits.GetDeposit(as(c.key), &cofferv1.GetDepositRequest{DepositId: records[c.owner].deposit, OperatorId: c.operatorID})
		wantConnectError(t, c.name+" deposit", err, connect.CodeNotFound, "NOT_FOUND")
		_, err = withdrawals.GetWithdrawal(as(c.key), &cofferv1.GetWithdrawalRequest{WithdrawRequestId: records[c.owner].withdrawal,
			OperatorId: c.operatorID})
		wantConnectError(t, c.name+" withdrawal", err, connect.CodeNotFound, "NOT_FOUND")
		if c.operatorID != "" && c.operatorID != sub.ID {
			_, err = deposits.ListDeposits(as(c.key), &cofferv1.DepositServiceListDepositsRequest{OperatorId: c.operatorID})
			wantConnectError(t, c.name+" deposit list", err, connect.CodeNotFound, "NOT_FOUND")
			_, err = withdrawals.ListWithdrawals(as(c.key), &cofferv1.WithdrawalServiceListWithdrawalsRequest{OperatorId: c.operatorID})
			wantConnectError(t, c.name+" withdrawal list", err, connect.CodeNotFound, "NOT_FOUND")
		}
	}
}
