package chaintx

// This file is the chain transaction table, the one source of truth for a stored
// transaction's state: every change (the engine settling it from a receipt, a caller reopening
// one a reorg took away) asks Next first.

import (
	"context"
	"errors"
	"fmt"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/statemachine"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Event is what moves a transaction. Only the service acts on transactions, so a refused
// pair is a bug: Next reports it as an internal error.
type Event string

// Events. Storing a signed transaction (pending) is not a transition.
const (
	// Mined: an attempt's receipt shows it mined and successful.
	Mined Event = "receipt:success"
	// Reverted: an attempt's receipt shows it mined and reverted.
	Reverted Event = "receipt:reverted"
	// LeftChain: the block of the mined attempt left the chain (a reorg): the transaction is
	// pending again and its stored bytes are sent again — the same nonce, so its value moves
	// at most once. This is the only way back from mined (or reverted); the engine never takes
	// it on its own (a receipt never "un-mines"): the callers that watch a mined transaction
	// to their depth (payouts, reorged deposits' sweeps) do, through Engine.Reopen.
	LeftChain Event = "chain:left"
)

// Events lists every event.
func Events() []Event { return []Event{Mined, Reverted, LeftChain} }

// table is the transition table, by state. A pair that is not in it is refused.
func table() statemachine.Table[domain.ChainTxState, Event, domain.ChainTxState] {
	return statemachine.New(Events(), statemachine.Rows[domain.ChainTxState, Event, domain.ChainTxState]{
		domain.ChainTxPending:  {Mined: domain.ChainTxMined, Reverted: domain.ChainTxReverted},
		domain.ChainTxMined:    {LeftChain: domain.ChainTxPending},
		domain.ChainTxReverted: {LeftChain: domain.ChainTxPending},
	}, statemachine.RefuseWith[domain.ChainTxState, Event](ErrRefused, "transaction"))
}

// ErrRefused marks a transition the table refused.
var ErrRefused = errors.New("chaintx: transition refused")

// Next applies the table: the state after event, or ErrRefused (nothing changes).
func Next(from domain.ChainTxState, event Event) (domain.ChainTxState, error) {
	return table().Next(from, event)
}

// Reopen puts a transaction whose mined attempt left the chain back to pending (LeftChain):
// the next Advance broadcasts its stored bytes again.
func (e *Engine) Reopen(ctx context.Context, t domain.ChainTx) error {
	if _, err := Next(t.State, LeftChain); err != nil {
		return fmt.Errorf("reopen transaction %d: %w", t.ID, err)
	}
	return store.New(e.pool).ReopenChainTx(ctx, t.ID)
}
