package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// operatorEndpoint is an operator's webhook endpoint whose answer to each webhook a test
// decides (onRequest runs before the answer).
type operatorEndpoint struct {
	mu        sync.Mutex
	onRequest func(form url.Values)
}

func (o *operatorEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	f := o.onRequest
	o.mu.Unlock()
	if f != nil {
		f(r.PostForm)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"error":0,"description":"ok"}`)
}

func (o *operatorEndpoint) set(f func(url.Values)) {
	o.mu.Lock()
	o.onRequest = f
	o.mu.Unlock()
}

// startEndpointOperator starts an endpoint and an operator of env (settings s) whose webhooks
// go there.
func startEndpointOperator(t *testing.T, env *apptest.Env, s domain.OperatorSettings) (*operatorEndpoint, domain.Operator, string) {
	t.Helper()
	ep := &operatorEndpoint{}
	srv := httptest.NewServer(http.HandlerFunc(ep.serve))
	t.Cleanup(srv.Close)
	hook := srv.URL
	s.WebhookURL = &hook
	op, key := env.Operator(t, s)
	return ep, op, key
}

// TestSubmissionRacingSessionCancel: the user cancels (dismisses) the widget while the
// operator is answering the synchronous WITHDRAW_REQUEST, and the operator then approves. The
// session was cancelled before the withdrawal was recorded, so no withdrawal may be left open
// on it (PENDING, in the panel, to be processed and paid): the submission is SESSION_EXPIRED
// and nothing is recorded, over REST and over Connect.
func TestSubmissionRacingSessionCancel(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ep, _, key := startEndpointOperator(t, env, domain.OperatorSettings{})
	_, adminToken := env.Admin(t, "")
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	for _, tr := range withdrawTransports(env, adminToken) {
		t.Run(tr.name, func(t *testing.T) {
			sid := tr.open(t, key, "cancel-race-"+tr.name)
			ep.set(func(form url.Values) {
				if form.Get("event") != "WITHDRAW_REQUEST" {
					return
				}
				// The user dismisses the widget while the operator decides.
				if _, err := widget.CancelSession(context.Background(), &cofferv1.CancelSessionRequest{Sid: sid}); err != nil {
					t.Errorf("cancel: %v", err)
				}
			})
			defer ep.set(nil)
			rows := env.Count(t, "withdrawals")
			id, code, details, _, err := tr.submit(sid)
			if err != nil {
				t.Fatal(err)
			}
			if code != "SESSION_EXPIRED" || (details["httpStatus"] != "" && details["httpStatus"] != "410") {
				t.Errorf("submission on a session cancelled meanwhile: id %q, code %q %v; want SESSION_EXPIRED", id, code, details)
			}
			var open int
			if err := env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM withdrawals WHERE session_id = $1 AND status IN ('PENDING', 'AWAITING_APPROVAL')`,
				sid).Scan(&open); err != nil {
				t.Fatal(err)
			}
			if open != 0 {
				t.Fatalf("%d withdrawals open on a cancelled session", open)
			}
			if n := env.Count(t, "withdrawals"); n != rows {
				t.Fatalf("the refused submission wrote %d withdrawals", n-rows)
			}
		})
	}
}

// payoutChain is a running Coffer on a dev chain whose hot wallet holds 10 ETH and 1,000
// USDT, confirming payouts in about a second: for tests of payouts over the wire.
type payoutChain struct {
	env    *apptest.Env
	dev    *devchain.Chain
	client *chain.Client
	usdt   common.Address
	hooks  *hooktest.Receiver
	admin  string
}

func startPayoutChain(t *testing.T) *payoutChain {
	t.Helper()
	ctx := t.Context()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: 200 * time.Millisecond})
	network := testfactory.DevNetwork(dev, 2)
	env := apptest.Start(t, apptest.Options{ScanInterval: 100 * time.Millisecond, Chains: []chain.Network{network}})
	_, hot := env.Services.Keys.HotWallet()
	testfactory.Fund(ctx, t, dev, hot, 10, 1_000_000_000)
	client := chain.Dial(network, nil)
	t.Cleanup(client.Close)
	usdt, _ := dev.Token("USDT")
	_, admin := env.Admin(t, "")
	return &payoutChain{env: env, dev: dev, client: client, usdt: usdt.Address, hooks: hooktest.New(t), admin: admin}
}

// operator creates an operator (settings s) funded with usdt USDT ("" for none).
func (p *payoutChain) operator(t *testing.T, s domain.OperatorSettings, usdt string) (domain.Operator, string) {
	t.Helper()
	op, key := p.hooks.Operator(t, p.env, s)
	if usdt != "" {
		p.env.Fund(t, op.ID, p.dev.ChainID(), "USDT", usdt)
	}
	return op, key
}

