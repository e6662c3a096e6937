// Package statemachine is what Coffer's transition tables share. Each state machine (a
// withdrawal, a deposit, a sweep, a reorg resolution, a chain transaction, a webhook delivery,
// a session) writes its one table as data — from a state, what each event does — and asks it
// through a Table: Next for a change, Lookup and Allowed for what a state allows. What a
// refused pair answers stays the machine's own (an internal error, a FAILED_PRECONDITION with
// its reason). Package statemachinetest checks a whole table against one written out by hand.
package statemachine

import (
	"fmt"
	"iter"
)

// Rows is a transition table as data: from a state, the outcome of each event it allows
// (usually the next state; a richer outcome where an event does more than move). A pair that
// is not in it is refused. Map literals keep the table honest: a state or an event written
// twice under the same state does not compile.
type Rows[S, E comparable, O any] map[S]map[E]O

// Table is a state machine's transition table with its events and its refusal.
type Table[S, E comparable, O any] struct {
	events []E
	rows   Rows[S, E, O]
	refuse func(from S, event E) error
}

// New returns the table of rows. events is every event of the machine, in the order Allowed
// reports them; refuse is the error of a refused pair.
func New[S, E comparable, O any](events []E, rows Rows[S, E, O], refuse func(from S, event E) error) Table[S, E, O] {
	return Table[S, E, O]{events: events, rows: rows, refuse: refuse}
}

// Next applies the table: the outcome of event from the state from, or the machine's refusal
// (nothing changes).
func (t Table[S, E, O]) Next(from S, event E) (O, error) {
	if o, ok := t.Lookup(from, event); ok {
		return o, nil
	}
	var none O
	return none, t.refuse(from, event)
}

// Lookup reports the outcome of event from the state from, and whether the table allows it.
func (t Table[S, E, O]) Lookup(from S, event E) (O, bool) {
	o, ok := t.rows[from][event]
	return o, ok
}

// Allowed lists the events the table allows from the state from, in the order of Events.
func (t Table[S, E, O]) Allowed(from S) []E {
	var out []E
	for _, e := range t.events {
		if _, ok := t.rows[from][e]; ok {
			out = append(out, e)
		}
	}
	return out
}

// Events lists every event of the machine. It is a new slice each call.
func (t Table[S, E, O]) Events() []E { return append([]E(nil), t.events...) }

// Pairs yields every (state, event) pair the table allows, in no particular order.
func (t Table[S, E, O]) Pairs() iter.Seq2[S, E] {
	return func(yield func(S, E) bool) {
		for from, row := range t.rows {
			for e := range row {
				if !yield(from, e) {
					return
				}
			}
		}
	}
}

// RefuseWith is the refusal of a machine only the service moves, where a refused pair is a
// bug rather than a request to answer: err (a sentinel callers test with errors.Is) wrapped
// with the pair, as "err: event on a from noun".
func RefuseWith[S, E any](err error, noun string) func(from S, event E) error {
	return func(from S, event E) error {
		return fmt.Errorf("%w: %v on a %v %s", err, event, from, noun)
	}
}
