package chaintx

import (
	"errors"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/statemachine/statemachinetest"
)

// TestTable decides every (state, event) pair: a state or an event added without a decision
// for each pair fails here.
func TestTable(t *testing.T) {
	t.Parallel()
	const P, M, R, x = domain.ChainTxPending, domain.ChainTxMined, domain.ChainTxReverted, "refused"
	statemachinetest.Check(t, table(), statemachinetest.Decided[domain.ChainTxState, Event, domain.ChainTxState]{
		States: domain.ChainTxStates(),
		Events: []Event{Mined, Reverted, LeftChain},
		Want: map[domain.ChainTxState][]domain.ChainTxState{
			//  Mined Reverted LeftChain
			P: {M, R, x},
			M: {x, x, P}, // only a reorg takes a mined transaction back; a receipt never does
			R: {x, x, P},
		},
		Refused: x,
		Refusal: func(_ Event, err error) (bool, string) { return errors.Is(err, ErrRefused), "refused" },
	})
}
