package withdrawal

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestSpecTransitions: every row of the spec's States and transitions table that starts from a
// record, including the refused ones. (The rows without a record are creations, not
// transitions.) "refused" names words the refusal must contain.
func TestSpecTransitions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		row     string
		from    State
		action  Action
		to      domain.WithdrawalStatus
		payout  bool
		same    bool
		refused string
	}{
		{"PENDING + admin PROCESSING", open(domain.WithdrawalPending), AdminProcess, domain.WithdrawalProcessing, false, false, ""},
		{"PROCESSING + admin COMPLETED: payout, then COMPLETED", open(domain.WithdrawalProcessing), AdminComplete, domain.WithdrawalProcessing, true, false, ""},
		{"... the payout confirmed", paying(domain.WithdrawalProcessing), PayoutConfirmed, domain.WithdrawalCompleted, false, false, ""},
		{"PROCESSING + admin REJECTED", open(domain.WithdrawalProcessing), AdminReject, domain.WithdrawalRejected, false, false, ""},
		{"PENDING + admin COMPLETED: direct jump refused", open(domain.WithdrawalPending), AdminComplete, "", false, false, "PROCESSING before COMPLETED"},
		{"AWAITING_APPROVAL + APPROVE within the caps: settle, then COMPLETED", open(domain.WithdrawalAwaitingApproval), OperatorApprove, domain.WithdrawalAwaitingApproval, true, false, ""},
		{"... the settlement confirmed", paying(domain.WithdrawalAwaitingApproval), PayoutConfirmed, domain.WithdrawalCompleted, false, false, ""},
		{"AWAITING_APPROVAL + REJECT", open(domain.WithdrawalAwaitingApproval), OperatorReject, domain.WithdrawalRejected, false, false, ""},
		{"COMPLETED + APPROVE again: current status, no payout", open(domain.WithdrawalCompleted), OperatorApprove, domain.WithdrawalCompleted, false, true, ""},
		{"COMPLETED + REJECT: current status", open(domain.WithdrawalCompleted), OperatorReject, domain.WithdrawalCompleted, false, true, ""},
		{"REJECTED + REJECT again", open(domain.WithdrawalRejected), OperatorReject, domain.WithdrawalRejected, false, true, ""},
		{"REJECTED + APPROVE: current status, no payout", open(domain.WithdrawalRejected), OperatorApprove, domain.WithdrawalRejected, false, true, ""},
		{"superseded while PENDING", open(domain.WithdrawalPending), Supersede, domain.WithdrawalCancelled, false, false, ""},
		{"superseded while AWAITING_APPROVAL", open(domain.WithdrawalAwaitingApproval), Supersede, domain.WithdrawalCancelled, false, false, ""},
		{"session cancelled while PENDING", open(domain.WithdrawalPending), CancelSession, domain.WithdrawalCancelled, false, false, ""},
		{"session cancelled while AWAITING_APPROVAL", open(domain.WithdrawalAwaitingApproval), CancelSession, domain.WithdrawalCancelled, false, false, ""},
		{"unactioned PENDING past the TTL", open(domain.WithdrawalPending), Expire, domain.WithdrawalExpired, false, false, ""},
		{"unactioned AWAITING_APPROVAL past the TTL", open(domain.WithdrawalAwaitingApproval), Expire, domain.WithdrawalExpired, false, false, ""},
		// Decisions of this service where the spec says "not shown".
		{"panel override: approve", open(domain.WithdrawalAwaitingApproval), AdminApprove, domain.WithdrawalAwaitingApproval, true, false, ""},
		{"panel override: reject", open(domain.WithdrawalAwaitingApproval), AdminDeny, domain.WithdrawalRejected, false, false, ""},
		{"PENDING + admin REJECTED: two-step", open(domain.WithdrawalPending), AdminReject, "", false, false, "PROCESSING before REJECTED"},
		{"a taken (PROCESSING) withdrawal is not cancelled", open(domain.WithdrawalProcessing), Supersede, "", false, false, "not allowed"},
		{"a taken (PROCESSING) withdrawal does not expire", open(domain.WithdrawalProcessing), Expire, "", false, false, "not allowed"},
		{"mode A withdrawals are not decided by the operator", open(domain.WithdrawalPending), OperatorApprove, "", false, false, "mode A"},
		{"mode B withdrawals are not processed", open(domain.WithdrawalAwaitingApproval), AdminProcess, "", false, false, "APPROVE or REJECT"},
		{"a completed withdrawal is never reopened", open(domain.WithdrawalCompleted), AdminProcess, "", false, false, "already COMPLETED"},
		{"a completed withdrawal is not cancelled", open(domain.WithdrawalCompleted), Supersede, "", false, false, "already COMPLETED"},
		{"APPROVE on an EXPIRED withdrawal: held EXPIRED, no payout", open(domain.WithdrawalExpired), OperatorApprove, domain.WithdrawalExpired, false, true, ""},
		{"REJECT on an EXPIRED withdrawal: its status", open(domain.WithdrawalExpired), OperatorReject, domain.WithdrawalExpired, false, true, ""},
		{"APPROVE on a CANCELLED withdrawal: its status, no payout", open(domain.WithdrawalCancelled), OperatorApprove, domain.WithdrawalCancelled, false, true, ""},
		{"panel override on an EXPIRED withdrawal: held EXPIRED", open(domain.WithdrawalExpired), AdminApprove, domain.WithdrawalExpired, false, true, ""},
		{"an expired withdrawal is never processed", open(domain.WithdrawalExpired), AdminProcess, "", false, false, "already EXPIRED"},
		{"a stopped payout (operator inactive) reopens a PROCESSING withdrawal", paying(domain.WithdrawalProcessing), PayoutStopped, domain.WithdrawalProcessing, false, false, ""},
		{"... and an AWAITING_APPROVAL one", paying(domain.WithdrawalAwaitingApproval), PayoutStopped, domain.WithdrawalAwaitingApproval, false, false, ""},
		{"only a payout in flight is stopped", open(domain.WithdrawalProcessing), PayoutStopped, "", false, false, "not allowed"},
		{"an abandoned payout (failed or cancelled transaction) reopens a PROCESSING withdrawal", paying(domain.WithdrawalProcessing), PayoutAbandoned, domain.WithdrawalProcessing, false, false, ""},
		{"... and an AWAITING_APPROVAL one, to be decided again", paying(domain.WithdrawalAwaitingApproval), PayoutAbandoned, domain.WithdrawalAwaitingApproval, false, false, ""},
		{"a completed withdrawal's payout is never abandoned", open(domain.WithdrawalCompleted), PayoutAbandoned, "", false, false, "already COMPLETED"},
		{"a cancelled withdrawal cannot be paid", open(domain.WithdrawalCancelled), PayoutConfirmed, "", false, false, "already CANCELLED"},
		{"PROCESSING twice", open(domain.WithdrawalProcessing), AdminProcess, "", false, false, "already PROCESSING"},
		{"admin COMPLETED retried once completed: current status, no payout", open(domain.WithdrawalCompleted), AdminComplete, domain.WithdrawalCompleted, false, true, ""},
		{"admin REJECTED retried once rejected: current status", open(domain.WithdrawalRejected), AdminReject, domain.WithdrawalRejected, false, true, ""},
		{"admin REJECTED on a completed withdrawal refused", open(domain.WithdrawalCompleted), AdminReject, "", false, false, "already COMPLETED"},
		{"admin COMPLETED on a rejected withdrawal refused", open(domain.WithdrawalRejected), AdminComplete, "", false, false, "already REJECTED"},
		// While the payout is in flight (paying): repeats pay nothing, nothing else changes it.
		{"admin COMPLETED again while paying: nothing more", paying(domain.WithdrawalProcessing), AdminComplete, domain.WithdrawalProcessing, false, true, ""},
		{"APPROVE again while settling: nothing more", paying(domain.WithdrawalAwaitingApproval), OperatorApprove, domain.WithdrawalAwaitingApproval, false, true, ""},
		{"panel approve while settling: nothing more", paying(domain.WithdrawalAwaitingApproval), AdminApprove, domain.WithdrawalAwaitingApproval, false, true, ""},
		{"REJECT while settling refused", paying(domain.WithdrawalAwaitingApproval), OperatorReject, "", false, false, "on its way"},
		{"admin REJECTED while paying refused", paying(domain.WithdrawalProcessing), AdminReject, "", false, false, "on its way"},
		{"a settling withdrawal does not expire", paying(domain.WithdrawalAwaitingApproval), Expire, "", false, false, "on its way"},
		{"a settling withdrawal is not superseded", paying(domain.WithdrawalAwaitingApproval), Supersede, "", false, false, "on its way"},
		{"a confirmation without a queued payout is refused", open(domain.WithdrawalProcessing), PayoutConfirmed, "", false, false, "no payout"},
	}
	for _, c := range cases {
		o, err := Next(c.from, c.action)
		if c.refused != "" {
			var fe *fault.Error
			if !errors.As(err, &fe) || fe.Code != fault.FailedPrecondition || !strings.Contains(fe.Message, c.refused) {
				t.Errorf("%s: %+v, %v; want FAILED_PRECONDITION mentioning %q", c.row, o, err, c.refused)
			}
			continue
		}
		if err != nil || o.To != c.to || o.Payout != c.payout || o.Unchanged != c.same {
			t.Errorf("%s: %+v, %v; want to %s payout=%v unchanged=%v", c.row, o, err, c.to, c.payout, c.same)
		}
		if wantHeld := c.from.Status == domain.WithdrawalExpired && (c.action == OperatorApprove || c.action == AdminApprove); (o.Held == HeldExpired) != wantHeld {
			t.Errorf("%s: held %q", c.row, o.Held)
		}
	}
}

