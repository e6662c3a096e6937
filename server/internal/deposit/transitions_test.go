package deposit

import (
	"errors"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine/statemachinetest"
)

// x marks a refused pair in the tables below.
const x = "refused"

// internalRefusal checks the refusal of a table only the service moves: an internal error,
// never a precondition to answer.
func internalRefusal[E any](_ E, err error) (bool, string) {
	return errors.Is(err, errRefused) && !fault.Is(err, fault.FailedPrecondition),
		"an internal refusal (only the service moves it: a refusal is a bug, not a precondition)"
}

// TestDepositTable decides every (status, event) pair: a status or an event added without a
// decision for each pair fails here.
func TestDepositTable(t *testing.T) {
	t.Parallel()
	const (
		C, S, B, Cr = domain.DepositConfirming, domain.DepositSweeping, domain.DepositBelowMinimum, domain.DepositCredited
		O, U, R     = domain.DepositOrphaned, domain.DepositUnsweepable, domain.DepositReorged
	)
	statemachinetest.Check(t, depositTable(), statemachinetest.Decided[domain.DepositStatus, Event, domain.DepositStatus]{
		States: domain.DepositStatuses(),
		Events: []Event{Mined, Confirm, Orphan, Reorg, Park, Take, Credit, RestoreSweeping, RestoreBelowMinimum, RestoreCredited},
		Want: map[domain.DepositStatus][]domain.DepositStatus{
			//   Mined Confirm Orphan Reorg Park Take Credit  RestoreS RestoreB RestoreCr
			C:  {C, S, O, x, x, x, x, x, x, x},
			S:  {S, x, x, R, B, S, Cr, x, x, x},
			B:  {B, x, x, R, x, S, x, x, x, x},
			Cr: {Cr, x, x, R, x, x, x, x, x, x},
			O:  {C, x, x, x, x, x, x, x, x, x}, // the re-entry: mined again, confirming again
			U:  {U, x, x, x, x, x, x, x, x, x},
			R:  {R, x, x, x, x, x, x, S, B, Cr},
		},
		Refused: x,
		Refusal: internalRefusal[Event],
	})
	for _, s := range domain.DepositStatuses() {
		for _, e := range Events() {
			if _, err := Next(s, e); (err == nil) != Moves(s, e) {
				t.Errorf("%s + %s: Moves disagrees with Next", s, e)
			}
		}
	}
	// Restore names the event of each status a reorg takes a deposit from, and no other.
	for _, s := range domain.DepositStatuses() {
		reorged, _ := Next(s, Reorg)
		if back, err := Next(domain.DepositReorged, Restore(s)); (reorged == domain.DepositReorged) != (err == nil && back == s) {
			t.Errorf("a deposit reorged from %s is restored to %q (%v)", s, back, err)
		}
	}
}

// TestSweepTable decides every (status, event) pair of the sweep table.
func TestSweepTable(t *testing.T) {
	t.Parallel()
	const F, S, D = domain.SweepFunding, domain.SweepSending, domain.SweepDone
	statemachinetest.Check(t, sweepTable(), statemachinetest.Decided[domain.SweepStatus, SweepEvent, domain.SweepStatus]{
		States: domain.SweepStatuses(),
		Events: []SweepEvent{SweepSigned, SweepCredited, SweepSkipped, SweepRetired},
		Want: map[domain.SweepStatus][]domain.SweepStatus{
			//  Signed Credited Skipped Retired
			F: {S, x, x, x}, // nothing signed: nothing to retire
			S: {x, D, F, D}, // skipped: back to wait for the next batch; retired: closed, its deposits swept again
			D: {x, x, x, x}, // final
		},
		Refused: x,
		Refusal: internalRefusal[SweepEvent],
	})
}

// TestBatchTable decides every (status, event) pair of the batch table.
func TestBatchTable(t *testing.T) {
	t.Parallel()
	const S, D = domain.BatchSending, domain.BatchDone
	statemachinetest.Check(t, batchTable(), statemachinetest.Decided[domain.SweepBatchStatus, BatchEvent, domain.SweepBatchStatus]{
		States: domain.SweepBatchStatuses(),
		Events: []BatchEvent{BatchSettled},
		Want: map[domain.SweepBatchStatus][]domain.SweepBatchStatus{
			//  Settled
			S: {D},
			D: {x}, // final
		},
		Refused: x,
		Refusal: internalRefusal[BatchEvent],
	})
}

// TestReorgTable decides every (resolution, event) pair of the reorg table: an open reorg is
// resolved once; REINSTATE and REINCLUDED restore the deposit, WRITE_OFF does not; a
// written-off deposit mined again reopens (a new incident), never restored by the chain.
func TestReorgTable(t *testing.T) {
	t.Parallel()
	const (
		open, in, wo, re = domain.ReorgOpen, domain.ReorgReinstate, domain.ReorgWriteOff, domain.ReorgReincluded
	)
	var no ReorgOutcome // refused
	statemachinetest.Check(t, reorgTable(), statemachinetest.Decided[domain.ReorgResolution, ReorgEvent, ReorgOutcome]{
		States: domain.ReorgResolutions(),
		Events: []ReorgEvent{EngineerReinstate, EngineerWriteOff, Reincluded, MinedAgain},
		Want: map[domain.ReorgResolution][]ReorgOutcome{
			//    Reinstate                    WriteOff     Reincluded                 MinedAgain
			open: {{To: in, Restore: true}, {To: wo}, {To: re, Restore: true}, no},
			in:   {no, no, no, no},
			// A written-off deposit mined again: the write-off stands, and a new incident opens
			// for an engineer to decide again (no credit by itself).
			wo: {no, no, no, {To: wo, Reopen: true}},
			re: {no, no, no, no},
		},
		Refused: no,
		Refusal: func(_ ReorgEvent, err error) (bool, string) {
			return fault.Is(err, fault.FailedPrecondition), "FAILED_PRECONDITION"
		},
	})
	for _, r := range domain.ReorgResolutions()[1:] {
		if o, err := NextReorg(domain.ReorgOpen, resolutionEvent(r)); err != nil || o.To != r {
			t.Errorf("resolution %s: %+v, %v", r, o, err)
		}
	}
}
