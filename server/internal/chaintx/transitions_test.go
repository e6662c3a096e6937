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
	const P, M, R, C, F, x = domain.ChainTxPending, domain.ChainTxMined, domain.ChainTxReverted, domain.ChainTxCancelled, domain.ChainTxFailed, "refused"
	statemachinetest.Check(t, table(), statemachinetest.Decided[domain.ChainTxState, Event, domain.ChainTxState]{
		States: domain.ChainTxStates(),
		Events: []Event{Mined, Reverted, LeftChain, CancelMined, Resend, Cancel, Fail, NonceFreed},
		Want: map[domain.ChainTxState][]domain.ChainTxState{
			//  Mined Reverted LeftChain CancelMined Resend Cancel Fail NonceFreed
			P: {M, R, x, C, P, P, F, x},
			M: {x, x, P, x, x, x, x, x}, // only a reorg takes a mined transaction back; a receipt never does
			R: {x, x, P, x, x, x, F, x}, // a reverted one is failed by an engineer (at its depth), never re-sent
			C: {x, x, P, x, x, x, x, x}, // the cancel's block left the chain: the nonce is open again
			F: {x, x, x, x, x, x, x, P}, // its nonce used at depth; a deeper reorg freeing it: cancelled at it
		},
		Refused: x,
		Refusal: func(_ Event, err error) (bool, string) { return errors.Is(err, ErrRefused), "refused" },
	})
}
