package deposit

// This file holds the deposit package's three transition tables — deposits, sweeps and reorg
// resolutions — and is their one source of truth: every status change of a deposit, a sweep
// or a reorg asks its table first, and the store's statements only move rows the table allows
// to move (the WHERE clause on the status the table was asked about).

import (
	"cmp"
	"errors"
	"fmt"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine"
)

// Event is what moves a deposit. Only the service acts on deposits (an engineer acts on the
// reorg, whose table then restores the deposit), so a refused pair is a bug, not a request to
// answer: Next reports it as an internal error.
type Event string

// Deposit events. Creation (CONFIRMING, when a transfer is first seen) is not a transition.
const (
	// Mined: the transfer was seen in a block (a scan or a replay), maybe again.
	Mined Event = "chain:mined"
	// Confirm: the deposit's block reached the confirmation depth (or a replay verified it).
	Confirm Event = "chain:confirmed"
	// Orphan: the deposit's block left the chain before the depth (a rollback, a reset chain).
	Orphan Event = "chain:orphaned"
	// Reorg: the deposit's block left the chain after the depth.
	Reorg Event = "chain:reorged"
	// Park: the address's unswept balance of the asset is below its minimum.
	Park Event = "sweep:below-minimum"
	// Take: a sweep took the deposit.
	Take Event = "sweep:taken"
	// Credit: the deposit's sweep is mined and it is credited to the operator.
	Credit Event = "sweep:credited"
	// RestoreSweeping, RestoreBelowMinimum, RestoreCredited: the reorg's resolution counted
	// the deposit again: back to the status it was reorged from (Restore picks the one).
	RestoreSweeping     Event = "reorg:restore-sweeping"
	RestoreBelowMinimum Event = "reorg:restore-below-minimum"
	RestoreCredited     Event = "reorg:restore-credited" //nolint:gosec // G101: an event name, not a credential
)

// Events lists every deposit event.
func Events() []Event {
	return []Event{Mined, Confirm, Orphan, Reorg, Park, Take, Credit, RestoreSweeping, RestoreBelowMinimum, RestoreCredited}
}

// Restore is the event that puts a reorged deposit back to prior, the status it was reorged
// from ("" for a status a reorg never leaves, which the table refuses).
func Restore(prior domain.DepositStatus) Event {
	switch prior {
	case domain.DepositSweeping:
		return RestoreSweeping
	case domain.DepositBelowMinimum:
		return RestoreBelowMinimum
	case domain.DepositCredited:
		return RestoreCredited
	case domain.DepositConfirming, domain.DepositOrphaned, domain.DepositUnsweepable, domain.DepositReorged:
	}
	return ""
}

// depositTable is the deposit table. A pair that is not in it is refused.
//
// Seen in a block again (a rescan, a replay, the new chain of a reorg: Mined), the row is the
// transfer's (chain, tx, log index), so it only moves to the block it is now in. The one status
// that changes is ORPHANED, which comes back to CONFIRMING: the transfer was never confirmed,
// so nothing was swept, credited or announced for it, and counting it again under the same row
// keeps its id and idempotency key — one DEPOSIT webhook per transfer, however many times the
// chain reorganises around it. A reorged deposit stays REORGED: its re-inclusion is recorded
// on its reorg, which resolves once that block is confirmed.
func depositTable() statemachine.Table[domain.DepositStatus, Event, domain.DepositStatus] {
	return statemachine.New(Events(), statemachine.Rows[domain.DepositStatus, Event, domain.DepositStatus]{
		domain.DepositConfirming: {
			Mined:   domain.DepositConfirming,
			Confirm: domain.DepositSweeping,
			Orphan:  domain.DepositOrphaned,
		},
		// Sweeping: parked while the address holds too little of the asset, taken by a sweep
		// (parked ones too, once the balance reaches the minimum), credited when it is mined.
		// A reorg deeper than the depth: only what was confirmed is REORGED (CONFIRMING is
		// orphaned instead).
		domain.DepositSweeping: {
			Mined:  domain.DepositSweeping,
			Park:   domain.DepositBelowMinimum,
			Take:   domain.DepositSweeping,
			Credit: domain.DepositCredited,
			Reorg:  domain.DepositReorged,
		},
		domain.DepositBelowMinimum: {
			Mined: domain.DepositBelowMinimum,
			Take:  domain.DepositSweeping,
			Reorg: domain.DepositReorged,
		},
		domain.DepositCredited: {
			Mined: domain.DepositCredited,
			Reorg: domain.DepositReorged,
		},
		domain.DepositOrphaned: {Mined: domain.DepositConfirming},
		// UNSWEEPABLE (no longer produced) is left to an engineer: nothing moves it.
		domain.DepositUnsweepable: {Mined: domain.DepositUnsweepable},
		// The reorg's resolution restores the status the deposit came from.
		domain.DepositReorged: {
			Mined:               domain.DepositReorged,
			RestoreSweeping:     domain.DepositSweeping,
			RestoreBelowMinimum: domain.DepositBelowMinimum,
			RestoreCredited:     domain.DepositCredited,
		},
	}, statemachine.RefuseWith[domain.DepositStatus, Event](fmt.Errorf("deposit: %w", errRefused), "deposit"))
}

