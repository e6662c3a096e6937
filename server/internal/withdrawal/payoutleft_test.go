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
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// sweepAndPay runs the withdrawals' periodic job and the payout job of each withdrawal given,
// a block at a time, until every one is completed with its payout at depth, or fails.
func (e *env) sweepAndPay(ids ...string) {
	e.t.Helper()
	for range 30 {
		if _, err := e.svc.Sweep(e.ctx); err != nil {
			e.t.Fatalf("sweep: %v", err)
		}
		left := 0
		for _, id := range ids {
			done, err := e.svc.Pay(e.ctx, id)
			if err != nil {
				e.t.Fatalf("pay %s: %v", id, err)
			}
			if !done {
				left++
			}
		}
		if left == 0 {
			return
		}
		e.dev.Commit()
	}
	e.t.Fatal("payouts still in flight after 30 blocks")
}

// completedOnce checks how withdrawal w ended: one WITHDRAW_COMPLETE, the operator's USDT
// available at available (base units) with nothing reserved, and the books holding.
func (e *env) completedOnce(op domain.Operator, w domain.Withdrawal, available int64, when string) {
	e.t.Helper()
	if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 1 {
		e.t.Fatalf("%d WITHDRAW_COMPLETE", n)
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != available || f.Reserved.Sign() != 0 {
		e.t.Fatalf("funds %s: %+v", when, f)
	}
	e.reconciled(when)
}

// reconciled checks the books hold: every line of the chain covered.
func (e *env) reconciled(when string) {
	e.t.Helper()
	lines, err := (&funds.Reconciler{Ledger: e.ledger, Clients: map[int64]*chain.Client{e.dev.ChainID(): e.client}, HotWallet: e.hot}).
		Reconcile(e.ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range lines {
		if !l.OK {
			e.t.Fatalf("reconciliation %s: %+v", when, l)
		}
	}
}

// deepReorgDropping replaces the chain from the block before the payout of withdrawal w with a
// longer branch without it (the node drops it), and checks its destination lost it.
func (e *env) deepReorgDropping(w domain.Withdrawal) {
	e.t.Helper()
	e.deepReorgFrom(e.payoutTx(w.ID).MinedBlock)
	if bal := e.tokenBalance(common.HexToAddress(w.Address)); bal.Sign() != 0 {
		e.t.Fatalf("the reorg left the destination %s", bal)
	}
}

// deepReorgFrom replaces the chain from block on with a branch longer than the confirmation
// depth, without the transactions of the blocks it replaces (the node drops them).
func (e *env) deepReorgFrom(block uint64) {
	e.t.Helper()
	parent, err := e.client.Header(e.ctx, new(big.Int).SetUint64(block-1))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.dev.Fork(parent.Hash()); err != nil {
		e.t.Fatal(err)
	}
	e.dev.Rollback()
	for range confirmations + 4 {
		e.dev.Commit()
	}
}

// What was seen: a payout COMPLETED at its depth (WITHDRAW_COMPLETE out, funds settled) whose
// block a reorg deeper than the depth took away, the node dropping it, was never sent again:
// the withdrawal stayed COMPLETED with a settlementTxHash on no chain and the destination got
// nothing, and the hot wallet's nonce the payout held was never used again on the chain, so
// every later payout of the chain (whoever's) waited behind the gap for good. The periodic job
// now finds mined payouts the chain has not got (the hot wallet's nonce is not past them) and
// sends their stored bytes again (the same nonce: paid at most once); the withdrawal stays
// COMPLETED with no second settlement or WITHDRAW_COMPLETE.
func TestPayoutLeftTheChainAfterItCompletedIsSentAgain(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	startNonce, err := e.client.Nonce(e.ctx, e.hot, false)
	if err != nil {
		t.Fatal(err)
	}
	w := e.queuedPayout(op, "user-deep", "8.00")
	e.sweepAndPay(w.ID)
	paid := e.get(w.ID)
	if paid.Status != domain.WithdrawalCompleted {
		t.Fatalf("before the reorg: %s", paid.Status)
	}
	e.deepReorgDropping(w)
	e.reconciled("after the reorg")
	// Another withdrawal queued after the reorg: its payout takes the next nonce.
	next := e.queuedPayout(op, "user-after", "3.00")
	e.sweepAndPay(w.ID, next.ID)

	e.paidOnce(w, 8_000_000)
	e.paidOnce(next, 3_000_000)
	if got := e.get(w.ID); got.SettlementTxHash != paid.SettlementTxHash {
		t.Fatalf("settlementTxHash %s, was %s", got.SettlementTxHash, paid.SettlementTxHash)
	}
	if r, err := e.client.Receipt(e.ctx, common.HexToHash(paid.SettlementTxHash)); err != nil || r.Status != 1 {
		t.Fatalf("settlement %s: %v %v", paid.SettlementTxHash, r, err)
	}
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != startNonce+2 {
		t.Fatalf("the hot wallet sent %d transactions for 2 payouts", n-startNonce)
	}
	if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 1 {
		t.Fatalf("%d WITHDRAW_COMPLETE", n)
	}
	if n := e.count(`SELECT count(*) FROM fund_entries WHERE ref = $1 AND kind = 'SETTLE'`, "withdrawal:"+w.ID); n != 1 {
		t.Fatalf("%d settlements", n)
	}
	e.reconciled("after the payouts")
}

// drainHotWallet sends the hot wallet's USDT beyond keep elsewhere (not through Coffer: the
// service team moving liquidity), mined.
func (e *env) drainHotWallet(keep int64) {
	e.t.Helper()
	extra := new(big.Int).Sub(e.tokenBalance(e.hot), big.NewInt(keep))
	nonce, err := e.client.Nonce(e.ctx, e.hot, true)
	if err != nil {
		e.t.Fatal(err)
	}
	tip, feeCap, err := e.client.Fees(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	id := big.NewInt(e.dev.ChainID())
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: id, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 100_000,
		To: &e.usdt.Address, Data: chain.ERC20Transfer(newAddress(), extra)}), types.LatestSignerForChainID(id), e.hotKey)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.client.Send(e.ctx, tx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dev.Mine(e.ctx, tx.Hash()); err != nil {
		e.t.Fatal(err)
	}
}

// What was seen: with a completed payout of 8 USDT sent again after a deep reorg dropped it
// (back in the hot wallet, about to leave it again), the hot wallet holding 10 USDT, an admin
// COMPLETED of 5 USDT more passed the hot wallet check (10 >= 5: the re-sent payout was not
// counted in flight, its withdrawal being COMPLETED) and queued a payout the hot wallet could
// not cover once the first was mined again. Payouts in flight now count a completed
// withdrawal's payout that is pending again: the COMPLETED answers 503 UNAVAILABLE naming the
// hot wallet, nothing reserved, and the first payout is paid once.
func TestPayoutSentAgainCountsAgainstTheHotWallet(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	e.drainHotWallet(10_000_000)
	w := e.queuedPayout(op, "user-deep", "8.00")
	e.sweepAndPay(w.ID)
	e.deepReorgDropping(w)
	if _, err := e.svc.Sweep(e.ctx); err != nil { // finds the payout off the chain: sent again
		t.Fatal(err)
	}
	if tx := e.payoutTx(w.ID); tx.State != domain.ChainTxPending {
		t.Fatalf("payout after the sweep: %s", tx.State)
	}
	before := e.funds(op, "USDT")
	next := e.submit(e.withdrawSession(op, "user-next", "5.00"), newAddress(), "USDT")
	e.admin(next.ID, domain.WithdrawalProcessing)
	_, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), next.ID, domain.WithdrawalCompleted, "admin:a@x", "")
	if fe := faultOf(err); fe == nil || fe.Code != fault.Unavailable {
		t.Fatalf("COMPLETED beyond the hot wallet with a payout sent again: %v", err)
	}
	if after := e.funds(op, "USDT"); after.Available.Cmp(before.Available) != 0 || after.Reserved.Cmp(before.Reserved) != 0 {
		t.Fatalf("funds moved by a refused COMPLETED: %+v, were %+v", after, before)
	}
	e.sweepAndPay(w.ID)
	e.paidOnce(w, 8_000_000)
	// The hot wallet was drained by hand: the books are the operator's own funds.
	if f := e.funds(op, "USDT"); f.Available.Int64() != 992_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after the payout was sent again: %+v", f)
	}
}

