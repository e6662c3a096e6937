package e2e

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// The process is killed right after it broadcast a sweep, before the sweep confirmed, and then
// restarted: the sweep is on-chain once, and the operator receives one DEPOSIT.
func TestSweepSurvivesAKillAfterBroadcast(t *testing.T) {
	ctx := context.Background()
	node, user := startGeth(t, 10)
	bankroll := newAddress(t)
	chain := gethChain(node)
	chain["bankrollAddress"] = bankroll.Hex()
	srv := newServers(t, chain, "COFFER_STATIC_PRICES=ETH=3000",
		// A job the killed process was running is rescued after this long (production: 2m).
		"COFFER_JOB_RESCUE_AFTER=5s")
	base, ops := srv.base, srv.ops

	first := srv.serve(t, "COFFER_FAILPOINT="+chaintx.StepBroadcast)
	recv := hooktest.New(t)
	operator, key := srv.operator(t, recv)
	sid, _ := openSession(t, base, "deposit", key, `{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"10"}`)
	depositAddr := depositAddress(t, base, sid, "ETH")
	if _, err := node.Transact(ctx, user, &depositAddr, eth(1000), nil); err != nil {
		t.Fatal(err)
	}

	awaitFailpoint(t, first, srv.dbURL)
	if len(recv.All()) != 0 {
		t.Fatal("a DEPOSIT was sent before the sweep confirmed")
	}
	// The sweep was broadcast before the kill, so it is mined without Coffer.
	waitNonce(t, node, depositAddr, 1)

	srv.serve(t)
	events := recv.Await(1, 90*time.Second) // River rescues the killed job (rescue window + its 30 s sweep)
	time.Sleep(3 * time.Second)             // time for a duplicate, if there were one
	if n := len(recv.All()); n != 1 {
		t.Fatalf("%d DEPOSIT webhooks, want exactly 1", n)
	}
	if events[0].Form.Get("event") != "DEPOSIT" || events[0].Form.Get("grossAmount") != eth(1000).String() {
		t.Fatalf("DEPOSIT %v", events[0].Form)
	}
	if n, _ := node.Client.NonceAt(ctx, depositAddr, nil); n != 1 {
		t.Fatalf("the deposit address sent %d transactions, want exactly one sweep", n)
	}
	bal, _ := node.Client.BalanceAt(ctx, bankroll, nil)
	if bal.String() != events[0].Form.Get("amount") {
		t.Fatalf("bankroll holds %s, the DEPOSIT says %s", bal, events[0].Form.Get("amount"))
	}
	// The credited deposit is the operator's, and the bankroll covers it.
	funds, err := ops.ListOperatorBalances(ctx, &cofferv1.ListOperatorBalancesRequest{OperatorId: operator.Id})
	if err != nil {
		t.Fatal(err)
	}
	if b := funds.Items[0]; b.Currency != "ETH" || b.Available != weiToETH(bal) {
		t.Fatalf("operator funds %v, bankroll %s wei", b, bal)
	}
	assertReconciled(t, ops)
}

func weiToETH(wei *big.Int) string {
	return new(big.Rat).SetFrac(wei, big.NewInt(1e18)).FloatString(18)
}

// jobsReport describes the scan cursor and the latest River jobs, for failure messages.
func jobsReport(t *testing.T, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(ctx)
	var b strings.Builder
	var next, head int64
	if err := conn.QueryRow(ctx, `SELECT next_block, head_block FROM chain_cursors`).Scan(&next, &head); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "cursor: next %d head %d\n", next, head)
	rows, _ := conn.Query(ctx, `SELECT id, kind, state, attempt, COALESCE(errors::text, ''), scheduled_at FROM river_job ORDER BY id DESC LIMIT 15`)
	for rows.Next() {
		var id int64
		var kind, state, errs string
		var attempt int
		var at time.Time
		if err := rows.Scan(&id, &kind, &state, &attempt, &errs, &at); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "job %d %s %s attempt %d at %s %s\n", id, kind, state, attempt, at.Format("15:04:05.000"), errs[:min(len(errs), 300)])
	}
	rows.Close()
	return b.String()
}

func waitNonce(t *testing.T, node *gethdev.Node, addr common.Address, want uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := node.Client.NonceAt(context.Background(), addr, nil); err == nil && n >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nonce of %s did not reach %d", addr.Hex(), want)
}