// errRefused marks a transition a table refused.
var errRefused = errors.New("transition refused")

// Next applies the deposit table: the status after event, or an internal error when the
// table does not allow it (nothing changes).
func Next(from domain.DepositStatus, event Event) (domain.DepositStatus, error) {
	return depositTable().Next(from, event)
}

// Moves reports whether event moves a deposit in status from (to another status or the same).
func Moves(from domain.DepositStatus, event Event) bool {
	_, ok := depositTable().Lookup(from, event)
	return ok
}

// SweepEvent is what moves a sweep. Only the service acts on sweeps.
type SweepEvent string

// Sweep events. Opening a sweep (FUNDING) is not a transition.
const (
	// SweepSigned: the address holds what the sweep's transactions can cost; they are signed
	// and stored.
	SweepSigned SweepEvent = "sweep:signed"
	// SweepCredited: every transaction is mined at the depth and every deposit credited.
	SweepCredited SweepEvent = "sweep:credited"
	// SweepSkipped: the batch the sweep was in did not sweep its address (a delegation
	// cleared or replaced, a reverted sweep, or a batch that never ran): it waits for the next
	// batch. Only batched sweeps are skipped.
	SweepSkipped SweepEvent = "batch:skipped"
	// SweepRetired: a deposit of the signed sweep was written off before its transfers were
	// mined, so they could never pay; each was cancelled (or reverted) at its depth, moving
	// nothing, and its deposits left it to be swept again (retireSweep). Only unbatched sweeps
	// are retired.
	SweepRetired SweepEvent = "sweep:retired"
)

// SweepEvents lists every sweep event.
func SweepEvents() []SweepEvent {
	return []SweepEvent{SweepSigned, SweepCredited, SweepSkipped, SweepRetired}
}

// sweepTable is the sweep table. A reorg does not move a sweep: it holds a signed one
// (SweepHeldByReorg) until its deposits' reorgs are resolved.
func sweepTable() statemachine.Table[domain.SweepStatus, SweepEvent, domain.SweepStatus] {
	return statemachine.New(SweepEvents(), statemachine.Rows[domain.SweepStatus, SweepEvent, domain.SweepStatus]{
		domain.SweepFunding: {SweepSigned: domain.SweepSending},
		domain.SweepSending: {SweepCredited: domain.SweepDone, SweepSkipped: domain.SweepFunding, SweepRetired: domain.SweepDone},
	}, statemachine.RefuseWith[domain.SweepStatus, SweepEvent](fmt.Errorf("sweep: %w", errRefused), "sweep"))
}

// BatchEvent is what moves an EIP-7702 batch sweep.
type BatchEvent string

// Batch events. Forming a batch (SENDING, its transaction stored) is not a transition.
const (
	// BatchSettled: the batch's receipt was read (or it will never be mined): each of its
	// sweeps is swept or skipped.
	BatchSettled BatchEvent = "batch:settled"
)

// BatchEvents lists every batch event.
func BatchEvents() []BatchEvent { return []BatchEvent{BatchSettled} }

// batchTable is the batch table.
func batchTable() statemachine.Table[domain.SweepBatchStatus, BatchEvent, domain.SweepBatchStatus] {
	return statemachine.New(BatchEvents(), statemachine.Rows[domain.SweepBatchStatus, BatchEvent, domain.SweepBatchStatus]{
		domain.BatchSending: {BatchSettled: domain.BatchDone},
	}, statemachine.RefuseWith[domain.SweepBatchStatus, BatchEvent](fmt.Errorf("sweep batch: %w", errRefused), "sweep batch"))
}

