package chaintx

import (
	"errors"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestTable decides every (state, event) pair: a state or an event added without a decision
// for each pair fails here.
func TestTable(t *testing.T) {
	const P, M, R, x = domain.ChainTxPending, domain.ChainTxMined, domain.ChainTxReverted, "refused"
	events := []Event{Mined, Reverted, LeftChain}
	want := map[domain.ChainTxState][]domain.ChainTxState{
		//  Mined Reverted LeftChain
		P: {M, R, x},
		M: {x, x, P}, // only a reorg takes a mined transaction back; a receipt never does
		R: {x, x, P},
	}
	if len(events) != len(Events()) || len(want) != len(domain.ChainTxStates()) {
		t.Fatalf("decided %v × %d states; the package has %v × %v", events, len(want), Events(), domain.ChainTxStates())
	}
	for _, from := range domain.ChainTxStates() {
		row := want[from]
		if len(row) != len(events) {
			t.Errorf("%s: not every event decided", from)
			continue
		}
		for i, e := range events {
			to, err := Next(from, e)
			switch {
			case row[i] == x && !errors.Is(err, ErrRefused):
				t.Errorf("%s + %s: %s, %v; want refused", from, e, to, err)
			case row[i] != x && (err != nil || to != row[i]):
				t.Errorf("%s + %s: %s, %v; want %s", from, e, to, err, row[i])
			}
		}
	}
	for k := range transitions() {
		if !slices.Contains(domain.ChainTxStates(), k.from) || !slices.Contains(Events(), k.event) || !slices.Contains(events, k.event) {
			t.Errorf("the table has %s + %s, outside the decided states and events", k.from, k.event)
		}
	}
}