// What was seen: a completed payout sent again after a deep reorg dropped it is replaced with
// higher fees at its next advance (its first attempt is old: "stuck"), so the chain mines the
// replacement, another hash at the same nonce. The withdrawal kept the first attempt's hash as
// its settlementTxHash, a transaction on no chain. It now names the attempt the chain has, with
// an audit row saying why; still one payment, one settlement, one WITHDRAW_COMPLETE.
func TestPayoutSentAgainAsAReplacementMovesTheSettlement(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-deep", "8.00")
	e.sweepAndPay(w.ID)
	first := e.get(w.ID).SettlementTxHash
	e.deepReorgDropping(w)
	if _, err := e.svc.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.engine.StuckAfter = 0 // the first attempt is stuck at once: its second advance replaces it
	e.payOnce(w.ID)         // sends the stored bytes again
	e.payOnce(w.ID)         // replaces them (same nonce, higher fees)
	if n := len(e.payoutTx(w.ID).Attempts); n != 2 {
		t.Fatalf("%d attempts", n)
	}
	e.sweepAndPay(w.ID)
	e.paidOnce(w, 8_000_000)
	got := e.get(w.ID)
	mined := e.payoutTx(w.ID).MinedHash
	if mined == first || got.SettlementTxHash != mined {
		t.Fatalf("settlementTxHash %s; the chain has %s (first attempt %s)", got.SettlementTxHash, mined, first)
	}
	if r, err := e.client.Receipt(e.ctx, common.HexToHash(got.SettlementTxHash)); err != nil || r.Status != 1 {
		t.Fatalf("settlement %s: %v %v", got.SettlementTxHash, r, err)
	}
	if n := e.count(`SELECT count(*) FROM withdrawal_transitions WHERE withdrawal_id = $1 AND action = 'payout:mined-again'
		AND from_status = 'COMPLETED' AND to_status = 'COMPLETED' AND note LIKE '%' || $2 || '%'`, w.ID, mined); n != 1 {
		t.Fatalf("%d audit rows of the moved settlement", n)
	}
	e.completedOnce(op, w, 992_000_000, "after the replacement was mined")
}

