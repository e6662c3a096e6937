package withdrawal_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	return testdb.Count(e.ctx, e.t, e.pool, sql, args...)
}

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, sql, args...); err != nil {
		e.t.Fatal(err)
	}
}

// TestSessionPaysOnce: once a session's withdrawal is PROCESSING, being paid or COMPLETED,
// another submission on the session is CONFLICT naming that withdrawal, and nothing reaches
// the operator or the database. Unactioned ones are superseded as before (PENDING here,
// AWAITING_APPROVAL in TestSupersedeAndSessionCancel); a REJECTED one does not block.
func TestSessionPaysOnce(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	cases := []struct {
		name string
		// act moves the session's withdrawal to the state under test.
		act     func(w domain.Withdrawal)
		status  domain.WithdrawalStatus
		refused string // "" when a new submission is accepted
	}{
		{"PENDING is superseded", func(domain.Withdrawal) {}, "CANCELLED", ""},
		{"PROCESSING", func(w domain.Withdrawal) { e.admin(w.ID, domain.WithdrawalProcessing) }, "PROCESSING", "being processed"},
		{"paying", func(w domain.Withdrawal) {
			e.admin(w.ID, domain.WithdrawalProcessing)
			// As an admin COMPLETED does once its checks pass (the payout itself is not this test's).
			e.exec(`UPDATE withdrawals SET payout_queued_at = now() WHERE id = $1`, w.ID)
		}, "PROCESSING", "being paid out"},
		{"COMPLETED", func(w domain.Withdrawal) {
			e.exec(`UPDATE withdrawals SET status = 'COMPLETED', completed_at = now(), payout_queued_at = now(),
				settlement_tx_hash = '0x' || repeat('ab', 32) WHERE id = $1`, w.ID)
		}, "COMPLETED", "completed"},
		{"REJECTED does not block", func(w domain.Withdrawal) {
			e.admin(w.ID, domain.WithdrawalProcessing)
			e.admin(w.ID, domain.WithdrawalRejected)
		}, "REJECTED", ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sess := e.withdrawSession(op, "user-"+string(rune('a'+i)), "10.00")
			first := e.submit(sess, newAddress(), "USDT")
			c.act(first)
			requests, rows := len(e.recv.received()), e.count(`SELECT count(*) FROM withdrawals`)
			second, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: newAddress().Hex(), Currency: "USDT", ChainID: e.dev.ChainID()})
			if got := e.get(first.ID).Status; got != c.status {
				t.Fatalf("the first withdrawal is %s, want %s", got, c.status)
			}
			if c.refused == "" {
				if err != nil || second.Status != "PENDING" {
					t.Fatalf("second submission: %+v %v", second, err)
				}
				return
			}
			fe := faultOf(err)
			if fe.Code != fault.Conflict || !strings.Contains(fe.Message, c.refused) ||
				fe.Details["withdrawRequestId"] != first.ID || fe.Details["withdrawStatus"] != c.status {
				t.Fatalf("second submission: %v %v; want CONFLICT %q", err, fe.Details, c.refused)
			}
			if n := len(e.recv.received()); n != requests {
				t.Fatalf("%d WITHDRAW_REQUESTs sent for a refused submission", n-requests)
			}
			if n := e.count(`SELECT count(*) FROM withdrawals`); n != rows {
				t.Fatalf("a refused submission wrote %d withdrawals", n-rows)
			}
		})
	}
}

// TestAdminActsWhileTheOperatorIsAsked: an admin takes the session's PENDING withdrawal
// (PROCESSING) while the operator is answering a newer submission's WITHDRAW_REQUEST: the
// check under the session's lock refuses the newer one (CONFLICT), nothing is recorded, and
// the admin's withdrawal is untouched.
func TestAdminActsWhileTheOperatorIsAsked(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	sess := e.withdrawSession(op, "user-1", "10.00")
	first := e.submit(sess, newAddress(), "USDT")
	e.recv.answer.Store(func(w http.ResponseWriter, _ url.Values) {
		e.admin(first.ID, domain.WithdrawalProcessing)
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, `{"error":0}`)
	})
	_, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: newAddress().Hex(), Currency: "USDT", ChainID: e.dev.ChainID()})
	if fe := faultOf(err); fe.Code != fault.Conflict || fe.Details["withdrawRequestId"] != first.ID {
		t.Fatalf("submission during the admin's action: %v", err)
	}
	if got := e.get(first.ID); got.Status != "PROCESSING" {
		t.Fatalf("the admin's withdrawal is %s", got.Status)
	}
	if n := e.count(`SELECT count(*) FROM withdrawals WHERE session_id = $1`, sess.ID); n != 1 {
		t.Fatalf("%d withdrawals in the session", n)
	}
}

