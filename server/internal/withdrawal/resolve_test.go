package withdrawal_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

const opsActor = domain.Actor("service-team:test")

// payoutTx is the live payout transaction of a withdrawal.
func (e *env) payoutTx(id string) domain.ChainTx {
	e.t.Helper()
	t, err := store.New(e.pool).ChainTxByRef(e.ctx, withdrawal.PurposePayout, "withdrawal:"+id)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// payOnce runs the payout job once (no block mined).
func (e *env) payOnce(id string) {
	e.t.Helper()
	if _, err := e.svc.Pay(e.ctx, id); err != nil {
		e.t.Fatalf("pay %s: %v", id, err)
	}
}

// paidOnce checks a withdrawal completed, its destination holds exactly its amount, and one
// of its payout transactions is mined.
func (e *env) paidOnce(w domain.Withdrawal, units int64) {
	e.t.Helper()
	if got := e.get(w.ID); got.Status != domain.WithdrawalCompleted {
		e.t.Fatalf("withdrawal %s is %s", w.ID, got.Status)
	}
	if bal := e.tokenBalance(common.HexToAddress(w.Address)); bal.Int64() != units {
		e.t.Fatalf("destination holds %s, want %d exactly once", bal, units)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout' AND starts_with(ref, $1) AND state = 'mined'`,
		"withdrawal:"+w.ID); n != 1 {
		e.t.Fatalf("%d mined payouts", n)
	}
}

// TestRevertedPayoutMarkedFailedIsPaidOnceAfterADecision: a payout that reverted is marked
// failed once its revert is at depth; that releases the reservation exactly once and opens the
// withdrawal again; completed again, it is paid exactly once.
func TestRevertedPayoutMarkedFailedIsPaidOnceAfterADecision(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-r", "5.00")
	// The payout transaction runs out of gas (as a token that reverts would): stored under the
	// payout's ref before the job runs, the job sends it.
	if _, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(5_000_000)), GasLimit: 30000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID}); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 5 {
		if _, err = e.svc.Pay(e.ctx, w.ID); err != nil {
			break
		}
		e.dev.Commit()
	}
	if !errors.Is(err, withdrawal.ErrPayoutReverted) {
		t.Fatalf("payout: %v, want reverted", err)
	}
	tx := e.payoutTx(w.ID)
	// Not at depth yet: refused, nothing changes.
	if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "out of gas"); faultOf(err).Code != fault.FailedPrecondition ||
		!strings.Contains(err.Error(), "confirmation depth") {
		t.Fatalf("fail before depth: %v", err)
	}
	e.dev.Commit()
	e.dev.Commit()
	got, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "out of gas")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != domain.ChainTxFailed || len(got.Actions) != 1 || got.Actions[0].Action != domain.TxFail ||
		got.Actions[0].Actor != opsActor || !strings.Contains(got.Actions[0].Reason, "out of gas") || got.WithdrawalID != w.ID {
		t.Fatalf("failed tx: %+v", got)
	}
	if ww := e.get(w.ID); ww.Status != domain.WithdrawalProcessing || ww.PayoutQueuedAt != nil {
		t.Fatalf("withdrawal after fail: %+v", ww)
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after fail: %+v", f)
	}
	trail, err := store.New(e.pool).WithdrawalTransitions(e.ctx, w.ID)
	if err != nil || trail[len(trail)-1].Action != string(withdrawal.PayoutAbandoned) || trail[len(trail)-1].Actor != opsActor {
		t.Fatalf("withdrawal trail: %+v %v", trail, err)
	}
	// Again: refused, the funds are released once.
	if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "again"); faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("fail twice: %v", err)
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after a second fail: %+v", f)
	}
	// Decided again: a new payout transaction, paid once.
	e.admin(w.ID, domain.WithdrawalCompleted)
	e.payAll()
	e.paidOnce(w, 5_000_000)
	if f := e.funds(op, "USDT"); f.Available.Int64() != 995_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after the payout: %+v", f)
	}
}

// TestStuckPayoutResentIsPaidOnce: a payout broadcast but not mined is re-sent at a higher
// fee (same nonce, same payload); both hashes are followed and it is paid exactly once.
func TestStuckPayoutResentIsPaidOnce(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-s", "4.00")
	e.payOnce(w.ID) // stored and broadcast; no block yet
	first := e.payoutTx(w.ID)
	got, err := e.svc.RequestTx(e.ctx, first.ID, domain.TxResend, opsActor, "stuck behind a fee spike")
	if err != nil || got.RequestedAction != domain.TxResend || len(got.Actions) != 1 {
		t.Fatalf("resend: %+v %v", got, err)
	}
	e.payOnce(w.ID) // the worker replaces it now
	tx := e.payoutTx(w.ID)
	if len(tx.Attempts) != 2 || tx.RequestedAction != "" || tx.Attempts[1].Cancel || tx.Attempts[1].FeeCap.Cmp(tx.Attempts[0].FeeCap) <= 0 ||
		tx.Attempts[1].BroadcastAt == nil {
		t.Fatalf("after resend: %+v", tx)
	}
	e.payAll()
	e.paidOnce(w, 4_000_000)
	if tx = e.payoutTx(w.ID); tx.MinedHash != tx.Attempts[0].Hash && tx.MinedHash != tx.Attempts[1].Hash {
		t.Fatalf("mined %s is none of the attempts", tx.MinedHash)
	}
}

