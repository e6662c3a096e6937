package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// TestWithdrawalsEndToEndOnGeth: a user withdraws through the widget's REST call under both
// approval modes on a real geth --dev node. Mode A: the operator approves synchronously, an
// admin moves it PROCESSING → COMPLETED, the funds arrive, and WITHDRAW_COMPLETE (verified and
// parsed with the Go SDK) carries the requested amount. Mode B: the operator acknowledges the
// outbox WITHDRAW_REQUEST and approves through /withdraw/:id/decision, which answers COMPLETED
// with the settlement hash.
func TestWithdrawalsEndToEndOnGeth(t *testing.T) {
	ctx := context.Background()
	c := startUSDTChain(t)
	node := c.node
	env := c.startCoffer(t, common.Address{})
	_, hot := env.Services.Keys.HotWallet()
	c.fund(t, hot)
	c.sendUSDT(t, hot, 500_000_000)

	// Mode A.
	recv := hooktest.New(t)
	opA, key := recv.Operator(t, env, domain.OperatorSettings{})
	env.Fund(t, opA.ID, node.ChainID, "USDT", "100")
	_, adminToken := env.Admin(t, "")
	sid, _ := openSession(t, env.URL, "withdraw", key,
		`{"externalUserId":"player-9","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"42.50","operatorReference":"payout-9"}`)
	dest := newAddress(t)
	sub := directTransfer(t, env.URL, sid, dest)
	id := sub["withdrawRequestId"].(string)
	if sub["status"] != "PENDING" {
		t.Fatalf("mode A submission: %v", sub)
	}
	requests := recv.Await(1, 10*time.Second)
	req, ok := requests[0].Parsed.(*cofferv1.WithdrawRequestEvent)
	if !ok || req.WithdrawRequestId != id || req.GetCryptoAmountSent() != "42.500000" || req.GetOperatorReference() != "payout-9" ||
		len(requests[0].Form) != 14 {
		t.Fatalf("WITHDRAW_REQUEST: %v (%d fields)", requests[0].Form, len(requests[0].Form))
	}
	w := rawJSON(t, "PATCH", env.URL+"/admin/withdrawals/"+id+"/status", adminToken, `{"status":"PROCESSING","adminNote":"KYC ok"}`)
	if w["status"] != "PROCESSING" {
		t.Fatalf("PROCESSING: %v", w)
	}
	w = rawJSON(t, "PATCH", env.URL+"/admin/withdrawals/"+id+"/status", adminToken, `{"status":"COMPLETED","adminNote":"pay"}`)
	if w["status"] != "COMPLETED" || w["settlementTxHash"] == nil {
		t.Fatalf("COMPLETED: %v", w)
	}
	if got := c.usdtOf(t, dest).Int64(); got != 42_500_000 {
		t.Fatalf("destination holds %d units, want 42500000", got)
	}
	events := recv.Await(2, 30*time.Second)
	done, ok := events[1].Parsed.(*cofferv1.WithdrawCompleteEvent)
	if !ok || done.WithdrawRequestId != id || done.GetCryptoAmountSent() != req.GetCryptoAmountSent() || done.Status != "COMPLETED" ||
		done.GetOperatorReference() != "payout-9" || len(events[1].Form) != 15 {
		t.Fatalf("WITHDRAW_COMPLETE: %v", events[1].Form)
	}
	receipt, err := node.Client.TransactionReceipt(ctx, common.HexToHash(w["settlementTxHash"].(string)))
	if err != nil || receipt.Status != 1 {
		t.Fatalf("settlement receipt: %v %v", receipt, err)
	}

	// Mode B.
	recvB := hooktest.New(t)
	external, enabled, daily := domain.ApprovalExternal, true, "1000"
	opB, keyB := recvB.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled, DailyCap: &daily})
	env.Fund(t, opB.ID, node.ChainID, "USDT", "100")
	sid, _ = openSession(t, env.URL, "withdraw", keyB,
		`{"externalUserId":"player-10","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"7.00"}`)
	destB := newAddress(t)
	sub = directTransfer(t, env.URL, sid, destB)
	if sub["status"] != "AWAITING_APPROVAL" {
		t.Fatalf("mode B submission: %v", sub)
	}
	idB := sub["withdrawRequestId"].(string)
	async := recvB.Await(1, 10*time.Second)
	if r, ok := async[0].Parsed.(*cofferv1.WithdrawRequestEvent); !ok || r.WithdrawRequestId != idB {
		t.Fatalf("outbox WITHDRAW_REQUEST: %v", async[0].Form)
	}
	decision := rest(t, "POST", env.URL+"/withdraw/"+idB+"/decision", keyB, `{"decision":"APPROVE"}`)
	if decision["withdrawStatus"] != "COMPLETED" || decision["settlementTxHash"] == "" || decision["held"] != false {
		t.Fatalf("APPROVE: %v", decision)
	}
	again := rest(t, "POST", env.URL+"/withdraw/"+idB+"/decision", keyB, `{"decision":"APPROVE"}`)
	if again["withdrawStatus"] != "COMPLETED" || again["settlementTxHash"] != decision["settlementTxHash"] {
		t.Fatalf("repeated APPROVE: %v", again)
	}
	if got := c.usdtOf(t, destB).Int64(); got != 7_000_000 {
		t.Fatalf("mode B destination holds %d units", got)
	}
	completes := recvB.Await(2, 30*time.Second)
	if c, ok := completes[1].Parsed.(*cofferv1.WithdrawCompleteEvent); !ok || c.WithdrawRequestId != idB || c.GetCryptoAmountSent() != "7.000000" ||
		completes[1].Form.Get("operatorReference") != "null" { // a session without one
		t.Fatalf("mode B WITHDRAW_COMPLETE: %v", completes[1].Form)
	}
	time.Sleep(2 * time.Second) // a second payout or webhook would show up here
	if n := len(recvB.All()); n != 2 {
		t.Fatalf("mode B receiver got %d webhooks, want 2", n)
	}
	var payouts int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM chain_txs WHERE purpose = 'payout'`).Scan(&payouts); err != nil {
		t.Fatal(err)
	}
	if payouts != 2 {
		t.Fatalf("%d payout transactions, want 2", payouts)
	}
}