// TestSubmissionsAreRateLimited: 40 concurrent submissions on one mode-A session send at most
// SubmitLimit WITHDRAW_REQUESTs, one at a time; the rest are RATE_LIMITED with a Retry-After,
// and the session ends with one PENDING withdrawal (each accepted one superseded the last).
func TestSubmissionsAreRateLimited(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	e.recv.answer.Store(func(w http.ResponseWriter, _ url.Values) {
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, `{"error":0}`)
	})
	sess := e.withdrawSession(op, "user-1", "10.00")
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: newAddress().Hex(), Currency: "USDT", ChainID: e.dev.ChainID()})
		})
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		// A sliding window of SubmitLimit frees its next place at most a window and a
		// SubmitLimit-th of one after the hits that fill it.
		longest := int((withdrawal.SubmitWindow + withdrawal.SubmitWindow/withdrawal.SubmitLimit).Seconds())
		if fe := faultOf(err); fe.Code != fault.RateLimited || fe.RetryAfter < 1 || fe.RetryAfter > longest {
			t.Errorf("refusal %v (Retry-After %d), want RATE_LIMITED", err, fe.RetryAfter)
		}
	}
	sent := len(e.recv.received())
	if sent > withdrawal.SubmitLimit || accepted > sent || accepted < 1 || maxInFlight != 1 {
		t.Fatalf("%d WITHDRAW_REQUESTs (at most %d in flight), %d accepted; want 1..%d, one at a time", sent, maxInFlight,
			accepted, withdrawal.SubmitLimit)
	}
	if n := e.count(`SELECT count(*) FROM withdrawals WHERE session_id = $1 AND status = 'PENDING'`, sess.ID); n != 1 {
		t.Fatalf("%d PENDING withdrawals in the session", n)
	}
	// The limit is per session: another session of the same user submits at once.
	e.submit(e.withdrawSession(op, "user-1", "10.00"), newAddress(), "USDT")
}

// What was seen: in mode A a submission refused by the session's lease (another one's
// WITHDRAW_REQUEST in flight) had already opened its off-ramp order, which the provider kept
// open (the OffRamp interface has no cancel), and had spent one of the session's SubmitLimit
// places: three refused while the first was in flight left the user 1 of the 4 accepted
// submissions the limit promises. The lease is now taken first: a refusal opens nothing and
// counts nothing.
func TestSubmissionRefusedByTheLeaseOpensAndCountsNothing(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	sess := e.withdrawSession(op, "user-1", "10.00")
	// Buffered, and the answer released on any exit: a failing test must not hang the receiver.
	asked, answer := make(chan struct{}, 8), make(chan struct{})
	release := sync.OnceFunc(func() { close(answer) })
	defer release()
	e.recv.answer.Store(func(w http.ResponseWriter, _ url.Values) {
		asked <- struct{}{}
		<-answer
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, `{"error":0}`)
	})
	submission := func(typ string) withdrawal.Submission {
		return withdrawal.Submission{Address: newAddress().Hex(), Currency: "USDT", ChainID: e.dev.ChainID(), Type: typ}
	}
	first := make(chan error, 1)
	go func() {
		_, err := e.svc.Submit(e.ctx, sess, submission(withdrawal.OffRampType))
		first <- err
	}()
	<-asked // the first submission's WITHDRAW_REQUEST is in flight: it holds the lease
	opened := e.offramp.OrdersOpened()
	for _, typ := range []string{withdrawal.OffRampType, withdrawal.DirectTransfer, withdrawal.OffRampType} {
		_, err := e.svc.Submit(e.ctx, sess, submission(typ))
		if fe := faultOf(err); fe.Code != fault.RateLimited || fe.RetryAfter < 1 {
			t.Fatalf("%s submission while another is in flight: %v (Retry-After %d), want RATE_LIMITED", typ, err, fe.RetryAfter)
		}
	}
	if n := e.offramp.OrdersOpened() - opened; n != 0 {
		t.Errorf("%d off-ramp orders opened by submissions the lease refused", n)
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("the first submission: %v", err)
	}
	e.recv.reply(`{"error":0}`)
	for i := 2; i <= withdrawal.SubmitLimit; i++ { // the refused ones took no place in the window
		if _, err := e.svc.Submit(e.ctx, sess, submission(withdrawal.DirectTransfer)); err != nil {
			t.Fatalf("submission %d of %d in the minute: %v", i, withdrawal.SubmitLimit, err)
		}
	}
}
