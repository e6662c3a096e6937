package withdrawal_test

import (
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

func (e *env) funds(op domain.Operator, currency string) domain.Funds {
	e.t.Helper()
	f, err := store.New(e.pool).GetFunds(e.ctx, op.ID, e.dev.ChainID(), currency)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *env) payouts() int {
	e.t.Helper()
	return e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout'`)
}

// What was seen: an operator with no deposits at all paid out 900 USDT through its own
// operator-scoped admin. Every payout path now draws on the operator's own funds: short, admin
// COMPLETED answers 409 CONFLICT naming the shortfall, and APPROVE and the panel override are
// held TEMPORARILY_UNAVAILABLE; nothing changes.
func TestPayoutsDrawOnlyOnTheOperatorsOwnFunds(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	broke := e.unfundedOperator(domain.OperatorSettings{})
	w := e.submit(e.withdrawSession(broke, "user-1", "900.00"), newAddress(), "USDT")
	e.admin(w.ID, domain.WithdrawalProcessing)
	_, err := e.svc.AdminStatus(e.ctx, domain.Operators(broke.ID), w.ID, domain.WithdrawalCompleted, "admin:scoped", "pay")
	fe := faultOf(err)
	if fe.Code != fault.Conflict || !strings.Contains(fe.Message, "needs 900.000000 USDT (short by 900.000000 USDT)") {
		t.Fatalf("admin COMPLETED without funds: %v", err)
	}
	if got := e.get(w.ID); got.Status != "PROCESSING" || got.PayoutQueuedAt != nil || e.payouts() != 0 {
		t.Fatalf("a refused COMPLETED changed the withdrawal: %+v", got)
	}
	// Funded by a service-team adjustment, it pays, and the funds settle.
	e.fund(broke, "USDT", "1000")
	if _, err := e.svc.AdminStatus(e.ctx, domain.Operators(broke.ID), w.ID, domain.WithdrawalCompleted, "admin:scoped", "pay"); err != nil {
		t.Fatal(err)
	}
	if f := e.funds(broke, "USDT"); f.Available.Int64() != 100_000_000 || f.Reserved.Int64() != 900_000_000 {
		t.Fatalf("while paying: %+v", f)
	}
	e.payAll()
	if f := e.funds(broke, "USDT"); f.Available.Int64() != 100_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("after the payout: %+v", f)
	}

	// Mode B: APPROVE and the panel override beyond the funds are held TEMPORARILY_UNAVAILABLE.
	modeB := e.unfundedOperator(modeB(domain.OperatorSettings{}))
	e.fund(modeB, "USDT", "5")
	tooBig := e.submit(e.withdrawSession(modeB, "user-2", "6.00"), newAddress(), "USDT")
	for _, approve := range []withdrawal.Action{withdrawal.OperatorApprove, withdrawal.AdminApprove} {
		d, err := e.svc.Decide(e.ctx, domain.AllOperators(), tooBig.ID, approve, "operator:x", "")
		if err != nil || d.Held != withdrawal.TemporarilyUnavailable || d.Withdrawal.Status != "AWAITING_APPROVAL" {
			t.Fatalf("APPROVE beyond the funds (%s): %+v %v", approve, d, err)
		}
	}
	if got := e.get(tooBig.ID); got.PayoutQueuedAt != nil || got.HeldReason != "TEMPORARILY_UNAVAILABLE" {
		t.Fatalf("held withdrawal: %+v", got)
	}
	if f := e.funds(modeB, "USDT"); f.Available.Int64() != 5_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("a held APPROVE moved funds: %+v", f)
	}
	// A sub-operator draws on its own funds, not its parent's.
	child := e.unfundedOperator(domain.OperatorSettings{ParentID: &broke.ID})
	cw := e.submit(e.withdrawSession(child, "kid", "1.00"), newAddress(), "USDT")
	e.admin(cw.ID, domain.WithdrawalProcessing)
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), cw.ID, domain.WithdrawalCompleted, "admin:a", ""); faultOf(err).Code != fault.Conflict {
		t.Fatalf("a sub-operator paid from its parent's funds: %v", err)
	}
}