// The payout worker's process is killed at each step of sending (after the nonce is allocated,
// after signing, after the signed transaction is stored, after it is broadcast, before its
// receipt is read), each time while an admin's COMPLETED waits for the payout, and started
// again: each withdrawal is paid by exactly one transaction, the hot wallet's nonces have no
// gap, and the operator receives exactly one WITHDRAW_COMPLETE per withdrawal.
func TestPayoutSurvivesKillsAtEveryStep(t *testing.T) {
	ctx := context.Background()
	c := startUSDTChain(t)
	node, usdt := c.node, c.usdt
	chain := gethChain(node)
	chain["tokens"] = []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Hex(), "decimals": 6}}
	srv := newServers(t, chain, "COFFER_STATIC_PRICES=ETH=3000,USDT=1", "COFFER_LOG_FORMAT=text", "COFFER_JOB_RESCUE_AFTER=3s")
	base, ops := srv.base, srv.ops

	p := srv.serve(t)
	hot := regexp.MustCompile(`hot_wallet=(0x[0-9a-fA-F]{40})`).FindStringSubmatch(p.Stderr.String())
	if hot == nil {
		t.Fatalf("no hot wallet in the start-up log\n%s", p.Stderr)
	}
	hotWallet := common.HexToAddress(hot[1])
	c.fund(t, hotWallet)
	c.sendUSDT(t, hotWallet, 1_000_000_000)
	recv := hooktest.New(t)
	operator, key := srv.operator(t, recv)
	// The operator's float, backed by the 1,000 USDT the hot wallet holds.
	if _, err := ops.AdjustOperatorFunds(ctx, &cofferv1.AdjustOperatorFundsRequest{OperatorId: operator.Id, ChainId: node.ChainID,
		Currency: "USDT", Amount: "100", Note: "float"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.CreateAdmin(ctx, &cofferv1.CreateAdminRequest{Email: "ops@acme.test", Password: "a long admin password"}); err != nil {
		t.Fatal(err)
	}
	login := func() string {
		_, out := call(t, "POST", base+"/admin/login", "", `{"email":"ops@acme.test","password":"a long admin password"}`)
		token, _ := out["token"].(string)
		return token
	}
	p.Stop()
	startNonce, err := node.Client.NonceAt(ctx, hotWallet, nil)
	if err != nil {
		t.Fatal(err)
	}

	steps := []string{chaintx.StepNonce, chaintx.StepSigned, chaintx.StepStored, chaintx.StepBroadcast, chaintx.StepReceipt}
	dests := map[string]common.Address{}
	for i, step := range steps {
		p = srv.serve(t, "COFFER_FAILPOINT="+step)
		admin := login()
		sid, _ := openSession(t, base, "withdraw", key,
			fmt.Sprintf(`{"externalUserId":"u%d","lang":"en","platformFiatCurrency":"USD","userBalance":"50","amount":"%d.00"}`, i, i+1))
		dest := newAddress(t)
		id := directTransfer(t, base, sid, dest)["withdrawRequestId"].(string)
		dests[id] = dest
		rawJSON(t, "PATCH", base+"/admin/withdrawals/"+id+"/status", admin, `{"status":"PROCESSING"}`)
		go func() { // the answer never comes: the process dies while the payout is in flight
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPatch, base+"/admin/withdrawals/"+id+"/status", strings.NewReader(`{"status":"COMPLETED"}`))
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		awaitFailpoint(t, p, srv.dbURL)
		p = srv.serve(t)
		recv.AwaitMatching(t, "WITHDRAW_COMPLETE", "withdrawRequestId", id, 1, 90*time.Second)
		p.Stop()
	}
	time.Sleep(2 * time.Second) // a duplicate, if there were one
	// One WITHDRAW_COMPLETE event per withdrawal: events are counted by webhook-id. The same
	// event may be delivered again (at least once): a process stopped after the receiver
	// answered and before the delivery was recorded sends it again after the restart, with the
	// same webhook-id, which operators deduplicate on (seen under make stress).
	completes := map[string]map[string]bool{}
	for _, e := range recv.All() {
		if e.Form.Get("event") == "WITHDRAW_COMPLETE" {
			w := e.Form.Get("withdrawRequestId")
			if completes[w] == nil {
				completes[w] = map[string]bool{}
			}
			completes[w][e.ID] = true
		}
	}
	for id, dest := range dests {
		if len(completes[id]) != 1 {
			t.Errorf("%s: %d WITHDRAW_COMPLETE events (webhook-ids %v)", id, len(completes[id]), completes[id])
		}
		if c.usdtOf(t, dest).Sign() == 0 {
			t.Errorf("%s: the destination received nothing", id)
		}
	}
	if n, _ := node.Client.NonceAt(ctx, hotWallet, nil); n != startNonce+uint64(len(steps)) {
		t.Fatalf("the hot wallet sent %d transactions for %d withdrawals", n-startNonce, len(steps))
	}
	// The books after 5 crashes: the operator paid 1+2+3+4+5 USDT from its 100, nothing stays
	// reserved, and the hot wallet still covers every operator's funds.
	srv.serve(t)
	bal, err := ops.ListOperatorBalances(ctx, &cofferv1.ListOperatorBalancesRequest{OperatorId: operator.Id})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bal.Items {
		if b.Currency == "USDT" && (b.Available != "85.000000" || b.Reserved != "0.000000") {
			t.Fatalf("operator funds after the payouts: %v", b)
		}
	}
	assertReconciled(t, ops)
}

// assertReconciled checks the reconciliation invariant: on every chain and asset, the
// service's on-chain holdings cover every operator's funds.
func assertReconciled(t *testing.T, ops cofferv1connect.OpsServiceClient) {
	t.Helper()
	res, err := ops.Reconcile(context.Background(), &cofferv1.ReconcileRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if !l.Ok {
			t.Errorf("reconciliation: chain %d %s holdings %s, owed %s (surplus %s)", l.ChainId, l.Currency, l.Holdings, l.Owed, l.Surplus)
		}
	}
	if !res.Ok || len(res.Lines) == 0 {
		t.Fatalf("reconciliation not ok: %v", res)
	}
}