// states is every state the table looks at: each status, open and paying.
func states() []State {
	var out []State
	for _, s := range domain.WithdrawalStatuses() {
		out = append(out, open(s), paying(s))
	}
	return out
}

// TestTableInvariants checks the whole table, every status against every action.
func TestTableInvariants(t *testing.T) {
	t.Parallel()
	for _, from := range states() {
		for _, a := range Actions() {
			o, err := Next(from, a)
			if err != nil {
				if o != (Outcome{}) {
					t.Errorf("%s + %s refused but returned %+v", from, a, o)
				}
				continue
			}
			switch {
			case from.Status.Final() && !o.Unchanged:
				t.Errorf("%s + %s changes a final status to %s", from, a, o.To)
			case from.Paying && o.Payout:
				t.Errorf("%v + %s queues a second payout", from, a)
			case from.Paying && !o.Unchanged && a != PayoutConfirmed && a != PayoutStopped && a != PayoutAbandoned:
				t.Errorf("%v + %s changes a withdrawal whose payout is in flight", from, a)
			case (a == PayoutStopped || a == PayoutAbandoned) && (!from.Paying || o.To != from.Status):
				t.Errorf("%v + %s: only a payout in flight is stopped, back to its open status", from, a)
			case !from.Paying && a == PayoutConfirmed:
				t.Errorf("%v + %s completes a withdrawal that was never paid", from, a)
			case o.Unchanged && (o.Payout || o.To != from.Status):
				t.Errorf("%s + %s: a repeated decision must change nothing, got %+v", from, a, o)
			case o.Payout && o.To.Final():
				t.Errorf("%s + %s queues a payout and ends in %s: COMPLETED must wait for the payout", from, a, o.To)
			case o.To == domain.WithdrawalCompleted && a != PayoutConfirmed && !o.Unchanged:
				t.Errorf("%s + %s reaches COMPLETED without a confirmed payout", from, a)
			}
		}
	}
	// Every pair in the table or the refusals uses known statuses and actions.
	for from, row := range refusals() {
		for a := range row {
			if _, ok := table().Lookup(from, a); ok {
				t.Errorf("%s + %s is both allowed and refused", from, a)
			}
		}
	}
}

