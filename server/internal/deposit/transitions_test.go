package deposit

import (
	"errors"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// x marks a refused pair in the tables below.
const x = "refused"

// TestDepositTable decides every (status, event) pair: a status or an event added without a
// decision for each pair fails here.
func TestDepositTable(t *testing.T) {
	const (
		C, S, B, Cr = domain.DepositConfirming, domain.DepositSweeping, domain.DepositBelowMinimum, domain.DepositCredited
		O, U, R     = domain.DepositOrphaned, domain.DepositUnsweepable, domain.DepositReorged
	)
	events := []Event{Mined, Confirm, Orphan, Reorg, Park, Take, Credit, RestoreSweeping, RestoreBelowMinimum, RestoreCredited}
	want := map[domain.DepositStatus][]domain.DepositStatus{
		//   Mined Confirm Orphan Reorg Park Take Credit  RestoreS RestoreB RestoreCr
		C:  {C, S, O, x, x, x, x, x, x, x},
		S:  {S, x, x, R, B, S, Cr, x, x, x},
		B:  {B, x, x, R, x, S, x, x, x, x},
		Cr: {Cr, x, x, R, x, x, x, x, x, x},
		O:  {C, x, x, x, x, x, x, x, x, x}, // the re-entry: mined again, confirming again
		U:  {U, x, x, x, x, x, x, x, x, x},
		R:  {R, x, x, x, x, x, x, S, B, Cr},
	}
	checkTable(t, domain.DepositStatuses(), Events(), events, want, func(from domain.DepositStatus, e Event) (domain.DepositStatus, error) {
		to, err := Next(from, e)
		if err != nil && !errors.Is(err, errRefused) {
			t.Errorf("%s + %s: a refusal is an internal error, got %v", from, e, err)
		}
		if err != nil && fault.Is(err, fault.FailedPrecondition) {
			t.Errorf("%s + %s: only the service moves deposits: a refusal is a bug, not a precondition", from, e)
		}
		if (err == nil) != Moves(from, e) {
			t.Errorf("%s + %s: Moves disagrees with Next", from, e)
		}
		return to, err
	})
	for k := range transitions() {
		if !slices.Contains(domain.DepositStatuses(), k.from) || !slices.Contains(Events(), k.event) {
			t.Errorf("the table has %s + %s, outside domain.DepositStatuses() or Events", k.from, k.event)
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
	const F, S, D = domain.SweepFunding, domain.SweepSending, domain.SweepDone
	events := []SweepEvent{SweepSigned, SweepCredited}
	want := map[domain.SweepStatus][]domain.SweepStatus{
		//  Signed Credited
		F: {S, x},
		S: {x, D},
		D: {x, x}, // final
	}
	checkTable(t, domain.SweepStatuses(), SweepEvents(), events, want, func(from domain.SweepStatus, e SweepEvent) (domain.SweepStatus, error) {
		to, err := NextSweep(from, e)
		if err != nil && !errors.Is(err, errRefused) {
			t.Errorf("%s + %s: %v", from, e, err)
		}
		return to, err
	})
	for k := range sweepTransitions() {
		if !slices.Contains(domain.SweepStatuses(), k.from) || !slices.Contains(SweepEvents(), k.event) {
			t.Errorf("the table has %s + %s, outside domain.SweepStatuses() or SweepEvents", k.from, k.event)
		}
	}
}

// TestReorgTable decides every (resolution, event) pair of the reorg table: an open reorg is
// resolved once; REINSTATE and REINCLUDED restore the deposit, WRITE_OFF does not.
func TestReorgTable(t *testing.T) {
	const (
		open, in, wo, re = domain.ReorgOpen, domain.ReorgReinstate, domain.ReorgWriteOff, domain.ReorgReincluded
	)
	events := []ReorgEvent{EngineerReinstate, EngineerWriteOff, Reincluded}
	want := map[domain.ReorgResolution][]*ReorgOutcome{
		//    Reinstate                    WriteOff     Reincluded
		open: {{To: in, Restore: true}, {To: wo}, {To: re, Restore: true}},
		in:   {nil, nil, nil},
		wo:   {nil, nil, nil}, // a written-off deposit mined again stays written off
		re:   {nil, nil, nil},
	}
	if len(want) != len(domain.ReorgResolutions()) {
		t.Errorf("resolutions %v, decided %d", domain.ReorgResolutions(), len(want))
	}
	if !sameSet(events, ReorgEvents()) {
		t.Errorf("events %v, decided %v", ReorgEvents(), events)
	}
	for _, from := range domain.ReorgResolutions() {
		row, ok := want[from]
		if !ok || len(row) != len(events) {
			t.Errorf("%q: not every event decided", from)
			continue
		}
		for i, e := range events {
			got, err := NextReorg(from, e)
			switch {
			case row[i] == nil && !fault.Is(err, fault.FailedPrecondition):
				t.Errorf("%q + %s: %+v, %v; want FAILED_PRECONDITION", from, e, got, err)
			case row[i] != nil && (err != nil || got != *row[i]):
				t.Errorf("%q + %s: %+v, %v; want %+v", from, e, got, err, *row[i])
			}
		}
	}
	for _, r := range domain.ReorgResolutions()[1:] {
		if o, err := NextReorg(domain.ReorgOpen, resolutionEvent(r)); err != nil || o.To != r {
			t.Errorf("resolution %s: %+v, %v", r, o, err)
		}
	}
}

// checkTable compares a table with want: for every state (which must be all of states) and
// every event (events, which must be all of all), the state after it or x.
func checkTable[S ~string, E ~string](t *testing.T, states []S, all, events []E, want map[S][]S, next func(S, E) (S, error)) {
	t.Helper()
	if !sameSet(events, all) {
		t.Errorf("events %v, decided %v", all, events)
	}
	if len(want) != len(states) {
		t.Errorf("states %v, decided %d", states, len(want))
	}
	for _, from := range states {
		row, ok := want[from]
		if !ok || len(row) != len(events) {
			t.Errorf("%s: not every event decided", from)
			continue
		}
		for i, e := range events {
			to, err := next(from, e)
			switch {
			case row[i] == x && err == nil:
				t.Errorf("%s + %s: moved to %s; want refused", from, e, to)
			case row[i] == x:
			case err != nil || to != row[i]:
				t.Errorf("%s + %s: %s, %v; want %s", from, e, to, err, row[i])
			}
		}
	}
}

func sameSet[E comparable](a, b []E) bool {
	if len(a) != len(b) {
		return false
	}
	for _, e := range a {
		if !slices.Contains(b, e) {
			return false
		}
	}
	return true
}
