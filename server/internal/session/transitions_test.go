package session

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/statemachine/statemachinetest"
)

// TestTable decides every (status, event) pair: a status or an event added without a
// decision for each pair fails here.
func TestTable(t *testing.T) {
	t.Parallel()
	const (
		O, C, E = domain.SessionOpen, domain.SessionCancelled, domain.SessionExpired
		x       = "refused"
	)
	statemachinetest.Check(t, table(), statemachinetest.Decided[domain.SessionStatus, Event, domain.SessionStatus]{
		States: domain.SessionStatuses(),
		Events: []Event{Cancel, Expire},
		Want: map[domain.SessionStatus][]domain.SessionStatus{
			//  Cancel Expire
			O: {C, E},
			C: {C, x}, // cancelling twice is harmless; a cancel is final
			E: {E, x}, // an expired session stays expired
		},
		Refused: x,
		Refusal: func(_ Event, err error) (bool, string) {
			return fault.Is(err, fault.FailedPrecondition), "FAILED_PRECONDITION"
		},
	})
}
