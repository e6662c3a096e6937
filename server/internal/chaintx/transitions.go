package chaintx

// This file is the chain transaction table, the one source of truth for a stored
// transaction's state: every change (the engine settling it from a receipt, a caller reopening
// one a reorg took away) asks Next first.

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/statemachine"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Event is what moves a transaction. A refused pair is a bug when the service asks, and a
// FAILED_PRECONDITION when the service team does (RequestAction, withdrawal's FailPayout).
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
	// CancelMined: the receipt of a cancel attempt (a 0-value self-send at the nonce) shows it
	// mined: the transaction itself never will be.
	CancelMined Event = "receipt:cancel"
	// Resend and Cancel are the service team's requests on a pending transaction; the worker
	// advancing it carries them out (a new attempt at the same nonce, stored before broadcast).
	// The state stays pending.
	Resend Event = "ops:resend"
	Cancel Event = "ops:cancel"
	// Fail is the service team's verdict on a transaction that can never be mined: reverted at
	// its depth, or pending with its nonce used at depth by a transaction that is none of its
	// attempts. The caller proves it (withdrawal.Service.FailPayout); a transaction that could
	// still be mined is never failed, or a payout decided again would pay twice.
	Fail Event = "ops:fail"
	// NonceFreed: the nonce that proved a failed transaction never mined (used at depth by
	// another transaction, or by its own reverted attempt) is free again: a reorg deeper than
	// the depth took that block away. Its own signed bytes could be mined now, while whatever
	// it paid for was decided again (a withdrawal paid by a new transaction): it is pending
	// again with a cancel requested, so the next advance replaces it at its nonce with a
	// 0-value self-send. Callers prove the nonce free (Engine.CancelFreedNonce).
	NonceFreed Event = "chain:nonce-freed"
)

// Events lists every event.
func Events() []Event {
	return []Event{Mined, Reverted, LeftChain, CancelMined, Resend, Cancel, Fail, NonceFreed}
}

// table is the transition table, by state. A pair that is not in it is refused.
func table() statemachine.Table[domain.ChainTxState, Event, domain.ChainTxState] {
	return statemachine.New(Events(), statemachine.Rows[domain.ChainTxState, Event, domain.ChainTxState]{
		domain.ChainTxPending: {Mined: domain.ChainTxMined, Reverted: domain.ChainTxReverted, CancelMined: domain.ChainTxCancelled,
			Resend: domain.ChainTxPending, Cancel: domain.ChainTxPending, Fail: domain.ChainTxFailed},
		domain.ChainTxMined:     {LeftChain: domain.ChainTxPending},
		domain.ChainTxReverted:  {LeftChain: domain.ChainTxPending, Fail: domain.ChainTxFailed},
		domain.ChainTxCancelled: {LeftChain: domain.ChainTxPending},
		// Failed: its nonce is used at depth by another transaction (or its own reverted one);
		// only a reorg deeper than the depth freeing that nonce moves it again, to its cancel.
		domain.ChainTxFailed: {NonceFreed: domain.ChainTxPending},
	}, statemachine.RefuseWith[domain.ChainTxState, Event](ErrRefused, "transaction"))
}

// ErrRefused marks a transition the table refused.
var ErrRefused = errors.New("chaintx: transition refused")

// Next applies the table: the state after event, or ErrRefused (nothing changes).
func Next(from domain.ChainTxState, event Event) (domain.ChainTxState, error) {
	return table().Next(from, event)
}

// Reopen puts a transaction whose mined attempt left the chain back to pending (LeftChain):
// the next Advance broadcasts its stored bytes again. Only t as the caller read it moves (its
// state and mined hash): one changed meanwhile (marked failed, or mined again as another
// attempt, by another worker) is refused (ErrRefused) and nothing changes.
func (e *Engine) Reopen(ctx context.Context, t domain.ChainTx) error {
	if _, err := Next(t.State, LeftChain); err != nil {
		return fmt.Errorf("reopen transaction %d: %w", t.ID, err)
	}
	ok, err := store.New(e.pool).ReopenChainTx(ctx, t.ID, t.State, t.MinedHash)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("reopen transaction %d: it changed since it was read (%s, %s): %w", t.ID, t.State, t.MinedHash, ErrRefused)
	}
	return nil
}

// CancelFreedNonce puts a failed transaction whose nonce the caller proved free again on the
// chain back to pending with a cancel requested (NonceFreed), with its audit entry: the next
// Advance replaces its stored bytes with a 0-value self-send at its nonce. A transaction not
// failed any more is refused (ErrRefused, nothing changes).
func (e *Engine) CancelFreedNonce(ctx context.Context, t domain.ChainTx, actor domain.Actor, reason string) error {
	if _, err := Next(t.State, NonceFreed); err != nil {
		return fmt.Errorf("cancel transaction %d: %w", t.ID, err)
	}
	ok, err := store.New(e.pool).ReopenFailedToCancel(ctx, t.ID, actor, reason)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("transaction %d is not failed any more: %w", t.ID, ErrRefused)
	}
	return nil
}

// RequestAction records a service-team re-send or cancel of a pending transaction in dbtx, with its
// audit entry; the worker advancing the transaction carries it out. A transaction not pending
// is refused (ErrRefused, nothing changes).
func RequestAction(ctx context.Context, dbtx pgx.Tx, t domain.ChainTx, a domain.TxAction, actor domain.Actor, reason string) error {
	event := map[domain.TxAction]Event{domain.TxResend: Resend, domain.TxCancel: Cancel}[a]
	if _, err := Next(t.State, event); err != nil || event == "" {
		return fmt.Errorf("transaction %d is %s: %w", t.ID, t.State, ErrRefused)
	}
	q := store.New(dbtx)
	ok, err := q.RequestTxAction(ctx, t.ID, a)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("transaction %d is not pending any more: %w", t.ID, ErrRefused)
	}
	return q.InsertTxAction(ctx, t.ID, domain.TxActionRecord{Action: a, Actor: actor, Reason: reason})
}

// MarkFailed moves a transaction the caller proved can never be mined to failed in dbtx, with
// its audit entry, and frees its (purpose, ref).
func MarkFailed(ctx context.Context, dbtx pgx.Tx, t domain.ChainTx, actor domain.Actor, reason string) error {
	to, err := Next(t.State, Fail)
	if err != nil {
		return fmt.Errorf("transaction %d is %s: %w", t.ID, t.State, ErrRefused)
	}
	return resolve(ctx, dbtx, t, to, domain.TxActionRecord{Action: domain.TxFail, Actor: actor, Reason: reason})
}

// Retire frees the (purpose, ref) of a transaction whose cancel was mined (at its depth: the
// caller checks), so its purpose may send again under that ref.
func Retire(ctx context.Context, dbtx pgx.Tx, t domain.ChainTx) error {
	if t.State != domain.ChainTxCancelled {
		return fmt.Errorf("retire transaction %d: it is %s: %w", t.ID, t.State, ErrRefused)
	}
	return resolve(ctx, dbtx, t, t.State, domain.TxActionRecord{})
}

func resolve(ctx context.Context, dbtx pgx.Tx, t domain.ChainTx, to domain.ChainTxState, audit domain.TxActionRecord) error {
	q := store.New(dbtx)
	ok, err := q.ResolveChainTx(ctx, t.ID, t.State, to)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("transaction %d changed meanwhile: %w", t.ID, ErrRefused)
	}
	if audit.Action == "" {
		return nil
	}
	return q.InsertTxAction(ctx, t.ID, audit)
}