// submit opens a withdraw session of amount USD and submits it to a new address, over REST;
// it returns the withdrawal and its destination.
func (p *payoutChain) submit(t *testing.T, key, amount string) (id, sid string, to common.Address) {
	t.Helper()
	c := mustREST(t, p.env, "POST", "/session/withdraw", key,
		`{"externalUserId":"payee","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"`+amount+`"}`)
	sid = apptest.SID(t, c.data["url"].(string))
	k, _ := crypto.GenerateKey()
	to = crypto.PubkeyToAddress(k.PublicKey)
	c = mustREST(t, p.env, "POST", "/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+to.Hex()+`","currency":"USDT","chainId":1337}`)
	if c.status != http.StatusOK {
		t.Fatalf("submit: %+v", c)
	}
	return c.data["withdrawRequestId"].(string), sid, to
}

// settled waits until a withdrawal is final (or its payout confirmed) and returns its status.
func (p *payoutChain) settled(t *testing.T, id string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var status string
		var paying bool
		if err := p.env.Pool.QueryRow(t.Context(), `SELECT status, payout_queued_at IS NOT NULL FROM withdrawals WHERE id = $1`, id).
			Scan(&status, &paying); err != nil {
			t.Fatal(err)
		}
		if !paying || status == "COMPLETED" {
			return status
		}
		if time.Now().After(deadline) {
			t.Fatalf("withdrawal %s still paying (%s)", id, status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// balance is what address holds of USDT, in the smallest unit.
func (p *payoutChain) balance(t *testing.T, owner common.Address) int64 {
	t.Helper()
	return testfactory.TokenBalance(t.Context(), t, p.client, p.usdt, owner).Int64()
}

// funds is an operator's USDT funds: available and reserved, in token units.
func (p *payoutChain) funds(t *testing.T, operatorID string) (available, reserved string) {
	t.Helper()
	list, err := p.env.Services.Funds.Balances(t.Context(), domain.Operators(operatorID))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range list {
		if b.Currency == "USDT" {
			return b.Available.String(), b.Reserved.String()
		}
	}
	t.Fatalf("no USDT funds listed for %s", operatorID)
	return "", ""
}

// paidOnce checks a withdrawal's money after it settled: paid (exactly units to its
// destination, one payout transaction, one WITHDRAW_COMPLETE) or not paid at all.
func (p *payoutChain) paidOnce(t *testing.T, id string, to common.Address, units int64, paid bool) {
	t.Helper()
	var txs, completes int
	if err := p.env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM chain_txs WHERE purpose = 'payout' AND ref LIKE 'withdrawal:' || $1 || '%'`,
		id).Scan(&txs); err != nil {
		t.Fatal(err)
	}
	if err := p.env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_events WHERE event_type = 'WITHDRAW_COMPLETE' AND subject_id = $1`,
		id).Scan(&completes); err != nil {
		t.Fatal(err)
	}
	want := map[bool][3]int64{true: {units, 1, 1}, false: {0, 0, 0}}[paid]
	if got := [3]int64{p.balance(t, to), int64(txs), int64(completes)}; got != want {
		t.Fatalf("withdrawal %s (paid %v): destination holds %d, %d payout transactions, %d WITHDRAW_COMPLETE; want %v",
			id, paid, got[0], got[1], got[2], want)
	}
}

// TestDecisionsRaceOverTheWire: every way to decide one withdrawal at once (the operator's
// APPROVE and REJECT over REST and Connect, the panel's override, the session's cancel; an
// admin's COMPLETED and REJECTED over REST and Connect) answers a status, never a 5xx, and
// the withdrawal is paid exactly once or not at all, from its operator's own funds; answers
// agree with the outcome.
func TestDecisionsRaceOverTheWire(t *testing.T) { //nolint:tparallel // its subtests share one chain and check its operators' funds at the end, so they run in order; the test runs beside others
	t.Parallel()
	p := startPayoutChain(t)
	external, enabled := domain.ApprovalExternal, true
	modeB := domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled}
	opB, keyB := p.operator(t, modeB, "100")
	opA, keyA := p.operator(t, domain.OperatorSettings{}, "100")
	other, _ := p.operator(t, modeB, "100") // its funds must not move
	decisions := cofferv1connect.NewWithdrawalServiceClient(http.DefaultClient, p.env.URL)
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, p.env.URL)
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, p.env.URL)

	// race runs the calls at once; each returns the status it answered ("" for a refusal
	// whose code it checked) or fails the test.
	race := func(calls []func() (string, error)) []string {
		out := make([]string, len(calls))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, call := range calls {
			wg.Go(func() {
				<-start
				s, err := call()
				if err != nil {
					t.Errorf("call %d: %v", i, err)
				}
				out[i] = s
			})
		}
		close(start)
		wg.Wait()
		return out
	}
	// rest calls an endpoint: the operator's answer in the envelope (data.withdrawStatus), the
	// admin's raw (status).
	rest := func(method, path, bearer, body, statusField string) func() (string, error) {
		return func() (string, error) {
			c, err := callREST(context.Background(), p.env, method, path, bearer, body)
			switch {
			case err != nil:
				return "", err
			case c.status == http.StatusOK && statusField == "status":
				return c.raw[statusField].(string), nil
			case c.status == http.StatusOK:
				s, _ := c.data[statusField].(string)
				return s, nil
			case c.status == http.StatusUnprocessableEntity && c.data["code"] == "FAILED_PRECONDITION":
				return "", nil
			}
			return "", fmt.Errorf("%s %s: HTTP %d %s %v", method, path, c.status, c.message, c.data)
		}
	}
	// answered is a Connect call's answer as the status it left, or "" when it was refused as the
	// table refuses (FAILED_PRECONDITION).
	answered := func(status cofferv1.WithdrawalStatus, err error) (string, error) {
		if err == nil {
			return strings.TrimPrefix(status.String(), "WITHDRAWAL_STATUS_"), nil
		}
		if code, reason := connectErrorInfo(err); code == connect.CodeFailedPrecondition && reason == "FAILED_PRECONDITION" {
			return "", nil
		}
		return "", err
	}

	// decide is the operator's decision on withdrawal id over Connect.
	decide := func(id string, d cofferv1.Decision) func() (string, error) {
		return func() (string, error) {
			r, err := decisions.DecideWithdrawal(withBearer(context.Background(), keyB), &cofferv1.DecideWithdrawalRequest{
				WithdrawRequestId: id, Decision: d})
			return answered(r.GetWithdrawStatus(), err)
		}
	}

	t.Run("mode B", func(t *testing.T) {
		for round := range 3 {
			id, sid, to := p.submit(t, keyB, "10.00")
			var calls []func() (string, error)
			for range 4 {
				calls = append(calls,
					rest("POST", "/withdraw/"+id+"/decision", keyB, `{"decision":"APPROVE"}`, "withdrawStatus"),
					decide(id, cofferv1.Decision_DECISION_APPROVE))
			}
			for range 2 {
				calls = append(calls,
					rest("POST", "/withdraw/"+id+"/decision", keyB, `{"decision":"REJECT","reason":"race"}`, "withdrawStatus"),
					decide(id, cofferv1.Decision_DECISION_REJECT),
					func() (string, error) {
						r, err := admins.OverrideDecision(withBearer(context.Background(), p.admin), &cofferv1.OverrideDecisionRequest{
							WithdrawRequestId: id, Decision: cofferv1.Decision(1 + round%2), AdminNote: "override"})
						return answered(r.GetWithdrawStatus(), err)
					})
			}
			calls = append(calls, func() (string, error) {
				_, err := widget.CancelSession(context.Background(), &cofferv1.CancelSessionRequest{Sid: sid})
				return "", err
			})
			answers := race(calls)
			final := p.settled(t, id)
			paid := final == "COMPLETED"
			if !paid && final != "REJECTED" && final != "CANCELLED" {
				t.Fatalf("round %d: final status %s", round, final)
			}
			for i, a := range answers {
				// A decision answers the outcome, or the status it saw on its way there.
				if a != "" && a != final && (!paid || a != "AWAITING_APPROVAL") {
					t.Errorf("round %d: call %d answered %s; the withdrawal ended %s", round, i, a, final)
				}
			}
			t.Logf("ended %s; answers %q", final, answers)
			p.paidOnce(t, id, to, 10_000_000, paid)
		}
	})

	t.Run("mode A", func(t *testing.T) {
		for range 3 {
			id, _, to := p.submit(t, keyA, "10.00")
			if c := mustREST(t, p.env, "PATCH", "/admin/withdrawals/"+id+"/status", p.admin, `{"status":"PROCESSING"}`); c.status != http.StatusOK {
				t.Fatalf("PROCESSING: %+v", c)
			}
			var calls []func() (string, error)
			for range 4 {
				calls = append(calls,
					rest("PATCH", "/admin/withdrawals/"+id+"/status", p.admin, `{"status":"COMPLETED","adminNote":"pay"}`, "status"),
					func() (string, error) {
						r, err := admins.UpdateWithdrawalStatus(withBearer(context.Background(), p.admin), &cofferv1.UpdateWithdrawalStatusRequest{
							WithdrawRequestId: id, Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_COMPLETED})
						return answered(r.GetWithdrawal().GetStatus(), err)
					})
			}
			for range 3 {
				calls = append(calls, rest("PATCH", "/admin/withdrawals/"+id+"/status", p.admin, `{"status":"REJECTED","adminNote":"no"}`, "status"))
			}
			answers := race(calls)
			final := p.settled(t, id)
			paid := final == "COMPLETED"
			if !paid && final != "REJECTED" {
				t.Fatalf("final status %s", final)
			}
			for i, a := range answers {
				if a != "" && a != final && (!paid || a != "PROCESSING") {
					t.Errorf("call %d answered %s; the withdrawal ended %s", i, a, final)
				}
			}
			t.Logf("ended %s; answers %q", final, answers)
			p.paidOnce(t, id, to, 10_000_000, paid)
		}
	})

	t.Run("own funds only", func(t *testing.T) {
		// An operator with no funds is not paid from another's: APPROVE is held, COMPLETED is
		// 409 naming the shortfall, and nothing moves.
		emptyB, emptyKeyB := p.operator(t, modeB, "")
		id, _, to := p.submit(t, emptyKeyB, "10.00")
		c := mustREST(t, p.env, "POST", "/withdraw/"+id+"/decision", emptyKeyB, `{"decision":"APPROVE"}`)
		if c.status != http.StatusOK || c.data["withdrawStatus"] != "AWAITING_APPROVAL" || c.data["held"] != true ||
			c.data["heldReason"] != "TEMPORARILY_UNAVAILABLE" {
			t.Fatalf("APPROVE without funds: %+v", c)
		}
		p.paidOnce(t, id, to, 0, false)
		emptyA, emptyKeyA := p.operator(t, domain.OperatorSettings{}, "")
		id, _, to = p.submit(t, emptyKeyA, "10.00")
		mustREST(t, p.env, "PATCH", "/admin/withdrawals/"+id+"/status", p.admin, `{"status":"PROCESSING"}`)
		c = mustREST(t, p.env, "PATCH", "/admin/withdrawals/"+id+"/status", p.admin, `{"status":"COMPLETED"}`)
		if c.status != http.StatusConflict || c.data["code"] != "CONFLICT" || !strings.Contains(c.message, "short by 10.000000") {
			t.Fatalf("COMPLETED without funds: %+v", c)
		}
		if s := p.settled(t, id); s != "PROCESSING" {
			t.Fatalf("refused COMPLETED left the withdrawal %s", s)
		}
		p.paidOnce(t, id, to, 0, false)
		for _, op := range []domain.Operator{emptyA, emptyB} {
			if available, reserved := p.funds(t, op.ID); available != "0" || reserved != "0" {
				t.Fatalf("operator without funds: %s available, %s reserved", available, reserved)
			}
		}

		// Approvals at once of more than the operator holds: those that fit are paid, the rest
		// held; the funds never go below zero.
		shortB, shortKey := p.operator(t, modeB, "25")
		type sub struct {
			id string
			to common.Address
		}
		subs := make([]sub, 3)
		var calls []func() (string, error)
		for i := range subs {
			subs[i].id, _, subs[i].to = p.submit(t, shortKey, "10.00")
			calls = append(calls, func() (string, error) {
				c, err := callREST(context.Background(), p.env, "POST", "/withdraw/"+subs[i].id+"/decision", shortKey, `{"decision":"APPROVE"}`)
				if err != nil || c.status != http.StatusOK {
					return "", fmt.Errorf("APPROVE: %+v %w", c, err)
				}
				if c.data["held"] == true {
					return "held " + c.data["heldReason"].(string), nil
				}
				return "approved", nil
			})
		}
		answers := race(calls)
		held := 0
		for i, a := range answers {
			paid := p.settled(t, subs[i].id) == "COMPLETED"
			if a == "held TEMPORARILY_UNAVAILABLE" {
				held++
			} else if a != "approved" {
				t.Errorf("approval %d answered %q", i, a)
			}
			p.paidOnce(t, subs[i].id, subs[i].to, 10_000_000, paid)
		}
		if held != 1 {
			t.Fatalf("%d of 3 approvals of 10 USDT held with 25 USDT of funds; want 1 (answers %q)", held, answers)
		}
		if available, reserved := p.funds(t, shortB.ID); available != "5" || reserved != "0" {
			t.Fatalf("after paying 20 of 25: %s available, %s reserved", available, reserved)
		}
	})

	// What each operator's funds say is what was paid from them, and nothing is left reserved.
	for _, op := range []domain.Operator{opA, opB, other} {
		var paid int64
		if err := p.env.Pool.QueryRow(t.Context(), `SELECT coalesce(sum(crypto_amount), 0)::bigint FROM withdrawals
			WHERE operator_id = $1 AND status = 'COMPLETED'`, op.ID).Scan(&paid); err != nil {
			t.Fatal(err)
		}
		available, reserved := p.funds(t, op.ID)
		if want := decimal.NewFromInt(100).Sub(decimal.New(paid, -6)).String(); available != want || reserved != "0" {
			t.Errorf("operator %s: available %s, reserved %s after paying %d units; want %s and 0", op.Name, available, reserved, paid, want)
		}
	}
}

// TestDecisionsStayInTheirOperator: only the operator's own withdrawals may be decided (spec,
// Authentication rule 4): not its parent's, its sub-operator's, its sibling's or an unrelated
// operator's, over REST or Connect, with APPROVE or REJECT; each is NOT_FOUND (as if it did not
// exist) and changes nothing. An operator-scoped admin reaches no other operator's either.
func TestDecisionsStayInTheirOperator(t *testing.T) {
	t.Parallel()
	env, a, b, sub := startTenants(t)
	external, enabled := domain.ApprovalExternal, true
	modeB := domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled}
	for _, op := range []domain.Operator{a.Operator, b.Operator, sub.Operator} {
		if _, err := env.Services.Operators.Update(t.Context(), op.ID, modeB); err != nil {
			t.Fatal(err)
		}
	}
	var sibling tenant
	sibling.Operator, sibling.key = env.Operator(t, domain.OperatorSettings{ParentID: &a.ID, ApprovalMode: &external, ApprovalEnabled: &enabled})
	tenants := map[string]tenant{"parent": a, "unrelated": b, "sub": sub, "sibling": sibling}
	ids := map[string]string{}
	for name, tn := range tenants {
		c := mustREST(t, env, "POST", "/session/withdraw", tn.key,
			`{"externalUserId":"payee","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"10.00"}`)
		sid := apptest.SID(t, c.data["url"].(string))
		c = mustREST(t, env, "POST", "/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+destination+`","currency":"USDT","chainId":1337}`)
		if c.status != http.StatusOK || c.data["status"] != "AWAITING_APPROVAL" {
			t.Fatalf("submit for %s: %+v", name, c)
		}
		ids[name] = c.data["withdrawRequestId"].(string)
	}
	decisions := cofferv1connect.NewWithdrawalServiceClient(http.DefaultClient, env.URL)
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	transitions := env.Count(t, "withdrawal_transitions")
	for caller, tn := range tenants {
		for owner, id := range ids {
			if owner == caller {
				continue
			}
			for _, d := range []string{"APPROVE", "REJECT"} {
				c := mustREST(t, env, "POST", "/withdraw/"+id+"/decision", tn.key, `{"decision":"`+d+`","reason":"not mine"}`)
				if c.status != http.StatusNotFound || c.data["code"] != "NOT_FOUND" {
					t.Errorf("%s %s of the %s's withdrawal over REST: %+v, want 404 NOT_FOUND", caller, d, owner, c)
				}
				_, err := decisions.DecideWithdrawal(withBearer(t.Context(), tn.key), &cofferv1.DecideWithdrawalRequest{WithdrawRequestId: id,
					Decision: cofferv1.Decision(cofferv1.Decision_value["DECISION_"+d])})
				wantConnectError(t, caller+" "+d+" of the "+owner+"'s withdrawal over Connect", err, connect.CodeNotFound, "NOT_FOUND")
			}
		}
		// An admin of this operator neither overrides nor moves another operator's withdrawal.
		_, token := env.Admin(t, tn.ID)
		for owner, id := range ids {
			if owner == caller || (caller == "parent" && (owner == "sub" || owner == "sibling")) {
				continue // the parent's admins manage its sub-operators
			}
			_, err := admins.OverrideDecision(withBearer(t.Context(), token), &cofferv1.OverrideDecisionRequest{WithdrawRequestId: id,
				Decision: cofferv1.Decision_DECISION_REJECT, AdminNote: "not mine"})
			wantConnectError(t, "admin of the "+caller+" overriding the "+owner+"'s withdrawal", err, connect.CodeNotFound, "NOT_FOUND")
			c := mustREST(t, env, "PATCH", "/admin/withdrawals/"+id+"/status", token, `{"status":"REJECTED","adminNote":"not mine"}`)
			if c.status != http.StatusNotFound {
				t.Errorf("admin of the %s moving the %s's withdrawal: %+v, want 404", caller, owner, c)
			}
		}
	}
	if n := env.Count(t, "withdrawal_transitions"); n != transitions {
		t.Fatalf("refused decisions wrote %d transitions", n-transitions)
	}
	var open int
	if err := env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM withdrawals WHERE status = 'AWAITING_APPROVAL' AND held_reason IS NULL`).
		Scan(&open); err != nil || open != len(ids) {
		t.Fatalf("%d of %d withdrawals untouched: %v", open, len(ids), err)
	}
}

