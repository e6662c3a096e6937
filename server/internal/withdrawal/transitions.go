// Package withdrawal is the withdrawal lifecycle. This file is its one transition table: every
// status change of a withdrawal, whoever asks for it, goes through Next, and the store applies
// it atomically (the row changes only if it is still in the status Next was asked about) with
// an audit row naming the actor and the note.
package withdrawal

import "github.com/cofferhq/coffer/server/internal/fault"

// Status is a withdrawal's status (the spec's names).
type Status string

// The spec's seven statuses.
const (
	Pending          Status = "PENDING"
	Processing       Status = "PROCESSING"
	AwaitingApproval Status = "AWAITING_APPROVAL"
	Completed        Status = "COMPLETED"
	Rejected         Status = "REJECTED"
	Cancelled        Status = "CANCELLED"
	Expired          Status = "EXPIRED"
)

// Statuses lists every status.
var Statuses = []Status{Pending, Processing, AwaitingApproval, Completed, Rejected, Cancelled, Expired}

// Final reports whether nothing can change the status any more.
func (s Status) Final() bool {
	return s == Completed || s == Rejected || s == Cancelled || s == Expired
}

// Action is what asks for a status change.
type Action string

// Actions. Creation (mode A: PENDING after the operator's error 0; mode B: AWAITING_APPROVAL)
// is not a transition: there is no record before it.
const (
	// The admin two-step (PATCH /admin/withdrawals/:id/status), mode A.
	AdminProcess  Action = "admin:PROCESSING"
	AdminComplete Action = "admin:COMPLETED"
	AdminReject   Action = "admin:REJECTED"
	// The operator's decision (POST /withdraw/:id/decision), mode B.
	OperatorApprove Action = "operator:APPROVE"
	OperatorReject  Action = "operator:REJECT"
	// The panel's override of a mode-B withdrawal: the same effects as the operator's decision.
	AdminApprove Action = "admin:APPROVE"
	AdminDeny    Action = "admin:REJECT"
	// The payout of an approved or admin-completed withdrawal reached its confirmations.
	PayoutConfirmed Action = "payout:confirmed"
	// The payout was stopped before its transaction was signed (the operator was made
	// inactive): the withdrawal is open again, its funds released.
	PayoutStopped Action = "payout:stopped"
	// A newer submission in the same session, or the session cancelled.
	Supersede     Action = "user:superseded"
	CancelSession Action = "user:session-cancelled"
	// Unactioned past the 24-hour TTL (the periodic expiry job).
	Expire Action = "system:expire"
)

// Outcome is what an allowed action does.
type Outcome struct {
	// To is the status after the action. For the actions that pay (AdminComplete,
	// OperatorApprove, AdminApprove) it is the status the withdrawal keeps while its payout is
	// in flight; PayoutConfirmed then moves it to COMPLETED.
	To Status
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
	Status Status
	Paying bool
}

func (s State) String() string {
	if s.Paying {
		return string(s.Status) + " (paying)"
	}
	return string(s.Status)
}

type key struct {
	from   State
	action Action
}

func open(s Status) State   { return State{Status: s} }
func paying(s Status) State { return State{Status: s, Paying: true} }