// NextBatch applies the batch table: the status after event, or an internal error.
func NextBatch(from domain.SweepBatchStatus, event BatchEvent) (domain.SweepBatchStatus, error) {
	return batchTable().Next(from, event)
}

// NextSweep applies the sweep table: the status after event, or an internal error.
func NextSweep(from domain.SweepStatus, event SweepEvent) (domain.SweepStatus, error) {
	return sweepTable().Next(from, event)
}

// ReorgEvent is what resolves a reorg.
type ReorgEvent string

// Reorg events. Detection (an open reorg) is not a transition: there is no record before it.
const (
	// EngineerReinstate: an engineer counts the deposit again (the payment was re-sent).
	EngineerReinstate ReorgEvent = "engineer:REINSTATE"
	// EngineerWriteOff: an engineer lets the reversal stand.
	EngineerWriteOff ReorgEvent = "engineer:WRITE_OFF"
	// Reincluded: the same transfer was mined again and its block is confirmed (and a credited
	// deposit's sweep with it).
	Reincluded ReorgEvent = "chain:REINCLUDED"
	// MinedAgain: the transfer of a written-off deposit was mined again and its block is
	// confirmed: its money is back at the deposit address.
	MinedAgain ReorgEvent = "chain:MINED_AGAIN"
)

// ReorgEvents lists every reorg event.
func ReorgEvents() []ReorgEvent {
	return []ReorgEvent{EngineerReinstate, EngineerWriteOff, Reincluded, MinedAgain}
}

// ReorgOutcome is what a resolution does.
type ReorgOutcome struct {
	To domain.ReorgResolution
	// Restore: the deposit goes back to the status it was reorged from (Restore(prior)), with
	// its credit if it had one. Without it the deposit stays REORGED, its credit reversed.
	Restore bool
	// Reopen: a new incident opens for the same deposit (the resolution stands; an engineer
	// decides again). Never a credit: the engineer who wrote it off may have made the operator
	// whole by hand since.
	Reopen bool
}

// reorgTable is the reorg table: only an open reorg is resolved, once. A written-off deposit
// whose transfer is mined again reopens (a new incident, MinedAgain), which only an engineer
// resolves: the scanner never resolves it REINCLUDED (resolveReincluded).
func reorgTable() statemachine.Table[domain.ReorgResolution, ReorgEvent, ReorgOutcome] {
	return statemachine.New(ReorgEvents(), statemachine.Rows[domain.ReorgResolution, ReorgEvent, ReorgOutcome]{
		domain.ReorgOpen: {
			EngineerReinstate: {To: domain.ReorgReinstate, Restore: true},
			EngineerWriteOff:  {To: domain.ReorgWriteOff},
			Reincluded:        {To: domain.ReorgReincluded, Restore: true},
		},
		domain.ReorgWriteOff: {
			MinedAgain: {To: domain.ReorgWriteOff, Reopen: true},
		},
	}, func(from domain.ReorgResolution, event ReorgEvent) error {
		if event == MinedAgain {
			return fault.New(fault.FailedPrecondition, "%s reopens only a written-off reorg, not one %s", event, cmp.Or(string(from), "open"))
		}
		if from != domain.ReorgOpen {
			return fault.New(fault.FailedPrecondition, "the reorg was already resolved: %s", from)
		}
		return fault.New(fault.FailedPrecondition, "%s does not resolve a reorg", event)
	})
}

// NextReorg applies the reorg table: the outcome of event, or FAILED_PRECONDITION when the
// reorg is already resolved.
func NextReorg(from domain.ReorgResolution, event ReorgEvent) (ReorgOutcome, error) {
	return reorgTable().Next(from, event)
}

// resolutionEvent is the reorg event of a resolution.
func resolutionEvent(r domain.ReorgResolution) ReorgEvent {
	switch r {
	case domain.ReorgReinstate:
		return EngineerReinstate
	case domain.ReorgWriteOff:
		return EngineerWriteOff
	case domain.ReorgReincluded:
		return Reincluded
	case domain.ReorgOpen: // not a resolution
	}
	return ""
}
