package withdrawal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// pause pauses a scope as the service team would.
func (e *env) pause(p withdrawal.Pause) domain.PayoutPause {
	e.t.Helper()
	return e.pauseAction("pause", e.svc.PausePayouts, p, "incident 42")
}

func (e *env) resume(p withdrawal.Pause) domain.PayoutPause {
	e.t.Helper()
	return e.pauseAction("resume", e.svc.ResumePayouts, p, "fixed")
}

// pauseAction runs a pause or a resume of the service team with reason.
func (e *env) pauseAction(name string, act func(context.Context, withdrawal.Pause) (domain.PayoutPause, error),
	p withdrawal.Pause, reason string) domain.PayoutPause {
	e.t.Helper()
	p.Actor, p.Reason = "service-team:test", reason
	got, err := act(e.ctx, p)
	if err != nil {
		e.t.Fatalf("%s %+v: %v", name, p, err)
	}
	return got
}

// TestPausedPayoutsWaitAndGoOutOnResume: while a pause covers a withdrawal (global, its chain,
// its operator), APPROVE is held TEMPORARILY_UNAVAILABLE and admin COMPLETED refused
// UNAVAILABLE with the reason, changing nothing; a payout queued before the pause is neither
// signed nor sent until the resume, then paid exactly once. A pause of another chain or
// operator holds nothing.
func TestPausedPayoutsWaitAndGoOutOnResume(t *testing.T) {
	t.Parallel()
	e, opA := setupOperator(t, domain.OperatorSettings{})
	opB := e.operator(modeB(domain.OperatorSettings{}))
	other := e.operator(domain.OperatorSettings{})
	scopes := []withdrawal.Pause{
		{Scope: domain.PauseGlobal},
		{Scope: domain.PauseChain, ChainID: e.dev.ChainID()},
		{Scope: domain.PauseOperator, OperatorID: opA.ID},
	}
	for _, sc := range scopes {
		// opA's and opB's withdrawals; the operator pause is opA's and opB's in turn.
		p := e.pause(sc)
		if !p.Active() || p.PausedBy != "service-team:test" || p.Reason != "incident 42" {
			t.Fatalf("pause: %+v", p)
		}
		wa := e.submit(e.withdrawSession(opA, "user-a", "5.00"), newAddress(), "USDT")
		e.admin(wa.ID, domain.WithdrawalProcessing)
		_, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), wa.ID, domain.WithdrawalCompleted, "admin:a@x", "pay")
		fe := faultOf(err)
		if fe.Code != fault.Unavailable || !errors.Is(err, withdrawal.ErrPaused) || !strings.Contains(fe.Message, "incident 42") {
			t.Fatalf("%s: admin COMPLETED while paused: %v", sc.Scope, err)
		}
		if got := e.get(wa.ID); got.Status != domain.WithdrawalProcessing || got.PayoutQueuedAt != nil {
			t.Fatalf("%s: a refused COMPLETED changed the withdrawal: %+v", sc.Scope, got)
		}
		if f := e.funds(opA, "USDT"); f.Reserved.Sign() != 0 {
			t.Fatalf("%s: a refused COMPLETED reserved funds: %+v", sc.Scope, f)
		}
		if sc.Scope == domain.PauseOperator {
			// Another operator's payouts are not held by opA's pause.
			e.queuedPayout(other, "user-o", "1.00")
			e.resume(sc)
			sc.OperatorID = opB.ID
			e.pause(sc)
		}
		wb := e.submit(e.withdrawSession(opB, "user-b", "5.00"), newAddress(), "USDT")
		for _, approve := range []withdrawal.Action{withdrawal.OperatorApprove, withdrawal.AdminApprove} {
			d, err := e.svc.Decide(e.ctx, domain.AllOperators(), wb.ID, approve, "operator:x", "")
			if err != nil || d.Held != withdrawal.TemporarilyUnavailable || d.Withdrawal.Status != domain.WithdrawalAwaitingApproval {
				t.Fatalf("%s: %s while paused: %+v %v", sc.Scope, approve, d, err)
			}
		}
		if got := e.get(wb.ID); got.PayoutQueuedAt != nil {
			t.Fatalf("%s: a held APPROVE queued a payout: %+v", sc.Scope, got)
		}
		e.resume(sc)
		if _, err := e.svc.Decide(e.ctx, domain.AllOperators(), wb.ID, withdrawal.OperatorApprove, "operator:x", ""); err != nil {
			t.Fatal(err)
		}
		e.admin(wa.ID, domain.WithdrawalCompleted)
		e.payAll()
	}

	// A payout queued before the pause waits: its job neither signs nor sends.
	w := e.queuedPayout(opA, "user-q", "7.00")
	dest := w.Address
	before := e.payouts()
	e.pause(withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()})
	for range 3 {
		done, err := e.svc.Pay(e.ctx, w.ID)
		if err != nil || done {
			t.Fatalf("pay while paused: done %v, %v", done, err)
		}
		e.dev.Commit()
	}
	if e.payouts() != before || e.get(w.ID).Status != domain.WithdrawalProcessing {
		t.Fatal("a paused payout was signed")
	}
	e.resume(withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()})
	e.payAll()
	if got := e.get(w.ID); got.Status != domain.WithdrawalCompleted || e.payouts() != before+1 {
		t.Fatalf("after resume: %+v, %d payouts", got, e.payouts())
	}
	if bal := e.tokenBalance(common.HexToAddress(dest)); bal.Int64() != 7_000_000 {
		t.Fatalf("destination holds %s, want 7 USDT exactly once", bal)
	}
	// The history keeps every pause and resume with its actor and reason.
	all, err := e.svc.PayoutPauses(e.ctx, true, 0)
	if err != nil || len(all) != 5 {
		t.Fatalf("history: %d pauses, %v", len(all), err)
	}
	for _, p := range all {
		if p.Active() || p.ResumedBy != "service-team:test" || p.ResumeReason != "fixed" || p.PausedBy == "" || p.Reason == "" {
			t.Fatalf("audit: %+v", p)
		}
	}
}

