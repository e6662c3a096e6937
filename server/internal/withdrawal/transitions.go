// Package withdrawal is the withdrawal lifecycle. This file is its one transition table: every
// status change of a withdrawal, whoever asks for it, goes through Next, and the store applies
// it atomically (the row changes only if it is still in the status Next was asked about) with
// an audit row naming the actor and the note.
package withdrawal

import (
	"slices"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine"
)

// Action is what asks for a status change.
type Action string

// Actions. Creation (mode A: PENDING after the operator's error 0; mode B: AWAITING_APPROVAL)
// is not a transition: there is no record before it.
const (
	// AdminProcess, AdminComplete and AdminReject are the admin two-step (PATCH
	// /admin/withdrawals/:id/status), mode A.
	AdminProcess  Action = "admin:PROCESSING"
	AdminComplete Action = "admin:COMPLETED"
	AdminReject   Action = "admin:REJECTED"
	// OperatorApprove and OperatorReject are the operator's decision (POST
	// /withdraw/:id/decision), mode B.
	OperatorApprove Action = "operator:APPROVE"
	OperatorReject  Action = "operator:REJECT"
	// AdminApprove and AdminDeny are the panel's override of a mode-B withdrawal: the same
	// effects as the operator's decision.
	AdminApprove Action = "admin:APPROVE"
	AdminDeny    Action = "admin:REJECT"
	// PayoutConfirmed: the payout of an approved or admin-completed withdrawal reached its
	// confirmations.
	PayoutConfirmed Action = "payout:confirmed"
	// PayoutStopped: the payout was stopped before its transaction was signed (the operator
	// was made inactive): the withdrawal is open again, its funds released.
	PayoutStopped Action = "payout:stopped"
	// PayoutAbandoned: the payout's transaction can never pay (the service team marked it
	// failed, or its cancel was mined at depth): the withdrawal is open again, its funds
	// released, to be decided again (a new payout transaction) or rejected.
	PayoutAbandoned Action = "payout:abandoned"
	// Supersede and CancelSession: a newer submission in the same session, or the session
	// cancelled.
	Supersede     Action = "user:superseded"
	CancelSession Action = "user:session-cancelled"
	// Expire: unactioned past the 24-hour TTL (the periodic expiry job).
	Expire Action = "system:expire"
)

// Actions lists every action, in the order Allowed reports them.
// It is a new slice each call: a caller may not change the set.
func Actions() []Action {
	return []Action{AdminProcess, AdminComplete, AdminReject, OperatorApprove, OperatorReject, AdminApprove, AdminDeny,
		PayoutConfirmed, PayoutStopped, PayoutAbandoned, Supersede, CancelSession, Expire}
}

// Outcome is what an allowed action does.
type Outcome struct {
	// To is the status after the action. For the actions that pay (AdminComplete,
	// OperatorApprove, AdminApprove) it is the status the withdrawal keeps while its payout is
	// in flight; PayoutConfirmed then moves it to COMPLETED.
	To domain.WithdrawalStatus
	// Payout: the action queues the on-chain payout (at most one per withdrawal, ever).
	Payout bool
	// Unchanged: the action repeats a decision already taken; it answers the current status
	// and changes nothing (no payout, no webhook).
	Unchanged bool
	// Held is the spec's heldReason an unchanged APPROVE answers with ("" for none).
	Held HeldReason
}

// State is what the table looks at: the status, and whether the withdrawal's payout was
// queued (an admin COMPLETED or an APPROVE that passed its checks) and has not confirmed yet.
// A paying withdrawal keeps its status (PROCESSING or AWAITING_APPROVAL) until the payout
// confirms, and nothing but that confirmation may change it: it can no longer be rejected,
// cancelled or expired, and asking for the payout again pays nothing.
type State struct {
	Status domain.WithdrawalStatus
	Paying bool
}

func (s State) String() string {
	if s.Paying {
		return string(s.Status) + " (paying)"
	}
	return string(s.Status)
}

