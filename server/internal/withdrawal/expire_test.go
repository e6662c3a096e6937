package withdrawal_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// What was left: the expiry job took any refusal of the transition table for "decided
// meanwhile" and logged it at INFO, so a withdrawal refused for another reason would stay open
// past its TTL with no louder signal. The job now re-reads the withdrawal: one acted on since
// it was listed is skipped quietly (INFO); one still unactioned is logged at ERROR and counted
// in coffer_withdrawals_not_closed_total. Either way nothing changes and the run goes on.
// (No state the job lists is refused by today's table for Expire or CancelSession, so the
// second case asks for a change the table refuses on a PENDING withdrawal.)
func TestRefusedCloseIsLoudUnlessDecidedMeanwhile(t *testing.T) { //nolint:tparallel // its subtests share one env and its log, so they run in order; the test runs beside others
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	var logs bytes.Buffer
	e.svc.SetLog(slog.New(slog.NewTextHandler(&logs, nil)))
	for i, tc := range []struct {
		name   string
		act    func(w domain.Withdrawal) // what happened after the job listed it
		action withdrawal.Action
		want   domain.WithdrawalStatus
		level  string // of the refusal's log line
		counts bool   // in coffer_withdrawals_not_closed_total
	}{
		{"taken by an admin meanwhile", func(w domain.Withdrawal) { e.admin(w.ID, domain.WithdrawalProcessing) },
			withdrawal.Expire, domain.WithdrawalProcessing, "INFO", false},
		{"rejected meanwhile", func(w domain.Withdrawal) {
			e.admin(w.ID, domain.WithdrawalProcessing)
			e.admin(w.ID, domain.WithdrawalRejected)
		}, withdrawal.CancelSession, domain.WithdrawalRejected, "INFO", false},
		{"refused while nobody acted on it", func(domain.Withdrawal) {},
			withdrawal.AdminReject, domain.WithdrawalPending, "ERROR", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.submit(e.withdrawSession(op, "user-"+string(rune('a'+i)), "10.00"), newAddress(), "USDT")
			tc.act(w)
			logs.Reset()
			counter := metrics.WithdrawalsNotClosed.WithLabelValues(string(tc.action))
			before := testutil.ToFloat64(counter)
			closed, err := e.svc.CloseDue(e.ctx, w.ID, tc.action, "test")
			if closed || err != nil {
				t.Fatalf("close: %v %v; want refused, the run going on", closed, err)
			}
			if got := e.get(w.ID).Status; got != tc.want {
				t.Fatalf("the withdrawal is %s, want %s", got, tc.want)
			}
			if line := lineOf(logs.String(), w.ID); !strings.Contains(line, "level="+tc.level) {
				t.Errorf("logged %q, want level %s", line, tc.level)
			}
			if counted := testutil.ToFloat64(counter) - before; counted != map[bool]float64{true: 1}[tc.counts] {
				t.Errorf("coffer_withdrawals_not_closed_total grew by %v", counted)
			}
		})
	}
}

// lineOf is the log line naming id ("" when none).
func lineOf(logs, id string) string {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, id) {
			return line
		}
	}
	return ""
}