// TestPauseBadInput: bad input gets its documented error and changes nothing.
func TestPauseBadInput(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	e.pause(withdrawal.Pause{Scope: domain.PauseGlobal})
	cases := []struct {
		name string
		p    withdrawal.Pause
		code fault.Code
		do   func(context.Context, withdrawal.Pause) (domain.PayoutPause, error)
	}{
		{"unknown operator", withdrawal.Pause{Scope: domain.PauseOperator, OperatorID: "00000000-0000-4000-8000-000000000000"}, fault.NotFound, e.svc.PausePayouts},
		{"unknown chain", withdrawal.Pause{Scope: domain.PauseChain, ChainID: 999}, fault.NotFound, e.svc.PausePayouts},
		{"no reason", withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()}, fault.InvalidArgument, e.svc.PausePayouts},
		{"bad scope", withdrawal.Pause{Scope: "planet"}, fault.InvalidArgument, e.svc.PausePayouts},
		{"global with a chain", withdrawal.Pause{Scope: domain.PauseGlobal, ChainID: 1}, fault.InvalidArgument, e.svc.PausePayouts},
		{"already paused", withdrawal.Pause{Scope: domain.PauseGlobal}, fault.Conflict, e.svc.PausePayouts},
		{"resume what is not paused", withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()}, fault.NotFound, e.svc.ResumePayouts},
	}
	for _, c := range cases {
		if c.name != "no reason" {
			c.p.Reason = "why"
		}
		c.p.Actor = "service-team:test"
		if _, err := c.do(e.ctx, c.p); faultOf(err).Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	list, err := e.svc.PayoutPauses(e.ctx, true, 0)
	if err != nil || len(list) != 1 || list[0].Reason != "incident 42" {
		t.Fatalf("bad input changed the pauses: %+v %v", list, err)
	}
}

