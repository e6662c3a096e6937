package withdrawal_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestSyncRequestTimeIsTheWithdrawalsRequestedAt: in mode A the WITHDRAW_REQUEST is sent before
// the withdrawal is recorded; the record's requestedAt (GET /withdrawals, its from/to range) is
// the time the request carried, however long the operator took to answer, so the webhook, the
// event feed and the reconciliation API agree on it.
func TestSyncRequestTimeIsTheWithdrawalsRequestedAt(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	const answerTime = 1100 * time.Millisecond // the operator looks the user up before it approves
	e.recv.answer.Store(func(w http.ResponseWriter, _ url.Values) {
		time.Sleep(answerTime)
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, `{"error":0,"description":"ok"}`)
	})
	w := e.submit(e.withdrawSession(op, "slow-answer", "12.00"), newAddress(), "USDT")
	if w.Status != domain.WithdrawalPending || w.ApprovalMode != domain.ApprovalSync {
		t.Fatalf("mode A submission: %+v", w)
	}
	var sent string
	for _, b := range e.recv.received() {
		if b.Get("event") == "WITHDRAW_REQUEST" && b.Get("withdrawRequestId") == w.ID {
			sent = b.Get("requestedAt")
		}
	}
	requested, err := time.Parse(time.RFC3339Nano, sent)
	if err != nil {
		t.Fatalf("WITHDRAW_REQUEST requestedAt %q: %v", sent, err)
	}
	for name, got := range map[string]time.Time{"submit": w.CreatedAt, "stored": e.get(w.ID).CreatedAt} {
		if !got.Truncate(time.Millisecond).Equal(requested) {
			t.Errorf("%s: requestedAt %s, the WITHDRAW_REQUEST said %s", name, got.UTC().Format(time.RFC3339Nano), sent)
		}
	}
	if ev := withdrawal.RequestEvent(e.get(w.ID), ""); !ev.GetRequestedAt().AsTime().Truncate(time.Millisecond).Equal(requested) {
		t.Errorf("the request event of the stored withdrawal says %s, the one sent %s", ev.GetRequestedAt().AsTime(), sent)
	}
}
