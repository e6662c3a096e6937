package session

import (
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestTable decides every (status, event) pair: a status or an event added without a
// decision for each pair fails here.
func TestTable(t *testing.T) {
	const (
		O, C, E = domain.SessionOpen, domain.SessionCancelled, domain.SessionExpired
		x       = "refused"
	)
	events := []Event{Cancel, Expire}
	want := map[domain.SessionStatus][]domain.SessionStatus{
		//  Cancel Expire
		O: {C, E},
		C: {C, x}, // cancelling twice is harmless; a cancel is final
		E: {E, x}, // an expired session stays expired
	}
	if len(events) != len(Events()) || len(want) != len(domain.SessionStatuses()) {
		t.Fatalf("decided %v × %d statuses; the package has %v × %v", events, len(want), Events(), domain.SessionStatuses())
	}
	for _, from := range domain.SessionStatuses() {
		row := want[from]
		if len(row) != len(events) {
			t.Errorf("%s: not every event decided", from)
			continue
		}
		for i, e := range events {
			to, err := Next(from, e)
			switch {
			case row[i] == x && !fault.Is(err, fault.FailedPrecondition):
				t.Errorf("%s + %s: %s, %v; want FAILED_PRECONDITION", from, e, to, err)
			case row[i] != x && (err != nil || to != row[i]):
				t.Errorf("%s + %s: %s, %v; want %s", from, e, to, err, row[i])
			}
		}
	}
	for k := range transitions() {
		if !slices.Contains(domain.SessionStatuses(), k.from) || !slices.Contains(events, k.event) {
			t.Errorf("the table has %s + %s, outside the decided statuses and events", k.from, k.event)
		}
	}
}