// TestPausedGauge: coffer_payouts_paused reads the active pauses from PostgreSQL: one series
// per pause, and the global series 0 when payouts are not paused globally.
func TestPausedGauge(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	c := metrics.NewPayoutsPaused(e.svc.PauseLabels)
	want := func(body string) {
		t.Helper()
		if err := testutil.CollectAndCompare(c, strings.NewReader(`# HELP coffer_payouts_paused 1 for each active payout pause (OpsService.PausePayouts), by scope; the global series is always present (0 when not paused).
# TYPE coffer_payouts_paused gauge
`+body), "coffer_payouts_paused"); err != nil {
			t.Fatal(err)
		}
	}
	want(`coffer_payouts_paused{chain_id="",operator_id="",scope="global"} 0
`)
	e.pause(withdrawal.Pause{Scope: domain.PauseOperator, OperatorID: op.ID})
	e.pause(withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()})
	want(fmt.Sprintf(`coffer_payouts_paused{chain_id="",operator_id="",scope="global"} 0
coffer_payouts_paused{chain_id="",operator_id=%q,scope="operator"} 1
coffer_payouts_paused{chain_id="%d",operator_id="",scope="chain"} 1
`, op.ID, e.dev.ChainID()))
	e.pause(withdrawal.Pause{Scope: domain.PauseGlobal})
	e.resume(withdrawal.Pause{Scope: domain.PauseOperator, OperatorID: op.ID})
	e.resume(withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()})
	want(`coffer_payouts_paused{chain_id="",operator_id="",scope="global"} 1
`)
}

// What was seen: a pause committed while a payout job was signing (after the job read that
// nothing was paused, before its first broadcast) did not hold the payout: the job broadcast
// it, and it was mined while the pause covered it. The job now reads the pauses again once
// the transaction is stored, before its first broadcast: under a pause of its chain it waits
// (signed, never sent) until the resume, then pays exactly once. (Under an operator pause it is
// cancelled at its nonce: TestOperatorPauseWhileAPayoutIsSigningHoldsNoOtherOperator.)
func TestPauseWhileAPayoutIsSigningHoldsItsBroadcast(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-p", "4.00")
	scope := withdrawal.Pause{Scope: domain.PauseChain, ChainID: e.dev.ChainID()}
	paused := false
	// The engine's step hook runs in the job between storing the signed transaction and
	// broadcasting it: the service team's pause commits right there.
	e.engine.Crash = func(step string) {
		if step == chaintx.StepStored && !paused {
			paused = true
			e.pause(scope)
		}
	}
	for range 3 {
		if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
			t.Fatalf("pay while paused: done %v, %v", done, err)
		}
		e.dev.Commit()
	}
	if !paused {
		t.Fatal("the payout was never stored")
	}
	tx, err := store.New(e.pool).ChainTxByRef(e.ctx, withdrawal.PurposePayout, "withdrawal:"+w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tx.State != domain.ChainTxPending || tx.Latest().BroadcastAt != nil {
		t.Fatalf("paused payout: %s, broadcast at %v", tx.State, tx.Latest().BroadcastAt)
	}
	if bal := e.tokenBalance(common.HexToAddress(w.Address)); bal.Sign() != 0 {
		t.Fatalf("the destination received %s while payouts were paused", bal)
	}
	e.resume(scope)
	e.payAll()
	if got := e.get(w.ID); got.Status != domain.WithdrawalCompleted || e.payouts() != 1 {
		t.Fatalf("after resume: %+v, %d payouts", got, e.payouts())
	}
	if bal := e.tokenBalance(common.HexToAddress(w.Address)); bal.Int64() != 4_000_000 {
		t.Fatalf("destination holds %s, want 4 USDT exactly once", bal)
	}
}

