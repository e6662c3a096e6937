package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/store"
)

// moneyNode is a geth --dev chain with a USDT token, and Coffer on it with a funded hot wallet
// (1,000 USDT) and gas tank.
type moneyNode struct {
	usdtChain

	env      *apptest.Env
	bankroll common.Address
	ops      cofferv1connect.OpsServiceClient
}

func startMoneyNode(t *testing.T) *moneyNode {
	t.Helper()
	c := startUSDTChain(t)
	bankroll := newAddress(t)
	env := c.startCoffer(t, bankroll)
	_, hot := env.Services.Keys.HotWallet()
	_, gasTank := env.Services.Keys.GasTank()
	c.fund(t, hot, gasTank)
	c.sendUSDT(t, hot, 1_000_000_000)
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL, connect.WithInterceptors(proctest.Bearer(env.OpsToken)))
	return &moneyNode{usdtChain: c, env: env, bankroll: bankroll, ops: ops}
}

// balances reads GET /balances and returns currency → [available, reserved].
func (m *moneyNode) balances(t *testing.T, key, operatorID string) map[string][2]string {
	t.Helper()
	url := m.env.URL + "/balances"
	if operatorID != "" {
		url += "?operatorId=" + operatorID
	}
	status, body := call(t, "GET", url, key, "")
	data, _ := body["data"].(map[string]any)
	if status != 200 || body["status"] != "success" || data == nil {
		t.Fatalf("GET /balances: %d %v", status, body)
	}
	if next, ok := data["nextCursor"]; !ok || next != nil {
		t.Fatalf("GET /balances: nextCursor %v, want null", next)
	}
	out := map[string][2]string{}
	for _, it := range data["items"].([]any) {
		b := it.(map[string]any)
		out[b["currency"].(string)] = [2]string{b["available"].(string), b["reserved"].(string)}
	}
	return out
}

