package statemachine_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/statemachine"
)

type door string

const (
	closed door = "closed"
	open   door = "open"
	locked door = "locked"
)

type action string

const (
	opening   action = "open"
	closing   action = "close"
	locking   action = "lock"
	unlocking action = "unlock"
)

var errRefused = errors.New("door: refused")

func doorTable() statemachine.Table[door, action, door] {
	return statemachine.New([]action{opening, closing, locking, unlocking}, statemachine.Rows[door, action, door]{
		closed: {opening: open, locking: locked, closing: closed},
		open:   {closing: closed},
		locked: {unlocking: closed},
	}, statemachine.RefuseWith[door, action](errRefused, "door"))
}

func TestNext(t *testing.T) {
	t.Parallel()
	table := doorTable()
	if to, err := table.Next(closed, opening); err != nil || to != open {
		t.Errorf("closed + open: %s, %v; want open", to, err)
	}
	if to, err := table.Next(closed, closing); err != nil || to != closed {
		t.Errorf("closed + close: %s, %v; want closed (a row may keep the state)", to, err)
	}
	to, err := table.Next(locked, opening)
	if !errors.Is(err, errRefused) || to != "" {
		t.Fatalf("locked + open: %q, %v; want the refusal and no state", to, err)
	}
	if want := "door: refused: open on a locked door"; err.Error() != want {
		t.Errorf("refusal %q; want %q", err, want)
	}
}

func TestLookupAndAllowed(t *testing.T) {
	t.Parallel()
	table := doorTable()
	if to, ok := table.Lookup(open, closing); !ok || to != closed {
		t.Errorf("Lookup(open, close) = %s, %v", to, ok)
	}
	if _, ok := table.Lookup(open, locking); ok {
		t.Error("Lookup(open, lock) allowed")
	}
	if _, ok := table.Lookup("ajar", opening); ok {
		t.Error("Lookup of an unknown state allowed")
	}
	for _, c := range []struct {
		from door
		want []action
	}{
		{closed, []action{opening, closing, locking}}, // in the order of the events, not of the row
		{open, []action{closing}},
		{locked, []action{unlocking}},
		{"ajar", nil},
	} {
		if got := table.Allowed(c.from); !slices.Equal(got, c.want) {
			t.Errorf("Allowed(%s) = %v; want %v", c.from, got, c.want)
		}
	}
}

func TestEventsAndPairs(t *testing.T) {
	t.Parallel()
	table := doorTable()
	events := table.Events()
	events[0] = "kick"
	if got := table.Events(); got[0] != opening {
		t.Errorf("changing the slice Events returned changed the table: %v", got)
	}
	got := map[string]bool{}
	for from, e := range table.Pairs() {
		got[fmt.Sprintf("%s+%s", from, e)] = true
	}
	want := []string{"closed+close", "closed+lock", "closed+open", "locked+unlock", "open+close"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("Pairs = %v; want %v", keys, want)
	}
	for range table.Pairs() {
		break // stopping early is allowed
	}
}