// What was seen: a payout the service team cancelled (its 0-value cancel mined at depth, the
// withdrawal open again and its transaction retired), then a reorg deeper than the depth took
// the cancel's block away and the node dropped the cancel. The hot wallet's nonce the cancel
// held was unused on the chain again, and nothing sent the cancel again: the withdrawal,
// completed again, got a payout at the next nonce that was never mined (every later payout
// of the chain waited behind the gap), and the first payout's signed bytes, valid at that
// nonce, could still be mined by any node that kept them: paid twice. The periodic job now
// sends a cancel that left the chain again (its stored bytes, the same nonce).
func TestCancelThatLeftTheChainIsSentAgain(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	startNonce, err := e.client.Nonce(e.ctx, e.hot, false)
	if err != nil {
		t.Fatal(err)
	}
	w := e.queuedPayout(op, "user-cancel", "3.00")
	e.payOnce(w.ID)
	first := e.payoutTx(w.ID)
	if _, err := e.svc.RequestTx(e.ctx, first.ID, domain.TxCancel, opsActor, "wrong destination"); err != nil {
		t.Fatal(err)
	}
	e.payOnce(w.ID) // the cancel replaces the payout at its nonce
	e.payAll()      // the cancel is mined, then reaches its depth: the withdrawal is open again
	if got := e.get(w.ID); got.Status != domain.WithdrawalProcessing || got.PayoutQueuedAt != nil {
		t.Fatalf("after the cancel: %+v", got)
	}
	cancelled, err := e.svc.ChainTx(e.ctx, first.ID)
	if err != nil || cancelled.State != domain.ChainTxCancelled {
		t.Fatalf("cancelled payout: %+v %v", cancelled, err)
	}
	e.deepReorgFrom(cancelled.MinedBlock)
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != first.Nonce {
		t.Fatalf("hot wallet nonce %d after the reorg, the cancel's %d", n, first.Nonce)
	}
	e.admin(w.ID, domain.WithdrawalCompleted) // decided again: a new payout at the next nonce
	e.sweepAndPay(w.ID)

	e.paidOnce(w, 3_000_000)
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != startNonce+2 {
		t.Fatalf("the hot wallet sent %d transactions: a cancel and a payout", n-startNonce)
	}
	if again, err := e.svc.ChainTx(e.ctx, first.ID); err != nil || again.State != domain.ChainTxCancelled {
		t.Fatalf("the cancelled payout after the reorg: %+v %v", again, err)
	}
	e.completedOnce(op, w, 997_000_000, "after the payout")
}