func open(s domain.WithdrawalStatus) State   { return State{Status: s} }
func paying(s domain.WithdrawalStatus) State { return State{Status: s, Paying: true} }

// table is the transition table, by state. A (state, action) pair that is not in it is
// refused with the reason in refusals, or a generic one (refuse).
//
// CANCELLED and EXPIRED come only from the statuses nobody has acted on yet (Supersede,
// CancelSession, Expire). Once an admin took a withdrawal (PROCESSING), only the admin
// finishes it. A repeated decision returns the current status and never pays again.
func table() statemachine.Table[State, Action, Outcome] {
	return statemachine.New(Actions(), statemachine.Rows[State, Action, Outcome]{
		// Mode A: the admin two-step.
		open(domain.WithdrawalPending): {
			AdminProcess:  {To: domain.WithdrawalProcessing},
			Supersede:     {To: domain.WithdrawalCancelled},
			CancelSession: {To: domain.WithdrawalCancelled},
			Expire:        {To: domain.WithdrawalExpired},
		},
		open(domain.WithdrawalProcessing): {
			AdminComplete: {To: domain.WithdrawalProcessing, Payout: true},
			AdminReject:   {To: domain.WithdrawalRejected},
		},
		// Mode B: the operator decides; an admin may override from the panel.
		open(domain.WithdrawalAwaitingApproval): {
			OperatorApprove: {To: domain.WithdrawalAwaitingApproval, Payout: true},
			OperatorReject:  {To: domain.WithdrawalRejected},
			AdminApprove:    {To: domain.WithdrawalAwaitingApproval, Payout: true},
			AdminDeny:       {To: domain.WithdrawalRejected},
			Supersede:       {To: domain.WithdrawalCancelled},
			CancelSession:   {To: domain.WithdrawalCancelled},
			Expire:          {To: domain.WithdrawalExpired},
		},
		// An admin's COMPLETED or REJECTED repeated once it took effect (a retry after an answer
		// that was lost, or a 503) answers the current status, as a repeated decision does.
		open(domain.WithdrawalCompleted): {
			OperatorApprove: {To: domain.WithdrawalCompleted, Unchanged: true},
			OperatorReject:  {To: domain.WithdrawalCompleted, Unchanged: true},
			AdminComplete:   {To: domain.WithdrawalCompleted, Unchanged: true},
		},
		open(domain.WithdrawalRejected): {
			OperatorApprove: {To: domain.WithdrawalRejected, Unchanged: true},
			OperatorReject:  {To: domain.WithdrawalRejected, Unchanged: true},
			AdminReject:     {To: domain.WithdrawalRejected, Unchanged: true},
		},
		// A decision on a closed request answers its status and never pays: an APPROVE that came
		// after the expiry job is held EXPIRED, as one before it would have been.
		open(domain.WithdrawalExpired): {
			OperatorApprove: {To: domain.WithdrawalExpired, Unchanged: true, Held: HeldExpired},
			OperatorReject:  {To: domain.WithdrawalExpired, Unchanged: true},
			AdminApprove:    {To: domain.WithdrawalExpired, Unchanged: true, Held: HeldExpired},
			AdminDeny:       {To: domain.WithdrawalExpired, Unchanged: true},
		},
		open(domain.WithdrawalCancelled): {
			OperatorApprove: {To: domain.WithdrawalCancelled, Unchanged: true},
			OperatorReject:  {To: domain.WithdrawalCancelled, Unchanged: true},
			AdminApprove:    {To: domain.WithdrawalCancelled, Unchanged: true},
			AdminDeny:       {To: domain.WithdrawalCancelled, Unchanged: true},
		},

		// While the payout is in flight, asking for it again answers the current status and pays
		// nothing; its confirmation completes the withdrawal (mode A from PROCESSING, mode B from
		// AWAITING_APPROVAL). An inactive operator is never paid: a payout not signed yet goes
		// back to open.
		paying(domain.WithdrawalProcessing): {
			AdminComplete:   {To: domain.WithdrawalProcessing, Unchanged: true},
			PayoutConfirmed: {To: domain.WithdrawalCompleted},
			PayoutStopped:   {To: domain.WithdrawalProcessing},
			PayoutAbandoned: {To: domain.WithdrawalProcessing},
		},
		paying(domain.WithdrawalAwaitingApproval): {
			OperatorApprove: {To: domain.WithdrawalAwaitingApproval, Unchanged: true},
			AdminApprove:    {To: domain.WithdrawalAwaitingApproval, Unchanged: true},
			PayoutConfirmed: {To: domain.WithdrawalCompleted},
			PayoutStopped:   {To: domain.WithdrawalAwaitingApproval},
			PayoutAbandoned: {To: domain.WithdrawalAwaitingApproval},
		},
	}, refuse)
}