// TestCancelledPayoutOpensTheWithdrawalAgain: a pending payout cancelled by a 0-value
// self-send at its nonce pays nothing; once the cancel is at depth the withdrawal (mode B) can
// be decided again, its funds released; approved again it is paid exactly once.
func TestCancelledPayoutOpensTheWithdrawalAgain(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, modeB(domain.OperatorSettings{}))
	w := e.submit(e.withdrawSession(op, "user-c", "3.00"), newAddress(), "USDT")
	if _, err := e.svc.Decide(e.ctx, domain.AllOperators(), w.ID, withdrawal.OperatorApprove, "operator:x", ""); err != nil {
		t.Fatal(err)
	}
	e.payOnce(w.ID)
	first := e.payoutTx(w.ID)
	if _, err := e.svc.RequestTx(e.ctx, first.ID, domain.TxCancel, opsActor, "wrong destination"); err != nil {
		t.Fatal(err)
	}
	e.payOnce(w.ID)
	if tx := e.payoutTx(w.ID); len(tx.Attempts) != 2 || !tx.Attempts[1].Cancel {
		t.Fatalf("after cancel: %+v", tx)
	}
	e.payAll() // the cancel is mined, then reaches its depth
	if got := e.get(w.ID); got.Status != domain.WithdrawalAwaitingApproval || got.PayoutQueuedAt != nil {
		t.Fatalf("after the cancel: %+v", got)
	}
	if bal := e.tokenBalance(common.HexToAddress(w.Address)); bal.Sign() != 0 {
		t.Fatalf("a cancelled payout paid %s", bal)
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after the cancel: %+v", f)
	}
	old, err := e.svc.ChainTx(e.ctx, first.ID)
	if err != nil || old.State != domain.ChainTxCancelled || old.WithdrawalID != w.ID || len(old.Actions) != 1 {
		t.Fatalf("cancelled tx: %+v %v", old, err)
	}
	if _, err := e.svc.Decide(e.ctx, domain.AllOperators(), w.ID, withdrawal.OperatorApprove, "operator:x", ""); err != nil {
		t.Fatal(err)
	}
	e.payAll()
	e.paidOnce(w, 3_000_000)
}

// TestResolveBadInput: an unknown transaction, a mined one, one that could still be mined, and
// a missing reason get their documented errors and change nothing.
func TestResolveBadInput(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	paid := e.queuedPayout(op, "user-p", "1.00")
	e.payAll()
	mined := e.payoutTx(paid.ID)
	flying := e.queuedPayout(op, "user-f", "2.00")
	e.payOnce(flying.ID)
	pending := e.payoutTx(flying.ID)
	// A payout stored on a chain since taken out of the configuration: its state cannot be
	// read, so it is not marked failed (before, INTERNAL).
	elsewhere := e.queuedPayout(op, "user-e", "3.00")
	e.payOnce(elsewhere.ID)
	unconfigured := e.payoutTx(elsewhere.ID)
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_txs SET chain_id = 424242 WHERE id = $1`, unconfigured.ID); err != nil {
		t.Fatal(err)
	}

	resend := func(id int64, reason string) error {
		_, err := e.svc.RequestTx(e.ctx, id, domain.TxResend, opsActor, reason)
		return err
	}
	cancel := func(id int64, reason string) error {
		_, err := e.svc.RequestTx(e.ctx, id, domain.TxCancel, opsActor, reason)
		return err
	}
	fail := func(id int64, reason string) error {
		_, err := e.svc.FailPayout(e.ctx, id, opsActor, reason)
		return err
	}
	cases := []struct {
		name   string
		do     func(int64, string) error
		id     int64
		reason string
		code   fault.Code
	}{
		{"resend unknown", resend, 987654, "x", fault.NotFound},
		{"cancel unknown", cancel, 987654, "x", fault.NotFound},
		{"fail unknown", fail, 987654, "x", fault.NotFound},
		{"resend mined", resend, mined.ID, "x", fault.FailedPrecondition},
		{"cancel mined", cancel, mined.ID, "x", fault.FailedPrecondition},
		{"fail mined", fail, mined.ID, "x", fault.FailedPrecondition},
		{"fail a payout that could still be mined", fail, pending.ID, "x", fault.FailedPrecondition},
		{"fail a payout on a chain no longer configured", fail, unconfigured.ID, "x", fault.FailedPrecondition},
		{"resend without a reason", resend, pending.ID, " ", fault.InvalidArgument},
		{"fail without a reason", fail, pending.ID, "", fault.InvalidArgument},
	}
	for _, c := range cases {
		if err := c.do(c.id, c.reason); faultOf(err).Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if n := e.count(`SELECT count(*) FROM chain_tx_actions`); n != 0 {
		t.Fatalf("bad input left %d audit rows", n)
	}
	if tx := e.payoutTx(flying.ID); tx.State != domain.ChainTxPending || tx.RequestedAction != "" || len(tx.Attempts) != 1 {
		t.Fatalf("bad input changed the pending payout: %+v", tx)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_txs SET chain_id = $2 WHERE id = $1`, unconfigured.ID, mined.ChainID); err != nil {
		t.Fatal(err)
	}
	e.payAll()
	e.paidOnce(flying, 2_000_000)
	e.paidOnce(paid, 1_000_000)
	e.paidOnce(elsewhere, 3_000_000)
}