// Guard: nothing tells the operator a payout completed before the payout is at the chain's
// depth, and the books hold at every step of a shallow reorg that takes the payout's block
// away (the node dropping it): mined and not at depth, off the chain, sent again, mined again,
// at depth. Only then is the withdrawal COMPLETED with its settlementTxHash, its reservation
// settled, and one WITHDRAW_COMPLETE queued.
func TestNothingSaysCompletedBeforeThePayoutIsAtDepth(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-depth", "8.00")
	notYet := func(step string) {
		t.Helper()
		got := e.get(w.ID)
		if got.Status != domain.WithdrawalProcessing || got.SettlementTxHash != "" || got.CompletedAt != nil {
			t.Fatalf("%s: %s, settlement %q", step, got.Status, got.SettlementTxHash)
		}
		if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 0 {
			t.Fatalf("%s: %d WITHDRAW_COMPLETE", step, n)
		}
		if f := e.funds(op, "USDT"); f.Reserved.Int64() != 8_000_000 || f.Available.Int64() != 992_000_000 {
			t.Fatalf("%s: funds %+v", step, f)
		}
		e.reconciled(step)
	}
	e.payOnce(w.ID)
	notYet("sent")
	e.dev.Commit()
	e.payOnce(w.ID)
	tx := e.payoutTx(w.ID)
	if tx.State != domain.ChainTxMined {
		t.Fatalf("payout %s after its block", tx.State)
	}
	notYet("mined, not at depth")
	parent, err := e.client.Header(e.ctx, new(big.Int).SetUint64(tx.MinedBlock-1))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Rollback()
	e.dev.Commit()
	e.dev.Commit() // a longer branch without the payout: its block is at the depth's height now
	notYet("off the chain")
	e.payOnce(w.ID) // finds it off the chain: reopened
	e.payOnce(w.ID) // sends its stored bytes again
	notYet("sent again")
	e.dev.Commit()
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
		t.Fatalf("mined again, not at depth: %v %v", done, err)
	}
	notYet("mined again, not at depth")
	e.payAll()
	e.paidOnce(w, 8_000_000)
	got := e.get(w.ID)
	if got.SettlementTxHash != e.payoutTx(w.ID).MinedHash || got.CompletedAt == nil {
		t.Fatalf("completed: %+v", got)
	}
	e.completedOnce(op, w, 992_000_000, "completed")
}