// What was seen: an operator pause that landed while one of that operator's payouts was being
// signed (after the job read that nothing was paused, before its first broadcast) held the
// signed transaction, and with it the hot wallet's nonce: every other operator's payout on
// the chain was signed with a later nonce and waited behind it, never mined (another
// operator's 3 USDT stayed PROCESSING, its transaction pending at nonce 1 behind the held
// nonce 0) until the pause was lifted. Sending it instead would pay the paused operator's
// money. The signed payout is now cancelled at its nonce (a 0-value self-send): the other
// operator is paid, nothing of the paused operator's is, and at the cancel's depth its
// withdrawal is open again with its reservation released, paid exactly once when completed
// again after the resume. The operator's payouts not signed yet wait for the resume.
func TestOperatorPauseWhileAPayoutIsSigningHoldsNoOtherOperator(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	other := e.operator(domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-p", "4.00")
	later := e.queuedPayout(op, "user-p2", "2.00") // not signed before the pause: held until the resume
	scope := withdrawal.Pause{Scope: domain.PauseOperator, OperatorID: op.ID}
	paused := false
	// The engine's step hook runs in the job between storing the signed transaction and
	// broadcasting it: the service team's pause of this operator commits right there.
	e.engine.Crash = func(step string) {
		if step == chaintx.StepStored && !paused {
			paused = true
			e.pause(scope)
		}
	}
	if _, err := e.svc.Pay(e.ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if !paused {
		t.Fatal("the payout was never stored")
	}
	v := e.queuedPayout(other, "user-q", "3.00")
	for range 10 {
		for _, id := range []string{w.ID, later.ID, v.ID} {
			if _, err := e.svc.Pay(e.ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		e.dev.Commit()
	}
	for _, c := range []struct {
		w      domain.Withdrawal
		status domain.WithdrawalStatus
		units  int64
	}{{v, domain.WithdrawalCompleted, 3_000_000}, {w, domain.WithdrawalProcessing, 0}, {later, domain.WithdrawalProcessing, 0}} {
		if got := e.get(c.w.ID); got.Status != c.status {
			tx, _ := store.New(e.pool).ChainTxByRef(e.ctx, withdrawal.PurposePayout, "withdrawal:"+c.w.ID)
			t.Fatalf("withdrawal of %s is %s, want %s; its payout %s at nonce %d", c.w.CryptoAmount, got.Status, c.status, tx.State, tx.Nonce)
		}
		if bal := e.tokenBalance(common.HexToAddress(c.w.Address)); bal.Int64() != c.units {
			t.Fatalf("destination of %s holds %s, want %d units", c.w.CryptoAmount, bal, c.units)
		}
	}
	if got := e.get(w.ID); got.PayoutQueuedAt != nil {
		t.Fatalf("the cancelled payout's withdrawal is still paying (queued at %v)", got.PayoutQueuedAt)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout' AND starts_with(ref, $1) AND state = 'cancelled'`, "withdrawal:"+w.ID); n != 1 {
		t.Fatalf("%d cancelled payouts of the paused operator's signed withdrawal, want 1", n)
	}
	// Only the still-queued 2 USDT is reserved: the cancelled payout's 4 USDT is available again.
	if f := e.funds(op, "USDT"); f.Reserved.Int64() != 2_000_000 {
		t.Fatalf("paused operator reserves %s units, want 2000000 (the unsigned payout only)", f.Reserved)
	}
	if _, err := store.New(e.pool).ChainTxByRef(e.ctx, withdrawal.PurposePayout, "withdrawal:"+later.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a payout not signed before the pause was signed under it: %v", err)
	}
	e.resume(scope)
	e.payAll()
	e.paidOnce(later, 2_000_000)
	e.admin(w.ID, domain.WithdrawalCompleted)
	e.payAll()
	e.paidOnce(w, 4_000_000)
	e.paidOnce(v, 3_000_000)
}