// Reasons shared by several refused pairs.
const (
	notProcessed    = "an external-approval withdrawal is approved or rejected, not processed: use APPROVE or REJECT"
	decidedByAdmins = "the withdrawal was approved synchronously (mode A); its admins finalize it"
	noPayout        = "no payout was queued for this withdrawal"
)

// refusals explain the refused pairs an admin or an operator can run into.
func refusals() statemachine.Rows[State, Action, string] {
	return statemachine.Rows[State, Action, string]{
		open(domain.WithdrawalPending): {
			AdminComplete:   "a PENDING withdrawal must go to PROCESSING before COMPLETED",
			AdminReject:     "a PENDING withdrawal must go to PROCESSING before REJECTED",
			OperatorApprove: decidedByAdmins,
			OperatorReject:  decidedByAdmins,
			AdminApprove:    "only an external-approval withdrawal is approved: move it to PROCESSING",
			AdminDeny:       "only an external-approval withdrawal is rejected this way: move it to PROCESSING first",
		},
		open(domain.WithdrawalProcessing): {
			AdminProcess:    "the withdrawal is already PROCESSING",
			OperatorApprove: decidedByAdmins,
			OperatorReject:  decidedByAdmins,
			AdminApprove:    "only an external-approval withdrawal is approved: set it COMPLETED",
			AdminDeny:       "only an external-approval withdrawal is rejected this way: set it REJECTED",
			PayoutConfirmed: noPayout,
		},
		open(domain.WithdrawalAwaitingApproval): {
			AdminProcess:    notProcessed,
			AdminComplete:   notProcessed,
			AdminReject:     notProcessed,
			PayoutConfirmed: noPayout,
		},
	}
}

// refuse is the FAILED_PRECONDITION error saying why action is not allowed on a withdrawal in
// state from: the reason in refusals, or a generic one.
func refuse(from State, action Action) error {
	if why, ok := refusals()[from][action]; ok {
		return fault.New(fault.FailedPrecondition, "%s", why)
	}
	if from.Status.Final() {
		return fault.New(fault.FailedPrecondition, "the withdrawal is already %s", from.Status)
	}
	if from.Paying {
		return fault.New(fault.FailedPrecondition, "the withdrawal's payout is already on its way; it can only complete")
	}
	return fault.New(fault.FailedPrecondition, "%s is not allowed on a %s withdrawal", action, from.Status)
}

// Next applies the table: the outcome of action on a withdrawal in state from, or a
// FAILED_PRECONDITION error saying why the action is not allowed now (nothing changes).
func Next(from State, action Action) (Outcome, error) {
	return table().Next(from, action)
}

// Allowed lists the actions that would change a withdrawal in state s, in the order of
// Actions: those the table allows from s, less the repeats it answers Unchanged. An allowed
// action can still be held or refused by its checks (caps, funds, an inactive operator).
func Allowed(s State) []Action {
	t := table()
	return slices.DeleteFunc(t.Allowed(s), func(a Action) bool {
		o, _ := t.Lookup(s, a)
		return o.Unchanged
	})
}