// A completed withdrawal's payout sent again after a deep reorg dropped it must reach the
// destination: the service team's cancel of it is refused (FAILED_PRECONDITION; the withdrawal
// was settled and told), as is marking it failed, and nothing changes; a re-send is allowed.
func TestCompletedPayoutSentAgainIsNeverCancelled(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-deep", "8.00")
	e.sweepAndPay(w.ID)
	e.deepReorgDropping(w)
	if _, err := e.svc.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	tx := e.payoutTx(w.ID)
	if tx.State != domain.ChainTxPending {
		t.Fatalf("payout after the sweep: %s", tx.State)
	}
	if _, err := e.svc.RequestTx(e.ctx, tx.ID, domain.TxCancel, opsActor, "stuck"); faultOf(err) == nil ||
		faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("cancel of a completed withdrawal's payout: %v", err)
	}
	if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "stuck"); faultOf(err) == nil || faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("fail of a completed withdrawal's payout: %v", err)
	}
	if got := e.payoutTx(w.ID); got.RequestedAction != "" || got.State != domain.ChainTxPending {
		t.Fatalf("payout after the refusals: %+v", got)
	}
	if _, err := e.svc.RequestTx(e.ctx, tx.ID, domain.TxResend, opsActor, "push it"); err != nil {
		t.Fatalf("re-send: %v", err)
	}
	e.sweepAndPay(w.ID)
	e.paidOnce(w, 8_000_000)
	e.reconciled("after the payout was sent again")
}

// payUntilReverted runs the payout job a block at a time until it reports the payout reverted.
func (e *env) payUntilReverted(id string) {
	e.t.Helper()
	for range 10 {
		_, err := e.svc.Pay(e.ctx, id)
		if errors.Is(err, withdrawal.ErrPayoutReverted) {
			return
		}
		if err != nil {
			e.t.Fatalf("pay %s: %v", id, err)
		}
		e.dev.Commit()
	}
	e.t.Fatal("the payout did not revert")
}

// What was seen: a payout that reverted (its job ends: an engineer marks it failed once the
// revert is at depth), then a reorg deeper than the depth took the revert's block away and the
// node dropped it. Nothing sent it again: marking it failed was refused for good ("its
// reverted block left the chain"), so the withdrawal stayed paying with nobody able to close
// it, and the hot wallet's nonce it held stayed unused on the chain (every later payout of the
// chain waited behind it). The periodic job's nonce check now covers a reverted payout too: it
// is sent again (its stored bytes, the same nonce), reverts again here, and once that revert
// is at depth the engineer marks it failed as usual.
func TestRevertedPayoutThatLeftTheChainIsSentAgain(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-r", "5.00")
	// Out of gas, as a token that reverts would be.
	if _, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(5_000_000)), GasLimit: 30000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID}); err != nil {
		t.Fatal(err)
	}
	e.payUntilReverted(w.ID)
	tx := e.payoutTx(w.ID)
	e.deepReorgFrom(tx.MinedBlock)
	if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "out of gas"); faultOf(err) == nil ||
		!strings.Contains(err.Error(), "left the chain") {
		t.Fatalf("fail after its block left: %v", err)
	}
	if _, err := e.svc.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.payUntilReverted(w.ID) // sent again: it reverts again
	e.dev.Commit()
	e.dev.Commit()
	if _, err := e.svc.FailPayout(e.ctx, tx.ID, opsActor, "out of gas"); err != nil {
		t.Fatalf("fail at depth: %v", err)
	}
	e.admin(w.ID, domain.WithdrawalCompleted) // decided again: a new payout at the next nonce
	e.sweepAndPay(w.ID)
	e.paidOnce(w, 5_000_000)
	if f := e.funds(op, "USDT"); f.Available.Int64() != 995_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after the payout: %+v", f)
	}
	e.reconciled("after the payout")
}

