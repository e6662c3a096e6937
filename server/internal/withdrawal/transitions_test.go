package withdrawal

import (
	"errors"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/fault"
)

var actions = []Action{AdminProcess, AdminComplete, AdminReject, OperatorApprove, OperatorReject, AdminApprove, AdminDeny,
	PayoutConfirmed, PayoutStopped, Supersede, CancelSession, Expire}

// TestSpecTransitions: every row of the spec's States and transitions table that starts from a
// record, including the refused ones. (The rows without a record are creations, not
// transitions.) "refused" names words the refusal must contain.
func TestSpecTransitions(t *testing.T) {
	cases := []struct {
		row     string
		from    State
		action  Action
		to      Status
		payout  bool
		same    bool
		refused string
	}{
		{"PENDING + admin PROCESSING", open(Pending), AdminProcess, Processing, false, false, ""},
		{"PROCESSING + admin COMPLETED: payout, then COMPLETED", open(Processing), AdminComplete, Processing, true, false, ""},
		{"... the payout confirmed", paying(Processing), PayoutConfirmed, Completed, false, false, ""},
		{"PROCESSING + admin REJECTED", open(Processing), AdminReject, Rejected, false, false, ""},
		{"PENDING + admin COMPLETED: direct jump refused", open(Pending), AdminComplete, "", false, false, "PROCESSING before COMPLETED"},
		{"AWAITING_APPROVAL + APPROVE within the caps: settle, then COMPLETED", open(AwaitingApproval), OperatorApprove, AwaitingApproval, true, false, ""},
		{"... the settlement confirmed", paying(AwaitingApproval), PayoutConfirmed, Completed, false, false, ""},
		{"AWAITING_APPROVAL + REJECT", open(AwaitingApproval), OperatorReject, Rejected, false, false, ""},
		{"COMPLETED + APPROVE again: current status, no payout", open(Completed), OperatorApprove, Completed, false, true, ""},
		{"COMPLETED + REJECT: current status", open(Completed), OperatorReject, Completed, false, true, ""},
		{"REJECTED + REJECT again", open(Rejected), OperatorReject, Rejected, false, true, ""},
		{"REJECTED + APPROVE: current status, no payout", open(Rejected), OperatorApprove, Rejected, false, true, ""},
		{"superseded while PENDING", open(Pending), Supersede, Cancelled, false, false, ""},
		{"superseded while AWAITING_APPROVAL", open(AwaitingApproval), Supersede, Cancelled, false, false, ""},
		{"session cancelled while PENDING", open(Pending), CancelSession, Cancelled, false, false, ""},
		{"session cancelled while AWAITING_APPROVAL", open(AwaitingApproval), CancelSession, Cancelled, false, false, ""},
		{"unactioned PENDING past the TTL", open(Pending), Expire, Expired, false, false, ""},
		{"unactioned AWAITING_APPROVAL past the TTL", open(AwaitingApproval), Expire, Expired, false, false, ""},
		// Decisions of this service where the spec says "not shown".
		{"panel override: approve", open(AwaitingApproval), AdminApprove, AwaitingApproval, true, false, ""},
		{"panel override: reject", open(AwaitingApproval), AdminDeny, Rejected, false, false, ""},
		{"PENDING + admin REJECTED: two-step", open(Pending), AdminReject, "", false, false, "PROCESSING before REJECTED"},
		{"a taken (PROCESSING) withdrawal is not cancelled", open(Processing), Supersede, "", false, false, "not allowed"},
		{"a taken (PROCESSING) withdrawal does not expire", open(Processing), Expire, "", false, false, "not allowed"},
		{"mode A withdrawals are not decided by the operator", open(Pending), OperatorApprove, "", false, false, "mode A"},
		{"mode B withdrawals are not processed", open(AwaitingApproval), AdminProcess, "", false, false, "APPROVE or REJECT"},
		{"a completed withdrawal is never reopened", open(Completed), AdminProcess, "", false, false, "already COMPLETED"},
		{"a completed withdrawal is not cancelled", open(Completed), Supersede, "", false, false, "already COMPLETED"},
		{"APPROVE on an EXPIRED withdrawal: held EXPIRED, no payout", open(Expired), OperatorApprove, Expired, false, true, ""},
		{"REJECT on an EXPIRED withdrawal: its status", open(Expired), OperatorReject, Expired, false, true, ""},
		{"APPROVE on a CANCELLED withdrawal: its status, no payout", open(Cancelled), OperatorApprove, Cancelled, false, true, ""},
		{"panel override on an EXPIRED withdrawal: held EXPIRED", open(Expired), AdminApprove, Expired, false, true, ""},
		{"an expired withdrawal is never processed", open(Expired), AdminProcess, "", false, false, "already EXPIRED"},
		{"a stopped payout (operator inactive) reopens a PROCESSING withdrawal", paying(Processing), PayoutStopped, Processing, false, false, ""},
		{"... and an AWAITING_APPROVAL one", paying(AwaitingApproval), PayoutStopped, AwaitingApproval, false, false, ""},
		{"only a payout in flight is stopped", open(Processing), PayoutStopped, "", false, false, "not allowed"},
		{"a cancelled withdrawal cannot be paid", open(Cancelled), PayoutConfirmed, "", false, false, "already CANCELLED"},
		{"PROCESSING twice", open(Processing), AdminProcess, "", false, false, "already PROCESSING"},
		{"admin COMPLETED retried once completed: current status, no payout", open(Completed), AdminComplete, Completed, false, true, ""},
		{"admin REJECTED retried once rejected: current status", open(Rejected), AdminReject, Rejected, false, true, ""},
		{"admin REJECTED on a completed withdrawal refused", open(Completed), AdminReject, "", false, false, "already COMPLETED"},
		{"admin COMPLETED on a rejected withdrawal refused", open(Rejected), AdminComplete, "", false, false, "already REJECTED"},
		// While the payout is in flight (paying): repeats pay nothing, nothing else changes it.
		{"admin COMPLETED again while paying: nothing more", paying(Processing), AdminComplete, Processing, false, true, ""},
		{"APPROVE again while settling: nothing more", paying(AwaitingApproval), OperatorApprove, AwaitingApproval, false, true, ""},
		{"panel approve while settling: nothing more", paying(AwaitingApproval), AdminApprove, AwaitingApproval, false, true, ""},
		{"REJECT while settling refused", paying(AwaitingApproval), OperatorReject, "", false, false, "on its way"},
		{"admin REJECTED while paying refused", paying(Processing), AdminReject, "", false, false, "on its way"},
		{"a settling withdrawal does not expire", paying(AwaitingApproval), Expire, "", false, false, "on its way"},
		{"a settling withdrawal is not superseded", paying(AwaitingApproval), Supersede, "", false, false, "on its way"},
		{"a confirmation without a queued payout is refused", open(Processing), PayoutConfirmed, "", false, false, "no payout"},
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
		if wantHeld := c.from.Status == Expired && (c.action == OperatorApprove || c.action == AdminApprove); (o.Held == HeldExpired) != wantHeld {
			t.Errorf("%s: held %q", c.row, o.Held)
		}
	}
}