// TestPayoutWhoseNonceWasTakenIsMarkedFailed: a payout stored but never broadcast may still be
// sent (a crash between a broadcast and its record leaves no trace), so it is not marked
// failed while its nonce is free; once another transaction used the nonce at depth it can
// never be mined: marked failed, its funds released, the withdrawal decided again and paid once.
func TestPayoutWhoseNonceWasTakenIsMarkedFailed(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-n", "6.00")
	stored, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(6_000_000)), GasLimit: 100000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.FailPayout(e.ctx, stored.ID, opsActor, "never sent"); faultOf(err).Code != fault.FailedPrecondition ||
		!strings.Contains(err.Error(), "not used at the confirmation depth") {
		t.Fatalf("fail while the nonce is free: %v", err)
	}
	// Another transaction (not Coffer's) takes the nonce.
	tip, feeCap, err := e.client.Fees(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(e.dev.ChainID()), Nonce: stored.Nonce, GasTipCap: tip,
		GasFeeCap: feeCap, Gas: 21000, To: &e.hot, Value: new(big.Int)}), types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), e.hotKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.Send(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	if _, err := e.svc.FailPayout(e.ctx, stored.ID, opsActor, "nonce taken"); faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("fail before the other transaction is at depth: %v", err)
	}
	e.dev.Commit()
	e.dev.Commit()
	got, err := e.svc.FailPayout(e.ctx, stored.ID, opsActor, "nonce taken")
	if err != nil || got.State != domain.ChainTxFailed {
		t.Fatalf("fail: %+v %v", got, err)
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after fail: %+v", f)
	}
	e.admin(w.ID, domain.WithdrawalCompleted)
	e.payAll()
	e.paidOnce(w, 6_000_000)
}

// The service team's cancel or re-send races the original payout being mined: requested while
// the payout is pending in the books, carried out after its first attempt was mined. The
// payout is paid once and completes as usual (the cancel is never sent: its nonce is used);
// the withdrawal is not opened again, nothing is released, the request is cleared, and
// marking it failed is refused.
func TestActionRacingTheMinedPayoutPaysOnce(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	for _, action := range []domain.TxAction{domain.TxCancel, domain.TxResend} {
		w := e.queuedPayout(op, "user-"+string(action), "2.00")
		e.payOnce(w.ID) // stored and broadcast
		tx := e.payoutTx(w.ID)
		if _, err := e.svc.RequestTx(e.ctx, tx.ID, action, opsActor, "racing the block"); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		e.dev.Commit() // the original is mined before the worker carries the request out
		e.payAll()
		e.paidOnce(w, 2_000_000)
		got := e.payoutTx(w.ID)
		if got.State != domain.ChainTxMined || got.MinedHash != tx.Attempts[0].Hash || len(got.Attempts) != 1 {
			t.Fatalf("%s: %s mined %s with %d attempts, want the original alone", action, got.State, got.MinedHash, len(got.Attempts))
		}
		// Mined, it carries no request still to carry out (the ops view showed one).
		if got.RequestedAction != "" {
			t.Fatalf("%s: the mined payout still shows a requested %s", action, got.RequestedAction)
		}
		if got := e.get(w.ID); got.SettlementTxHash != tx.Attempts[0].Hash {
			t.Fatalf("%s: settlement %s, want %s", action, got.SettlementTxHash, tx.Attempts[0].Hash)
		}
		if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "late"); faultOf(err).Code != fault.FailedPrecondition {
			t.Fatalf("%s: fail after it was mined: %v", action, err)
		}
		if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 1 {
			t.Fatalf("%s: %d WITHDRAW_COMPLETE", action, n)
		}
	}
	// Two payouts of 2 settled, nothing released or reserved twice.
	if f := e.funds(op, "USDT"); f.Available.Int64() != 996_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds: %+v", f)
	}
}