// What was seen: a payout stored at nonce N, whose nonce another transaction (not Coffer's)
// used at depth, was marked failed; its withdrawal, decided again, was paid by a new payout at
// N+1 and completed. A reorg deeper than the depth then took the foreign transaction's block
// away and the node dropped it: nonce N was free again, and nothing looked at a failed payout
// any more. The first payout's own signed bytes, valid at N, were mined (a node that kept them
// sent them), then the second payout, sent again at N+1: the destination got 6 USDT twice.
// (Without those bytes, N stayed a gap and the second payout waited behind it for good.) The
// periodic job's nonce check now covers a failed payout too: its nonce free again, it is pending
// again with a cancel requested (chaintx.NonceFreed), and its cancel, a 0-value self-send at N
// with higher fees, replaces its bytes.
func TestFailedPayoutWhoseNonceIsFreeAgainIsCancelled(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	startNonce, err := e.client.Nonce(e.ctx, e.hot, false)
	if err != nil {
		t.Fatal(err)
	}
	w := e.queuedPayout(op, "user-n", "6.00")
	stored, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(6_000_000)), GasLimit: 100000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID})
	if err != nil {
		t.Fatal(err)
	}
	tip, feeCap, err := e.client.Fees(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := big.NewInt(e.dev.ChainID())
	other, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: id, Nonce: stored.Nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: 21000, To: &e.hot, Value: new(big.Int)}), types.LatestSignerForChainID(id), e.hotKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.client.Send(e.ctx, other); err != nil {
		t.Fatal(err)
	}
	r, err := e.dev.Mine(e.ctx, other.Hash())
	if err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	e.dev.Commit()
	if got, err := e.svc.FailPayout(e.ctx, stored.ID, opsActor, "nonce taken"); err != nil || got.State != domain.ChainTxFailed {
		t.Fatalf("fail: %+v %v", got, err)
	}
	e.admin(w.ID, domain.WithdrawalCompleted) // decided again: a new payout at the next nonce
	e.sweepAndPay(w.ID)
	e.paidOnce(w, 6_000_000)

	e.deepReorgFrom(r[0].BlockNumber.Uint64()) // drops the foreign transaction and the second payout
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != stored.Nonce {
		t.Fatalf("hot wallet nonce %d after the reorg, the failed payout's %d", n, stored.Nonce)
	}
	e.reconciled("after the reorg")
	// A node that kept the failed payout's signed bytes sends them.
	var kept types.Transaction
	if err := kept.UnmarshalBinary(stored.Attempts[0].Raw); err != nil {
		t.Fatal(err)
	}
	if err := e.client.Send(e.ctx, &kept); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Sweep(e.ctx); err != nil { // its cancel is sent at its nonce
		t.Fatal(err)
	}
	if got := e.payoutTx(w.ID); got.State != domain.ChainTxPending {
		t.Fatalf("second payout after the sweep: %s", got.State)
	}
	if got, err := e.svc.ChainTx(e.ctx, stored.ID); err != nil || got.State != domain.ChainTxPending || !got.Latest().Cancel {
		t.Fatalf("the failed payout after the sweep: %+v %v", got, err)
	}
	e.sweepAndPay(w.ID)

	e.paidOnce(w, 6_000_000)
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != startNonce+2 {
		t.Fatalf("the hot wallet sent %d transactions: a cancel and a payout", n-startNonce)
	}
	if got, err := e.svc.ChainTx(e.ctx, stored.ID); err != nil || got.State != domain.ChainTxCancelled {
		t.Fatalf("the failed payout after its nonce was free again: %+v %v", got, err)
	}
	e.completedOnce(op, w, 994_000_000, "after the payout")
}

