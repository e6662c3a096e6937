// Package statemachinetest checks a statemachine.Table against the same table written out by
// hand, every pair decided, so that a state or an event added without a decision for each
// pair fails the machine's test.
package statemachinetest

import (
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/statemachine"
)

// Decided is a machine's whole table written out by hand: a row per state, a column per event.
type Decided[S, E, O comparable] struct {
	// States is every state of the machine (the domain's list); Want decides each.
	States []S
	// Events names Want's columns; it must be every event of the table.
	Events []E
	// Want is, for each state, the outcome of each event (in the order of Events), or Refused.
	Want map[S][]O
	// Refused marks a refused pair in Want.
	Refused O
	// Refusal checks the error of a refused pair: ok when err is the refusal event must get;
	// want names that refusal for the failure message.
	Refusal func(event E, err error) (ok bool, want string)
}

// Check compares table with d, pair by pair: Next's outcome or refusal, and Allowed. It fails
// t when d does not decide every state and event of the machine, or when the table has a pair
// outside them.
func Check[S, E, O comparable](t testing.TB, table statemachine.Table[S, E, O], d Decided[S, E, O]) {
	t.Helper()
	if !sameSet(d.Events, table.Events()) {
		t.Errorf("decided the events %v; the table has %v", d.Events, table.Events())
	}
	if len(d.Want) != len(d.States) {
		t.Errorf("decided %d states; the machine has %v", len(d.Want), d.States)
	}
	for _, from := range d.States {
		row, ok := d.Want[from]
		if !ok || len(row) != len(d.Events) {
			t.Errorf("%v: not every event decided", from)
			continue
		}
		for i, e := range d.Events {
			got, err := table.Next(from, e)
			if row[i] == d.Refused {
				if ok, want := d.Refusal(e, err); !ok {
					t.Errorf("%v + %v: %+v, %v; want %s", from, e, got, err, want)
				}
				continue
			}
			if err != nil || got != row[i] {
				t.Errorf("%v + %v: %+v, %v; want %+v", from, e, got, err, row[i])
			}
		}
		var allowed []E
		for _, e := range table.Events() {
			if i := slices.Index(d.Events, e); i >= 0 && row[i] != d.Refused {
				allowed = append(allowed, e)
			}
		}
		if got := table.Allowed(from); !slices.Equal(got, allowed) {
			t.Errorf("Allowed(%v) = %v; want %v", from, got, allowed)
		}
	}
	for from, e := range table.Pairs() {
		if !slices.Contains(d.States, from) || !slices.Contains(d.Events, e) {
			t.Errorf("the table has %v + %v, outside the decided states and events", from, e)
		}
	}
}

// sameSet reports whether a and b are as long and hold the same elements.
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