func (m *moneyNode) waitBalance(t *testing.T, key, currency, available string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if m.balances(t, key, "")[currency][0] == available {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s funds never reached %s: %v", currency, available, m.balances(t, key, ""))
}

// TestOperatorFundsEndToEnd, on geth --dev through the REST paths and Connect: a payment to
// an operator's treasury address funds it (no DEPOSIT); it reads its funds with GET /balances
// and BalanceService; 20 concurrent APPROVEs of 10 against 95 pay exactly 9 and hold 11
// TEMPORARILY_UNAVAILABLE; an admin COMPLETED beyond the funds, or for an inactive operator,
// answers 409 and pays nothing; APPROVE on an EXPIRED withdrawal answers held EXPIRED; the
// panel lists the funds; and the reconciliation holds.
func TestOperatorFundsEndToEnd(t *testing.T) {
	ctx := context.Background()
	m := startMoneyNode(t)
	env := m.env

	// Operator A (external approval) is funded only by a payment to its treasury address.
	recv := hooktest.New(t)
	external, enabled := domain.ApprovalExternal, true
	opA, keyA := recv.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled})
	tr, err := m.ops.GetTreasuryAddress(ctx, &cofferv1.GetTreasuryAddressRequest{OperatorId: opA.ID, ChainId: m.node.ChainID})
	if err != nil {
		t.Fatal(err)
	}
	treasury := common.HexToAddress(tr.Address)
	m.sendUSDT(t, treasury, 95_000_000)
	m.waitBalance(t, keyA, "USDT", "95.000000")
	if n := len(recv.All()); n != 0 {
		t.Fatalf("a treasury payment sent %d webhooks", n)
	}
	// The same over Connect; a sub-operator's funds are its own; another operator's are not found.
	balance := cofferv1connect.NewBalanceServiceClient(http.DefaultClient, env.URL, connect.WithInterceptors(proctest.Bearer(keyA)))
	res, err := balance.ListBalances(ctx, &cofferv1.ListBalancesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range res.Items {
		found = found || (b.Currency == "USDT" && b.Available == "95.000000" && b.Reserved == "0.000000" && b.OperatorId == opA.ID)
	}
	if !found {
		t.Fatalf("BalanceService: %v", res.Items)
	}
	child, _ := env.Operator(t, domain.OperatorSettings{ParentID: &opA.ID})
	if b := m.balances(t, keyA, child.ID); b["USDT"] != [2]string{"0.000000", "0.000000"} {
		t.Fatalf("sub-operator's funds: %v", b)
	}
	_, keyB := env.Operator(t, domain.OperatorSettings{})
	if status, body := call(t, "GET", env.URL+"/balances?operatorId="+opA.ID, keyB, ""); status != 404 ||
		body["data"].(map[string]any)["code"] != "NOT_FOUND" {
		t.Fatalf("another operator's funds: %d %v", status, body)
	}
	if status, body := call(t, "GET", env.URL+"/balances?operatorId=nope", keyA, ""); status != 400 ||
		body["data"].(map[string]any)["code"] != "INVALID_ARGUMENT" {
		t.Fatalf("bad operatorId: %d %v", status, body)
	}

	// 20 concurrent APPROVEs of 10 USDT against 95: exactly 9 paid.
	var ids []string
	for i := range 20 {
		sid, _ := openSession(t, env.URL, "withdraw", keyA,
			fmt.Sprintf(`{"externalUserId":"p%d","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"10.00"}`, i))
		sub := directTransfer(t, env.URL, sid, newAddress(t))
		ids = append(ids, sub["withdrawRequestId"].(string))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	held, paid := 0, 0
	for _, id := range ids {
		wg.Go(func() {
			d := rest(t, "POST", env.URL+"/withdraw/"+id+"/decision", keyA, `{"decision":"APPROVE"}`)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case d["held"] == true && d["heldReason"] == "TEMPORARILY_UNAVAILABLE" && d["withdrawStatus"] == "AWAITING_APPROVAL":
				held++
			case d["held"] == false:
				paid++
			default:
				t.Errorf("decision: %v", d)
			}
		})
	}
	wg.Wait()
	if paid != 9 || held != 11 {
		t.Fatalf("%d paid, %d held; want 9 and 11", paid, held)
	}
	m.waitBalance(t, keyA, "USDT", "5.000000")
	deadline := time.Now().Add(60 * time.Second)
	for m.balances(t, keyA, "")["USDT"][1] != "0.000000" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if b := m.balances(t, keyA, ""); b["USDT"] != [2]string{"5.000000", "0.000000"} {
		t.Fatalf("after the payouts: %v", b)
	}

	// APPROVE on a withdrawal the expiry job moved to EXPIRED: 200, held EXPIRED.
	var expired string
	for _, id := range ids {
		if w, _ := store.New(env.Pool).GetWithdrawal(ctx, nil, id); w.Status == "AWAITING_APPROVAL" {
			expired = id
			break
		}
	}
	if _, err := env.Pool.Exec(ctx, `UPDATE withdrawals SET expires_at = now() - interval '1 second' WHERE id = $1`, expired); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Services.Withdrawals.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	d := rest(t, "POST", env.URL+"/withdraw/"+expired+"/decision", keyA, `{"decision":"APPROVE"}`)
	if d["withdrawStatus"] != "EXPIRED" || d["held"] != true || d["heldReason"] != "EXPIRED" {
		t.Fatalf("APPROVE on EXPIRED: %v", d)
	}
	decide := cofferv1connect.NewWithdrawalServiceClient(http.DefaultClient, env.URL, connect.WithInterceptors(proctest.Bearer(keyA)))
	dr, err := decide.DecideWithdrawal(ctx, &cofferv1.DecideWithdrawalRequest{WithdrawRequestId: expired, Decision: cofferv1.Decision_DECISION_APPROVE})
	if err != nil || dr.WithdrawStatus != cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_EXPIRED || !dr.Held ||
		dr.HeldReason != cofferv1.HeldReason_HELD_REASON_EXPIRED {
		t.Fatalf("Connect APPROVE on EXPIRED: %v %v", dr, err)
	}

	// Operator D (synchronous approval) has no funds: admin COMPLETED answers 409 naming the
	// shortfall, then, funded but inactive, 409 again; nothing is paid.
	recvD := hooktest.New(t)
	opD, keyD := recvD.Operator(t, env, domain.OperatorSettings{})
	_, admin := env.Admin(t, "")
	sid, _ := openSession(t, env.URL, "withdraw", keyD, `{"externalUserId":"d1","lang":"en","platformFiatCurrency":"USD","userBalance":"900","amount":"900.00"}`)
	id := directTransfer(t, env.URL, sid, newAddress(t))["withdrawRequestId"].(string)
	rawJSON(t, "PATCH", env.URL+"/admin/withdrawals/"+id+"/status", admin, `{"status":"PROCESSING","adminNote":"checked"}`)
	status, body := call(t, "PATCH", env.URL+"/admin/withdrawals/"+id+"/status", admin, `{"status":"COMPLETED","adminNote":"pay"}`)
	if status != 409 || body["data"].(map[string]any)["code"] != "CONFLICT" || !strings.Contains(body["message"].(string), "short by 900.000000") {
		t.Fatalf("COMPLETED without funds: %d %v", status, body)
	}
	if _, err := m.ops.AdjustOperatorFunds(ctx, &cofferv1.AdjustOperatorFundsRequest{OperatorId: opD.ID, ChainId: m.node.ChainID,
		Currency: "USDT", Amount: "+900", Note: "float"}); err != nil {
		t.Fatal(err)
	}
	inactive := false
	if _, err := m.ops.UpdateOperator(ctx, &cofferv1.UpdateOperatorRequest{Id: opD.ID, Settings: &cofferv1.OperatorSettings{Active: &inactive}}); err != nil {
		t.Fatal(err)
	}
	status, body = call(t, "PATCH", env.URL+"/admin/withdrawals/"+id+"/status", admin, `{"status":"COMPLETED","adminNote":"pay"}`)
	if status != 409 || !strings.Contains(body["message"].(string), "inactive") {
		t.Fatalf("COMPLETED for an inactive operator: %d %v", status, body)
	}
	if w, _ := store.New(env.Pool).GetWithdrawal(ctx, nil, id); w.Status != "PROCESSING" || w.PayoutQueuedAt != nil {
		t.Fatalf("a refused COMPLETED changed the withdrawal: %+v", w)
	}
	// A debit beyond the funds is refused.
	_, err = m.ops.AdjustOperatorFunds(ctx, &cofferv1.AdjustOperatorFundsRequest{OperatorId: opD.ID, ChainId: m.node.ChainID,
		Currency: "USDT", Amount: "-901", Note: "too much"})
	if connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("overdraw adjustment: %v", err)
	}

	// The panel shows the funds; the books reconcile.
	panel := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL, connect.WithInterceptors(proctest.Bearer(admin)))
	pf, err := panel.ListOperatorFunds(ctx, &cofferv1.ListOperatorFundsRequest{OperatorId: opA.ID})
	if err != nil || len(pf.Operators) != 1 {
		t.Fatalf("panel funds: %v %v", pf, err)
	}
	for _, b := range pf.Operators[0].Balances {
		if b.Currency == "USDT" && b.Available != "5.000000" {
			t.Fatalf("panel funds: %v", b)
		}
	}
	assertReconciled(t, m.ops)
}