// Guard: a failed payout whose nonce is free again, pending with its cancel requested and not
// made yet, is never re-sent by the service team (the re-send would replace the cancel with the
// payout's own bytes, its withdrawal decided again): refused, the cancel stays requested; once
// the cancel attempt exists, a re-send (of the cancel) is allowed.
func TestFailedPayoutToCancelIsNeverResent(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-n", "6.00")
	stored, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(6_000_000)), GasLimit: 100000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_txs SET state = 'failed', ref = ref || ':resolved:' || id::text WHERE id = $1`,
		stored.ID); err != nil {
		t.Fatal(err)
	}
	failed, err := e.svc.ChainTx(e.ctx, stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.engine.CancelFreedNonce(e.ctx, failed.ChainTx, domain.System, "nonce free again"); err != nil {
		t.Fatal(err)
	}
	if err := e.engine.CancelFreedNonce(e.ctx, failed.ChainTx, domain.System, "again"); !errors.Is(err, chaintx.ErrRefused) {
		t.Fatalf("second reopen: %v", err)
	}
	if _, err := e.svc.RequestTx(e.ctx, stored.ID, domain.TxResend, opsActor, "push it"); faultOf(err) == nil ||
		faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("re-send before the cancel: %v", err)
	}
	got, err := e.svc.ChainTx(e.ctx, stored.ID)
	if err != nil || got.RequestedAction != domain.TxCancel || got.State != domain.ChainTxPending {
		t.Fatalf("after the refused re-send: %+v %v", got, err)
	}
	if _, err := e.svc.Sweep(e.ctx); err != nil { // sends the cancel
		t.Fatal(err)
	}
	if got, err := e.svc.ChainTx(e.ctx, stored.ID); err != nil || !got.Latest().Cancel {
		t.Fatalf("after the sweep: %+v %v", got, err)
	}
	if _, err := e.svc.RequestTx(e.ctx, stored.ID, domain.TxResend, opsActor, "push the cancel"); err != nil {
		t.Fatalf("re-send of the cancel: %v", err)
	}
}

// What was seen: reopening a payout whose block left the chain changed the row whatever its
// state now (ReopenChainTx: any state but pending), while the table was asked about the state
// the caller had read. Two workers: the periodic job read a reverted payout and found its
// receipt gone (its node behind); meanwhile the engineer, whose node had the revert at depth,
// marked it failed (the withdrawal open again, its funds released, to be decided again). The
// job's reopen then put the FAILED payout back to pending, no cancel requested, and the
// periodic job sent its own bytes again: paid twice if they succeed this time, the withdrawal
// paid by a new payout. A reopen now moves only the row still in the state (and mined hash)
// the caller read; otherwise it is refused (chaintx.ErrRefused) and nothing changes.
func TestReopenOfAStaleReadIsRefused(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w := e.queuedPayout(op, "user-r", "5.00")
	if _, err := e.engine.Submit(e.ctx, chaintx.Request{ChainID: e.dev.ChainID(), From: e.hot, To: e.usdt.Address,
		Data: chain.ERC20Transfer(common.HexToAddress(w.Address), big.NewInt(5_000_000)), GasLimit: 30000,
		Purpose: withdrawal.PurposePayout, Ref: "withdrawal:" + w.ID}); err != nil {
		t.Fatal(err)
	}
	e.payUntilReverted(w.ID)
	stale := e.payoutTx(w.ID) // what the periodic job read
	e.dev.Commit()
	e.dev.Commit()
	if _, err := e.svc.FailPayout(e.ctx, stale.ID, opsActor, "out of gas"); err != nil { // the engineer, meanwhile
		t.Fatalf("fail at depth: %v", err)
	}
	if err := e.engine.Reopen(e.ctx, stale); !errors.Is(err, chaintx.ErrRefused) {
		t.Fatalf("reopen of a payout failed since it was read: %v", err)
	}
	if got, err := e.svc.ChainTx(e.ctx, stale.ID); err != nil || got.State != domain.ChainTxFailed || got.MinedHash != stale.MinedHash {
		t.Fatalf("the failed payout after a stale reopen: %+v %v", got, err)
	}
	// A mined transaction read before it was reopened and mined again as another attempt: refused too.
	e.admin(w.ID, domain.WithdrawalCompleted)
	e.sweepAndPay(w.ID)
	mined := e.payoutTx(w.ID)
	moved := mined
	moved.MinedHash = stale.MinedHash
	if err := e.engine.Reopen(e.ctx, moved); !errors.Is(err, chaintx.ErrRefused) {
		t.Fatalf("reopen naming another mined attempt: %v", err)
	}
	if got := e.payoutTx(w.ID); got.State != domain.ChainTxMined {
		t.Fatalf("mined payout after a stale reopen: %s", got.State)
	}
	e.paidOnce(w, 5_000_000)
}