// TestTableInvariants checks the whole table, every status against every action.
func TestTableInvariants(t *testing.T) {
	var states []State
	for _, s := range Statuses {
		states = append(states, open(s), paying(s))
	}
	for _, from := range states {
		for _, a := range actions {
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
			case from.Paying && !o.Unchanged && a != PayoutConfirmed && a != PayoutStopped:
				t.Errorf("%v + %s changes a withdrawal whose payout is in flight", from, a)
			case a == PayoutStopped && (!from.Paying || o.To != from.Status):
				t.Errorf("%v + %s: only a payout in flight is stopped, back to its open status", from, a)
			case !from.Paying && a == PayoutConfirmed:
				t.Errorf("%v + %s completes a withdrawal that was never paid", from, a)
			case o.Unchanged && (o.Payout || o.To != from.Status):
				t.Errorf("%s + %s: a repeated decision must change nothing, got %+v", from, a, o)
			case o.Payout && o.To.Final():
				t.Errorf("%s + %s queues a payout and ends in %s: COMPLETED must wait for the payout", from, a, o.To)
			case o.To == Completed && a != PayoutConfirmed && !o.Unchanged:
				t.Errorf("%s + %s reaches COMPLETED without a confirmed payout", from, a)
			}
		}
	}
	// Every pair in the table or the refusals uses known statuses and actions.
	for k := range refusals {
		if _, ok := transitions[k]; ok {
			t.Errorf("%s + %s is both allowed and refused", k.from, k.action)
		}
	}
}