// transitions is the table. A (status, action) pair that is not in it is refused with the
// reason in refusals, or a generic one.
var transitions = map[key]Outcome{
	// Mode A: the admin two-step.
	{open(Pending), AdminProcess}:     {To: Processing},
	{open(Processing), AdminComplete}: {To: Processing, Payout: true},
	{open(Processing), AdminReject}:   {To: Rejected},

	// Mode B: the operator decides; an admin may override from the panel.
	{open(AwaitingApproval), OperatorApprove}: {To: AwaitingApproval, Payout: true},
	{open(AwaitingApproval), OperatorReject}:  {To: Rejected},
	{open(AwaitingApproval), AdminApprove}:    {To: AwaitingApproval, Payout: true},
	{open(AwaitingApproval), AdminDeny}:       {To: Rejected},
	// A repeated decision returns the current status and never pays again.
	{open(Completed), OperatorApprove}: {To: Completed, Unchanged: true},
	{open(Completed), OperatorReject}:  {To: Completed, Unchanged: true},
	{open(Rejected), OperatorApprove}:  {To: Rejected, Unchanged: true},
	{open(Rejected), OperatorReject}:   {To: Rejected, Unchanged: true},
	// A decision on a closed request answers its status and never pays: an APPROVE that came
	// after the expiry job is held EXPIRED, as one before it would have been.
	{open(Expired), OperatorApprove}:   {To: Expired, Unchanged: true, Held: HeldExpired},
	{open(Expired), OperatorReject}:    {To: Expired, Unchanged: true},
	{open(Expired), AdminApprove}:      {To: Expired, Unchanged: true, Held: HeldExpired},
	{open(Expired), AdminDeny}:         {To: Expired, Unchanged: true},
	{open(Cancelled), OperatorApprove}: {To: Cancelled, Unchanged: true},
	{open(Cancelled), OperatorReject}:  {To: Cancelled, Unchanged: true},
	{open(Cancelled), AdminApprove}:    {To: Cancelled, Unchanged: true},
	{open(Cancelled), AdminDeny}:       {To: Cancelled, Unchanged: true},

	// While the payout is in flight, asking for it again answers the current status and pays
	// nothing; its confirmation completes the withdrawal (mode A from PROCESSING, mode B from
	// AWAITING_APPROVAL).
	{paying(Processing), AdminComplete}: {To: Processing, Unchanged: true},
	// An admin's COMPLETED or REJECTED repeated once it took effect (a retry after an answer
	// that was lost, or a 503) answers the current status, as a repeated decision does.
	{open(Completed), AdminComplete}:            {To: Completed, Unchanged: true},
	{open(Rejected), AdminReject}:               {To: Rejected, Unchanged: true},
	{paying(AwaitingApproval), OperatorApprove}: {To: AwaitingApproval, Unchanged: true},
	{paying(AwaitingApproval), AdminApprove}:    {To: AwaitingApproval, Unchanged: true},
	{paying(Processing), PayoutConfirmed}:       {To: Completed},
	{paying(AwaitingApproval), PayoutConfirmed}: {To: Completed},
	// An inactive operator is never paid: a payout not signed yet goes back to open.
	{paying(Processing), PayoutStopped}:       {To: Processing},
	{paying(AwaitingApproval), PayoutStopped}: {To: AwaitingApproval},

	// CANCELLED and EXPIRED come only from the statuses nobody has acted on yet. Once an admin
	// took a withdrawal (PROCESSING), only the admin finishes it.
	{open(Pending), Supersede}:              {To: Cancelled},
	{open(AwaitingApproval), Supersede}:     {To: Cancelled},
	{open(Pending), CancelSession}:          {To: Cancelled},
	{open(AwaitingApproval), CancelSession}: {To: Cancelled},
	{open(Pending), Expire}:                 {To: Expired},
	{open(AwaitingApproval), Expire}:        {To: Expired},
}

// Reasons shared by several refused pairs.
const (
	notProcessed    = "an external-approval withdrawal is approved or rejected, not processed: use APPROVE or REJECT"
	decidedByAdmins = "the withdrawal was approved synchronously (mode A); its admins finalize it"
)

// refusals explain the refused pairs an admin or an operator can run into.
var refusals = map[key]string{
	{open(Pending), AdminComplete}:            "a PENDING withdrawal must go to PROCESSING before COMPLETED",
	{open(Pending), AdminReject}:              "a PENDING withdrawal must go to PROCESSING before REJECTED",
	{open(Processing), AdminProcess}:          "the withdrawal is already PROCESSING",
	{open(AwaitingApproval), AdminProcess}:    notProcessed,
	{open(AwaitingApproval), AdminComplete}:   notProcessed,
	{open(AwaitingApproval), AdminReject}:     notProcessed,
	{open(Pending), OperatorApprove}:          decidedByAdmins,
	{open(Pending), OperatorReject}:           decidedByAdmins,
	{open(Processing), OperatorApprove}:       decidedByAdmins,
	{open(Processing), OperatorReject}:        decidedByAdmins,
	{open(Pending), AdminApprove}:             "only an external-approval withdrawal is approved: move it to PROCESSING",
	{open(Processing), AdminApprove}:          "only an external-approval withdrawal is approved: set it COMPLETED",
	{open(Pending), AdminDeny}:                "only an external-approval withdrawal is rejected this way: move it to PROCESSING first",
	{open(Processing), AdminDeny}:             "only an external-approval withdrawal is rejected this way: set it REJECTED",
	{open(Processing), PayoutConfirmed}:       "no payout was queued for this withdrawal",
	{open(AwaitingApproval), PayoutConfirmed}: "no payout was queued for this withdrawal",
}

// Next applies the table: the outcome of action on a withdrawal in state from, or a
// FAILED_PRECONDITION error saying why the action is not allowed now (nothing changes).
func Next(from State, action Action) (Outcome, error) {
	if o, ok := transitions[key{from, action}]; ok {
		return o, nil
	}
	if why, ok := refusals[key{from, action}]; ok {
		return Outcome{}, fault.New(fault.FailedPrecondition, "%s", why)
	}
	if from.Status.Final() {
		return Outcome{}, fault.New(fault.FailedPrecondition, "the withdrawal is already %s", from.Status)
	}
	if from.Paying {
		return Outcome{}, fault.New(fault.FailedPrecondition, "the withdrawal's payout is already on its way; it can only complete")
	}
	return Outcome{}, fault.New(fault.FailedPrecondition, "%s is not allowed on a %s withdrawal", action, from.Status)
}