// TestAdminFinalizeForbiddenStates: the panel's actions (PATCH …/status PROCESSING, COMPLETED,
// REJECTED over REST; the override's APPROVE and REJECT over Connect) on a withdrawal in a
// state whose transition table forbids them answer 422 FAILED_PRECONDITION and change
// nothing: no status, no audit row, no payout queued, no funds reserved.
func TestAdminFinalizeForbiddenStates(t *testing.T) {
	t.Parallel()
	// No worker: the periodic sweep would queue the paying withdrawals' payout jobs (as after a
	// crash) between the snapshots this test compares.
	env := apptest.Start(t, apptest.Options{Role: "api"})
	op, _ := env.Operator(t, domain.OperatorSettings{})
	env.Fund(t, op.ID, 1337, "USDT", "1000")
	_, token := env.Admin(t, "")
	opened, err := env.Services.Sessions.Open(t.Context(), op, domain.SessionWithdraw, session.Input{ExternalUserID: "forbidden",
		Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "25.00"})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(status domain.WithdrawalStatus, paying bool) string {
		t.Helper()
		return testfactory.Withdrawal(t.Context(), t, env.Pool, opened.Session, &testfactory.WithdrawalOpts{Status: status, Paying: paying, Address: destination}).ID
	}
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	act := map[string]func(id string) (int, string){}
	for _, s := range []string{"PROCESSING", "COMPLETED", "REJECTED"} {
		act[s] = func(id string) (int, string) {
			c := mustREST(t, env, "PATCH", "/admin/withdrawals/"+id+"/status", token, `{"status":"`+s+`","adminNote":"try"}`)
			code, _ := c.data["code"].(string)
			return c.status, code
		}
	}
	for _, d := range []string{"APPROVE", "REJECT"} {
		act["override "+d] = func(id string) (int, string) {
			_, err := admins.OverrideDecision(withBearer(t.Context(), token), &cofferv1.OverrideDecisionRequest{WithdrawRequestId: id,
				Decision: cofferv1.Decision(cofferv1.Decision_value["DECISION_"+d]), AdminNote: "try"})
			if code, reason := connectErrorInfo(err); code == connect.CodeFailedPrecondition {
				return http.StatusUnprocessableEntity, reason
			} else if err != nil {
				return 0, err.Error()
			}
			return http.StatusOK, ""
		}
	}
	cases := []struct {
		status    domain.WithdrawalStatus
		paying    bool
		forbidden []string
	}{
		{domain.WithdrawalPending, false, []string{"COMPLETED", "REJECTED", "override APPROVE", "override REJECT"}},
		{domain.WithdrawalProcessing, false, []string{"PROCESSING", "override APPROVE", "override REJECT"}},
		{domain.WithdrawalProcessing, true, []string{"PROCESSING", "REJECTED", "override APPROVE", "override REJECT"}},
		{domain.WithdrawalAwaitingApproval, false, []string{"PROCESSING", "COMPLETED", "REJECTED"}},
		{domain.WithdrawalAwaitingApproval, true, []string{"PROCESSING", "COMPLETED", "REJECTED", "override REJECT"}},
		{domain.WithdrawalRejected, false, []string{"PROCESSING", "COMPLETED", "override APPROVE", "override REJECT"}},
		{domain.WithdrawalCancelled, false, []string{"PROCESSING", "COMPLETED", "REJECTED"}},
		{domain.WithdrawalExpired, false, []string{"PROCESSING", "COMPLETED", "REJECTED"}},
	}
	type snapshot struct {
		status      string
		paying      bool
		transitions int
		reserved    string
		jobs        int
	}
	snap := func(id string) snapshot {
		t.Helper()
		var s snapshot
		if err := env.Pool.QueryRow(t.Context(), `SELECT status, payout_queued_at IS NOT NULL,
			(SELECT count(*) FROM withdrawal_transitions WHERE withdrawal_id = $1),
			(SELECT coalesce(sum(reserved_delta), 0)::text FROM fund_entries WHERE ref = 'withdrawal:' || $1::text),
			(SELECT count(*) FROM river_job WHERE kind = 'withdrawal.payout' AND args->>'withdrawalId' = $1::text)
			FROM withdrawals WHERE id = $1`, id).Scan(&s.status, &s.paying, &s.transitions, &s.reserved, &s.jobs); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range cases {
		for _, a := range c.forbidden {
			id := insert(c.status, c.paying)
			before := snap(id)
			if status, code := act[a](id); status != http.StatusUnprocessableEntity || code != "FAILED_PRECONDITION" {
				t.Errorf("%s on %s (paying %v): %d %s, want 422 FAILED_PRECONDITION", a, c.status, c.paying, status, code)
			}
			if after := snap(id); after != before {
				t.Errorf("%s on %s (paying %v) changed %+v to %+v", a, c.status, c.paying, before, after)
			}
		}
	}
}

// TestWithdrawalAmountsAtTheEdges: the largest amounts a withdraw session takes, in a
// currency other than the operator's platform currency (so that their cap amount is
// converted), are submitted or refused with a documented error, never a 500, and the
// smallest is refused as less than a token's smallest unit; every answer over REST.
func TestWithdrawalAmountsAtTheEdges(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	usd := "USD"
	_, key := hooks.Operator(t, env, domain.OperatorSettings{FiatCurrency: &usd})
	for _, c := range []struct {
		amount, currency, token string
		status                  int
		// units is what is paid, in the smallest unit: the fiat amount's worth rounded down.
		code, units string
	}{
		{"99999999999999999999", "USD", "USDT", http.StatusOK, "", "99999999999999999999000000"},
		{"99999999999999999999.999999999999999999", "USD", "USDT", http.StatusOK, "", "99999999999999999999999999"},
		// 1.09e20 USD (EUR at 0.92 a USD): more than a platform-currency amount of the session's
		// 20 integer digits.
		{"99999999999999999999", "EUR", "USDT", http.StatusOK, "", "108695652173913043477173913"},
		{"99999999999999999999", "GBP", "ETH", http.StatusOK, "", "42194092827004219408860759493670886"},
		// Rounded down to the token's smallest unit, never up: 10 EUR is 3623188405797101.449… wei,
		// 0.01 GBP 12658.227… USDT units, 1 EUR 1086956.521… USDT units.
		{"10.00", "EUR", "ETH", http.StatusOK, "", "3623188405797101"},
		{"0.01", "GBP", "USDT", http.StatusOK, "", "12658"},
		{"1", "EUR", "USDT", http.StatusOK, "", "1086956"},
		{"0.000000000000000001", "USD", "USDT", http.StatusBadRequest, "INVALID_ARGUMENT", ""},
		{"0.0000019", "USD", "USDT", http.StatusOK, "", "1"},
		{"0.0000001", "USD", "USDT", http.StatusBadRequest, "INVALID_ARGUMENT", ""},
		{"0.000001", "USD", "USDT", http.StatusOK, "", "1"},
	} {
		t.Run(c.amount+c.currency+c.token, func(t *testing.T) {
			t.Parallel()
			s := mustREST(t, env, "POST", "/session/withdraw", key,
				`{"externalUserId":"edge","lang":"en","platformFiatCurrency":"`+c.currency+`","userBalance":"1","amount":"`+c.amount+`"}`)
			if s.status != http.StatusOK {
				t.Fatalf("session: %+v", s)
			}
			sid := apptest.SID(t, s.data["url"].(string))
			res := mustREST(t, env, "POST", "/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+destination+`","currency":"`+
				c.token+`","chainId":1337}`)
			if res.status != c.status || (c.code != "" && res.data["code"] != c.code) {
				t.Fatalf("submit %s %s in %s: %d %s %v; want %d %s", c.amount, c.currency, c.token, res.status, res.message, res.data, c.status, c.code)
			}
			if c.units == "" {
				return
			}
			var sent string
			if err := env.Pool.QueryRow(t.Context(), `SELECT crypto_amount::text FROM withdrawals WHERE id = $1`,
				res.data["withdrawRequestId"]).Scan(&sent); err != nil {
				t.Fatal(err)
			}
			if sent != c.units {
				t.Errorf("pays %s units, want %s", sent, c.units)
			}
		})
	}
}

// TestAdminWithdrawalListNamesOperatorsInAnyCase: GET /admin/withdrawals?operatorId= takes a
// UUID in any case (as the operator paths do): an operator's admin naming its own operator in
// capitals sees its withdrawals, not a 404, and still none of another operator's.
func TestAdminWithdrawalListNamesOperatorsInAnyCase(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	op, key := hooks.Operator(t, env, domain.OperatorSettings{})
	other, _ := hooks.Operator(t, env, domain.OperatorSettings{})
	s := mustREST(t, env, "POST", "/session/withdraw", key,
		`{"externalUserId":"payee","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"10.00"}`)
	sid := apptest.SID(t, s.data["url"].(string))
	c := mustREST(t, env, "POST", "/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+destination+`","currency":"USDT","chainId":1337}`)
	if c.status != http.StatusOK {
		t.Fatalf("submit: %+v", c)
	}
	_, token := env.Admin(t, op.ID)
	list := func(operatorID string) (int, int) {
		res := env.Do(t, "GET", "/admin/withdrawals?operatorId="+operatorID, token, "")
		defer res.Body.Close()
		var items []map[string]any
		if res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(&items); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode, len(items)
	}
	for _, id := range []string{op.ID, strings.ToUpper(op.ID)} {
		if status, n := list(id); status != http.StatusOK || n != 1 {
			t.Errorf("operatorId=%s: HTTP %d with %d items; want 200 with 1", id, status, n)
		}
	}
	for _, id := range []string{other.ID, strings.ToUpper(other.ID)} {
		if status, _ := list(id); status != http.StatusNotFound {
			t.Errorf("another operator's operatorId=%s: HTTP %d; want 404", id, status)
		}
	}
}

// TestAdminCannotTakeAnExpiredWithdrawal: a PENDING withdrawal left unactioned past its 24-hour
// TTL is expired (spec: any → EXPIRED) even before the periodic job records it: an admin's
// PROCESSING is refused (422) and changes nothing, as an APPROVE past the TTL is held EXPIRED.
// One still within its TTL is taken.
func TestAdminCannotTakeAnExpiredWithdrawal(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Role: "api"}) // no worker: nothing expires it meanwhile
	op, _ := env.Operator(t, domain.OperatorSettings{})
	_, token := env.Admin(t, "")
	opened, err := env.Services.Sessions.Open(t.Context(), op, domain.SessionWithdraw, session.Input{ExternalUserID: "late",
		Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "25.00"})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(expiresAt time.Time) string {
		amount := decimal.RequireFromString("25.00")
		return env.InsertWithdrawal(t, domain.Withdrawal{ID: uuid.NewString(), OperatorID: op.ID, SessionID: opened.Session.ID,
			ExternalUserID: "late", Type: "DIRECT_TRANSFER", ApprovalMode: domain.ApprovalSync, Status: domain.WithdrawalPending,
			ChainID: 1337, Currency: "USDT", ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6, Address: destination,
			FiatCurrency: "USD", FiatAmount: amount, CryptoAmount: decimal.NewFromInt(25_000_000), ExpiresAt: expiresAt,
			AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount)}).ID
	}
	late := insert(time.Now().Add(-time.Second))
	c := mustREST(t, env, "PATCH", "/admin/withdrawals/"+late+"/status", token, `{"status":"PROCESSING","adminNote":"late"}`)
	if c.status != http.StatusUnprocessableEntity || c.data["code"] != "FAILED_PRECONDITION" || !strings.Contains(c.message, "expired") {
		t.Errorf("PROCESSING past the TTL: %+v; want 422 FAILED_PRECONDITION saying it expired", c)
	}
	var status string
	var transitions int
	if err := env.Pool.QueryRow(t.Context(), `SELECT status, (SELECT count(*) FROM withdrawal_transitions WHERE withdrawal_id = $1)
		FROM withdrawals WHERE id = $1`, late).Scan(&status, &transitions); err != nil || status != "PENDING" || transitions != 0 {
		t.Errorf("the refused PROCESSING left %s with %d transitions (%v)", status, transitions, err)
	}
	// The panel offers it no action.
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	got, err := admins.GetAdminWithdrawal(withBearer(t.Context(), token), &cofferv1.GetAdminWithdrawalRequest{WithdrawRequestId: late})
	if err != nil || len(got.GetAllowedActions()) != 0 {
		t.Errorf("allowed actions of a lapsed withdrawal: %v %v; want none", got.GetAllowedActions(), err)
	}
	inTime := insert(time.Now().Add(time.Hour))
	if c := mustREST(t, env, "PATCH", "/admin/withdrawals/"+inTime+"/status", token, `{"status":"PROCESSING"}`); c.status != http.StatusOK ||
		c.raw["status"] != "PROCESSING" {
		t.Errorf("PROCESSING within the TTL: %+v", c)
	}
}

// TestQueuedPayoutOutlivesCancelAndExpiry: a withdrawal whose payout is queued (mode A
// PROCESSING after COMPLETED, mode B after APPROVE) is neither cancelled with its session nor
// expired past its TTL: the payout may already be on its way, so only its confirmation changes
// it.
func TestQueuedPayoutOutlivesCancelAndExpiry(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Role: "api"}) // the test runs the sweep itself
	op, _ := env.Operator(t, domain.OperatorSettings{})
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	type row struct {
		id, sid string
		status  domain.WithdrawalStatus
	}
	var rows []row
	for _, status := range []domain.WithdrawalStatus{domain.WithdrawalProcessing, domain.WithdrawalAwaitingApproval} {
		opened, err := env.Services.Sessions.Open(t.Context(), op, domain.SessionWithdraw, session.Input{ExternalUserID: "queued",
			Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "25.00"})
		if err != nil {
			t.Fatal(err)
		}
		mode := domain.ApprovalSync
		if status == domain.WithdrawalAwaitingApproval {
			mode = domain.ApprovalExternal
		}
		amount, queued := decimal.RequireFromString("25.00"), time.Now().Add(-time.Minute)
		w := env.InsertWithdrawal(t, domain.Withdrawal{ID: uuid.NewString(), OperatorID: op.ID, SessionID: opened.Session.ID,
			ExternalUserID: "queued", Type: "DIRECT_TRANSFER", ApprovalMode: mode, Status: status, ChainID: 1337, Currency: "USDT",
			ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6, Address: destination, FiatCurrency: "USD",
			FiatAmount: amount, CryptoAmount: decimal.NewFromInt(25_000_000), ExpiresAt: time.Now().Add(-time.Second),
			AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount), PayoutQueuedAt: &queued})
		rows = append(rows, row{w.ID, opened.Session.ID, status})
		if _, err := widget.CancelSession(t.Context(), &cofferv1.CancelSessionRequest{Sid: opened.Session.ID}); err != nil {
			t.Fatal(err)
		}
	}
	swept, err := env.Services.Withdrawals.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if swept.Expired != 0 || swept.Cancelled != 0 {
		t.Errorf("the sweep expired %d and cancelled %d queued payouts", swept.Expired, swept.Cancelled)
	}
	for _, r := range rows {
		var status string
		var paying bool
		if err := env.Pool.QueryRow(t.Context(), `SELECT status, payout_queued_at IS NOT NULL FROM withdrawals WHERE id = $1`, r.id).
			Scan(&status, &paying); err != nil {
			t.Fatal(err)
		}
		if status != string(r.status) || !paying {
			t.Errorf("a queued payout in %s became %s (paying %v) after its session's cancel and its TTL", r.status, status, paying)
		}
	}
}

// TestSubmissionsRaceOverBothTransports: one withdraw session submitted at once over REST and
// Connect, in each approval mode, answers every call with a withdrawal or a documented refusal
// (429 RATE_LIMITED, 409 CONFLICT), never a 5xx, and leaves exactly one open withdrawal on the
// session: every other one it recorded is CANCELLED (superseded).
func TestSubmissionsRaceOverBothTransports(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	_, adminToken := env.Admin(t, "")
	external, enabled := domain.ApprovalExternal, true
	for _, mode := range []struct {
		name     string
		settings domain.OperatorSettings
		open     string
	}{{"mode A", domain.OperatorSettings{}, "PENDING"},
		{"mode B", domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled}, "AWAITING_APPROVAL"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			_, key := hooks.Operator(t, env, mode.settings)
			transports := withdrawTransports(env, adminToken)
			sid := transports[0].open(t, key, "race-"+mode.name)
			var wg sync.WaitGroup
			var mu sync.Mutex
			accepted := map[string]bool{}
			for i := range 12 {
				tr := transports[i%2]
				wg.Go(func() {
					id, code, details, _, err := tr.submit(sid)
					switch {
					case err != nil:
						t.Errorf("%s: %v", tr.name, err)
					case code == "":
						mu.Lock()
						accepted[id] = true
						mu.Unlock()
					case code != "RATE_LIMITED":
						t.Errorf("%s: %s %v; want a withdrawal or RATE_LIMITED", tr.name, code, details)
					}
				})
			}
			wg.Wait()
			rows, err := env.Pool.Query(t.Context(), `SELECT id::text, status FROM withdrawals WHERE session_id = $1`, sid)
			if err != nil {
				t.Fatal(err)
			}
			statuses := map[string]string{}
			for rows.Next() {
				var id, status string
				if err := rows.Scan(&id, &status); err != nil {
					t.Fatal(err)
				}
				statuses[id] = status
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			open := 0
			for id, s := range statuses {
				switch {
				case s == mode.open:
					open++
				case s != "CANCELLED":
					t.Errorf("withdrawal %s is %s", id, s)
				}
				if !accepted[id] {
					t.Errorf("withdrawal %s (%s) was recorded but its submission was refused", id, s)
				}
			}
			if open != 1 || len(accepted) != len(statuses) {
				t.Fatalf("%d open of %d recorded, %d accepted: %v", open, len(statuses), len(accepted), statuses)
			}
		})
	}
}

// TestDestinationIsNoServiceContract: a withdrawal may not be paid to a contract of the
// service's chains whose funds would never reach the user: any configured token contract (the
// USDC contract on a USDT withdrawal, as the USDT one already was) and the chain's EIP-7702
// Sweeper. What was seen: both were accepted (PENDING), and an admin's COMPLETED would have
// sent the tokens where nobody can take them out. The refusal sends no WITHDRAW_REQUEST and
// stores nothing.
func TestDestinationIsNoServiceContract(t *testing.T) {
	t.Parallel()
	chains := apptest.TestChains()
	sweeper := common.HexToAddress("0x00000000000000000000000000000000000000a3")
	chains[0].SweepMethod, chains[0].SweeperAddress = chain.SweepEIP7702, sweeper
	env := apptest.Start(t, apptest.Options{Role: config.RoleAPI, Chains: chains})
	hooks := hooktest.New(t)
	_, key := hooks.Operator(t, env, domain.OperatorSettings{})
	s := mustREST(t, env, "POST", "/session/withdraw", key,
		`{"externalUserId":"payee","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"10.00"}`)
	sid := apptest.SID(t, s.data["url"].(string))
	usdc := chains[0].Tokens[1].ContractAddress
	for _, c := range []struct {
		name, currency string
		addr           common.Address
	}{
		{"USDC contract, USDT withdrawal", "USDT", usdc},
		{"USDC contract, ETH withdrawal", "ETH", usdc},
		{"Sweeper, USDT withdrawal", "USDT", sweeper},
		{"Sweeper lower-case, ETH withdrawal", "ETH", sweeper},
	} {
		addr := c.addr.Hex()
		if strings.Contains(c.name, "lower-case") {
			addr = strings.ToLower(addr)
		}
		res := mustREST(t, env, "POST", "/withdraw/direct-transfer", "",
			`{"sid":"`+sid+`","address":"`+addr+`","currency":"`+c.currency+`","chainId":1337}`)
		if res.status != http.StatusBadRequest || res.data["code"] != "INVALID_ARGUMENT" || res.data["field"] != "address" {
			t.Errorf("%s: %d %v %q, want 400 INVALID_ARGUMENT on address", c.name, res.status, res.data, res.message)
		}
	}
	if n := env.Count(t, "withdrawals"); n != 0 {
		t.Errorf("refused destinations stored %d withdrawals", n)
	}
	if got := hooks.Attempts(); len(got) != 0 {
		t.Errorf("refused destinations sent %d webhooks", len(got))
	}
}