// 20 concurrent payouts of 10 for an operator holding 95: exactly 9 are paid, on every path.
func TestConcurrentPayoutsReserveFundsAtomically(t *testing.T) { //nolint:tparallel // its subtests share one env (one chain, one hot wallet) and pay it out in turn; the test runs beside others
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	for _, mode := range []string{"APPROVE", "admin COMPLETED"} {
		t.Run(mode, func(t *testing.T) {
			var op domain.Operator
			if mode == "APPROVE" {
				op = e.unfundedOperator(modeB(domain.OperatorSettings{}))
			} else {
				op = e.unfundedOperator(domain.OperatorSettings{})
			}
			e.fund(op, "USDT", "95")
			var ids []string
			for i := range 20 {
				w := e.submit(e.withdrawSession(op, fmt.Sprintf("u%d", i), "10.00"), newAddress(), "USDT")
				if mode != "APPROVE" {
					e.admin(w.ID, domain.WithdrawalProcessing)
				}
				ids = append(ids, w.ID)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			queued, refused := 0, 0
			for _, id := range ids {
				wg.Go(func() {
					var ok bool
					if mode == "APPROVE" {
						d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), id, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
						if err != nil {
							t.Errorf("decide: %v", err)
							return
						}
						ok = d.Held == ""
						if !ok && d.Held != withdrawal.TemporarilyUnavailable {
							t.Errorf("held %s", d.Held)
						}
					} else {
						_, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), id, domain.WithdrawalCompleted, "admin:a", "")
						ok = err == nil
						if err != nil && faultOf(err).Code != fault.Conflict {
							t.Errorf("admin COMPLETED: %v", err)
						}
					}
					mu.Lock()
					defer mu.Unlock()
					if ok {
						queued++
					} else {
						refused++
					}
				})
			}
			wg.Wait()
			if queued != 9 || refused != 11 {
				t.Fatalf("%d queued, %d refused; want 9 and 11", queued, refused)
			}
			e.payAll()
			var sum int64
			if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(crypto_amount), 0)::bigint FROM withdrawals WHERE status = 'COMPLETED' AND operator_id = $1`,
				op.ID).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if f := e.funds(op, "USDT"); sum != 90_000_000 || f.Available.Int64() != 5_000_000 || f.Reserved.Sign() != 0 {
				t.Fatalf("paid %d units; funds %+v", sum, f)
			}
		})
	}
}

// What was seen: after an operator was made inactive, its admin still moved a withdrawal
// PROCESSING → COMPLETED and it was paid. An inactive operator is never paid: COMPLETED is
// refused (409), APPROVE and the override are held OPERATOR_INACTIVE, and a payout queued
// before the deactivation but not signed yet is stopped, its funds released. A payout already
// signed (it may be on the network) is finished.
func TestInactiveOperatorsAreNeverPaid(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	inactive, active := false, true
	op := e.operator(domain.OperatorSettings{})
	w := e.submit(e.withdrawSession(op, "user-1", "10.00"), newAddress(), "USDT")
	e.admin(w.ID, domain.WithdrawalProcessing)
	e.update(op, domain.OperatorSettings{Active: &inactive})
	_, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a", "")
	if fe := faultOf(err); fe.Code != fault.Conflict || !strings.Contains(fe.Message, "inactive") {
		t.Fatalf("COMPLETED for an inactive operator: %v", err)
	}
	if got := e.get(w.ID); got.PayoutQueuedAt != nil || e.payouts() != 0 {
		t.Fatal("a refused COMPLETED queued a payout")
	}

	// Queued while active, deactivated before the payout job ran: stopped, funds released.
	e.update(op, domain.OperatorSettings{Active: &active})
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a", ""); err != nil {
		t.Fatal(err)
	}
	e.update(op, domain.OperatorSettings{Active: &inactive})
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || !done {
		t.Fatalf("pay: %v %v", done, err)
	}
	got := e.get(w.ID)
	if got.Status != "PROCESSING" || got.PayoutQueuedAt != nil || got.HeldReason != "OPERATOR_INACTIVE" || e.payouts() != 0 {
		t.Fatalf("stopped payout: %+v, %d payouts", got, e.payouts())
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after the stop: %+v", f)
	}
	// Reactivated, the admin completes it again and it is paid once.
	e.update(op, domain.OperatorSettings{Active: &active})
	e.admin(w.ID, domain.WithdrawalCompleted)
	// Signed, then deactivated: it is finished (its transaction may already be on the network).
	if _, err := e.svc.Pay(e.ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	e.update(op, domain.OperatorSettings{Active: &inactive})
	e.payAll()
	if got = e.get(w.ID); got.Status != "COMPLETED" || e.payouts() != 1 {
		t.Fatalf("a signed payout must finish: %+v, %d payouts", got, e.payouts())
	}
	if bal := e.tokenBalance(common.HexToAddress(got.Address)); bal.Cmp(big.NewInt(10_000_000)) != 0 {
		t.Fatalf("destination holds %v", bal)
	}

	// Mode B: APPROVE and the panel override are held OPERATOR_INACTIVE.
	b := e.operator(modeB(domain.OperatorSettings{}))
	bw := e.submit(e.withdrawSession(b, "user-2", "3.00"), newAddress(), "USDT")
	e.update(b, domain.OperatorSettings{Active: &inactive})
	for _, approve := range []withdrawal.Action{withdrawal.OperatorApprove, withdrawal.AdminApprove} {
		if d, err := e.svc.Decide(e.ctx, domain.AllOperators(), bw.ID, approve, "x", ""); err != nil || d.Held != withdrawal.OperatorInactive {
			t.Fatalf("APPROVE for an inactive operator (%s): %+v %v", approve, d, err)
		}
	}
}

// Approvals race payout completions of the same operator: an APPROVE locks the operator's row
// and then its funds row; a completing payout holds the funds row and inserts its fund entry
// (which references the operator). Both must go through: no deadlock, every payout settled.
// (Found by the payout benchmark: with the operator locked FOR UPDATE, 40P01 deadlocks.)
func TestApprovalsRacePayoutCompletions(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, modeB(domain.OperatorSettings{}))
	var ids []string
	for i := range 80 {
		ids = append(ids, e.submit(e.withdrawSession(op, fmt.Sprintf("r%d", i), "2.00"), newAddress(), "USDT").ID)
	}
	work := make(chan string)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range work {
				if d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), id, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), ""); err != nil || d.Held != "" {
					t.Errorf("APPROVE %s: %+v %v", id, d.Held, err)
				}
			}
		})
	}
	// Meanwhile payouts are sent, mined and completed (each completion settles the funds).
	go func() {
		defer close(done)
		for {
			select {
			case <-e.ctx.Done():
				return
			default:
			}
			paying, _ := store.New(e.pool).PayingWithdrawals(e.ctx)
			for _, id := range paying {
				if _, err := e.svc.Pay(e.ctx, id); err != nil {
					t.Errorf("pay %s: %v", id, err)
				}
			}
			e.dev.Commit()
			// A failed read (the test's context ending) is polled again, as a count short of done.
			var n int
			if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM withdrawals WHERE status = 'COMPLETED'`).Scan(&n); err == nil && n == len(ids) {
				return
			}
		}
	}()
	for _, id := range ids {
		work <- id
		time.Sleep(25 * time.Millisecond) // approvals keep arriving while earlier payouts complete
	}
	close(work)
	wg.Wait()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("payouts did not complete")
	}
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000-80*2_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("funds after 80 payouts: %+v", f)
	}
}