// TestAttributionAndDustEndToEnd, on geth --dev through the REST paths: a payment belongs to
// the user's live session that most recently handed out the address for that chain and
// currency; a deposit below the minimum is recorded (visible in the panel) and credited with
// the next one that brings the address to the minimum.
func TestAttributionAndDustEndToEnd(t *testing.T) {
	ctx := context.Background()
	m := startMoneyNode(t)
	env := m.env
	recv := hooktest.New(t)
	op, key := recv.Operator(t, env, domain.OperatorSettings{})
	open := func(ref string) (sid, sessionRef string) {
		sid, data := openSession(t, env.URL, "deposit", key,
			`{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"5.00","operatorReference":"`+ref+`"}`)
		return sid, data["sessionRef"].(string)
	}
	address := func(sid, currency string) common.Address { return depositAddress(t, env.URL, sid, currency) }
	older, olderRef := open("order-1")
	newer, newerRef := open("order-2")
	addr := address(older, "USDT")
	address(newer, "ETH") // the newer session showed only the ETH address
	pay := func(units int64) { m.sendUSDT(t, addr, units) }
	pay(5_000_000)
	if ev := recv.Await(1, 90*time.Second)[0]; ev.Form.Get("sessionRef") != olderRef {
		t.Fatalf("USDT paid after only the older session showed the USDT address: sessionRef %s, want %s", ev.Form.Get("sessionRef"), olderRef)
	}
	address(newer, "USDT")
	pay(6_000_000)
	if ev := recv.Await(2, 90*time.Second)[1]; ev.Form.Get("sessionRef") != newerRef || ev.Form.Get("amount") != "6000000" {
		t.Fatalf("after the newer session showed it: %v", ev.Form)
	}

	// Dust: 0.000001 USDT is recorded, visible in the panel, and not swept alone.
	pay(1)
	_, admin := env.Admin(t, "")
	panel := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL, connect.WithInterceptors(proctest.Bearer(admin)))
	deadline := time.Now().Add(60 * time.Second)
	var dust *cofferv1.Deposit
	for dust == nil && time.Now().Before(deadline) {
		list, err := panel.ListDeposits(ctx, &cofferv1.ListDepositsRequest{OperatorId: op.ID,
			Statuses: []cofferv1.DepositStatus{cofferv1.DepositStatus_DEPOSIT_STATUS_BELOW_MINIMUM}})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Deposits) == 1 {
			dust = list.Deposits[0]
		}
		time.Sleep(200 * time.Millisecond)
	}
	if dust == nil || dust.GrossAmount != "1" {
		t.Fatalf("the dust deposit is not listed BELOW_MINIMUM: %v", dust)
	}
	if n := len(recv.All()); n != 2 {
		t.Fatalf("%d webhooks: dust is not credited alone", n)
	}
	pay(2_000_000)
	events := recv.Await(4, 90*time.Second)
	amounts := map[string]bool{}
	for _, e := range events[2:] {
		amounts[e.Form.Get("amount")] = true
	}
	if !amounts["1"] || !amounts["2000000"] {
		t.Fatalf("the dust and the deposit that lifted it: %v", amounts)
	}
	assertReconciled(t, m.ops)
}