// TestAllowed checks Allowed against the whole table: an action is allowed exactly when Next
// takes it and it changes something, and a withdrawal whose payout is queued allows nothing
// but the payout's own end (the panel offers no COMPLETED or REJECTED then).
func TestAllowed(t *testing.T) {
	t.Parallel()
	for from, a := range table().Pairs() {
		if !slices.Contains(states(), from) || !slices.Contains(Actions(), a) {
			t.Errorf("%s + %s is in the table but not in the states or Actions", from, a)
		}
	}
	for _, from := range states() {
		allowed := Allowed(from)
		for _, a := range Actions() {
			o, err := Next(from, a)
			if want := err == nil && !o.Unchanged; slices.Contains(allowed, a) != want {
				t.Errorf("%s: %s allowed = %v; Next says %+v, %v", from, a, !want, o, err)
			}
		}
		if from.Status.Final() && len(allowed) != 0 {
			t.Errorf("%s (final) allows %v", from, allowed)
		}
	}
	cases := []struct {
		from State
		want []Action
	}{
		{open(domain.WithdrawalPending), []Action{AdminProcess, Supersede, CancelSession, Expire}},
		{open(domain.WithdrawalProcessing), []Action{AdminComplete, AdminReject}},
		{paying(domain.WithdrawalProcessing), []Action{PayoutConfirmed, PayoutStopped, PayoutAbandoned}},
		{open(domain.WithdrawalAwaitingApproval), []Action{OperatorApprove, OperatorReject, AdminApprove, AdminDeny, Supersede, CancelSession, Expire}},
		{paying(domain.WithdrawalAwaitingApproval), []Action{PayoutConfirmed, PayoutStopped, PayoutAbandoned}},
		{open(domain.WithdrawalCompleted), nil},
		{open(domain.WithdrawalExpired), nil},
	}
	for _, c := range cases {
		if got := Allowed(c.from); !slices.Equal(got, c.want) {
			t.Errorf("Allowed(%s) = %v; want %v", c.from, got, c.want)
		}
	}
}