// What was seen: a session cancel racing an approval answered 500. Whichever comes first
// wins; the other gets its current status, never an error, and the money stays right.
func TestSessionCancelRacesApproval(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, modeB(domain.OperatorSettings{}))
	for i := range 30 {
		sess := e.withdrawSession(op, fmt.Sprintf("race-%d", i), "1.00")
		w := e.submit(sess, newAddress(), "USDT")
		var wg sync.WaitGroup
		var cancelErr, approveErr error
		var d withdrawal.Decided
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := e.sessions.Cancel(e.ctx, sess.ID); err != nil {
				cancelErr = err
				return
			}
			cancelErr = e.svc.SessionCancelled(e.ctx, sess.ID)
		}()
		go func() {
			defer wg.Done()
			d, approveErr = e.svc.Decide(e.ctx, domain.Operators(op.ID), w.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
		}()
		wg.Wait()
		if cancelErr != nil || approveErr != nil {
			t.Fatalf("round %d: cancel %v, approve %v", i, cancelErr, approveErr)
		}
		got := e.get(w.ID)
		switch {
		case got.Status == "CANCELLED" && got.PayoutQueuedAt == nil && d.Withdrawal.PayoutQueuedAt == nil:
		case got.PayoutQueuedAt != nil && got.Status == "AWAITING_APPROVAL":
		default:
			t.Fatalf("round %d: withdrawal %s (payout queued %v), decision %+v", i, got.Status, got.PayoutQueuedAt, d.Withdrawal.Status)
		}
	}
	e.payAll()
	var paid, reserved int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(crypto_amount), 0)::bigint FROM withdrawals WHERE status = 'COMPLETED'`).Scan(&paid); err != nil {
		t.Fatal(err)
	}
	f := e.funds(op, "USDT")
	reserved = f.Reserved.Int64()
	if f.Available.Int64() != 1000_000_000-paid || reserved != 0 {
		t.Fatalf("paid %d; funds %+v", paid, f)
	}
}

// The service team's debits race an operator's payouts on the same funds: 10 debits of 10
// USDT and 10 admin COMPLETED of 10 USDT, at once, against 100 available. Exactly 10 succeed
// (the others are refused CONFLICT, changing nothing), the funds never go below zero, what was
// paid is what was reserved, and another operator's funds in the same hot wallet are untouched.
func TestAdjustmentsRacePayoutsWithoutOverdrawing(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	op := e.unfundedOperator(domain.OperatorSettings{})
	other := e.operator(domain.OperatorSettings{})
	e.fund(op, "USDT", "100")
	var ids []string
	for i := range 10 {
		w := e.submit(e.withdrawSession(op, fmt.Sprintf("u%d", i), "10.00"), newAddress(), "USDT")
		e.admin(w.ID, domain.WithdrawalProcessing)
		ids = append(ids, w.ID)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	queued, debited := 0, 0
	count := func(n *int, err error, what string) {
		if err != nil && faultOf(err).Code != fault.Conflict {
			t.Errorf("%s: %v, want success or CONFLICT", what, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			*n++
		}
	}
	for _, id := range ids {
		wg.Go(func() {
			_, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), id, domain.WithdrawalCompleted, "admin:a", "")
			count(&queued, err, "admin COMPLETED")
		})
		wg.Go(func() {
			_, err := e.ledger.Adjust(e.ctx, funds.Adjustment{OperatorID: op.ID, ChainID: e.dev.ChainID(), Currency: "USDT",
				Amount: "-10", Note: "chargeback", Actor: "service-team:test"})
			count(&debited, err, "adjust")
		})
	}
	wg.Wait()
	if queued+debited != 10 {
		t.Fatalf("%d payouts queued and %d debits made against 100 USDT; want 10 in all", queued, debited)
	}
	if f := e.funds(op, "USDT"); f.Available.Sign() != 0 || f.Reserved.Int64() != int64(queued)*10_000_000 {
		t.Fatalf("after the race: %+v with %d queued", f, queued)
	}
	e.payAll()
	var paid int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(crypto_amount), 0)::bigint FROM withdrawals WHERE status = 'COMPLETED'
		AND operator_id = $1`, op.ID).Scan(&paid); err != nil {
		t.Fatal(err)
	}
	if f := e.funds(op, "USDT"); paid != int64(queued)*10_000_000 || f.Available.Sign() != 0 || f.Reserved.Sign() != 0 {
		t.Fatalf("paid %d units for %d queued; funds %+v", paid, queued, f)
	}
	if f := e.funds(other, "USDT"); f.Available.Int64() != 1_000_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("the other operator's funds: %+v", f)
	}
}
