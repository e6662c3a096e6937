package store

import (
	"context"
	"math/big"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// Uint256 converts a big.Int for a NUMERIC(78,0) column.
func Uint256(x *big.Int) decimal.Decimal { return decimal.NewFromBigInt(x, 0) }

// EnsureNonce starts an address's nonce sequence at start unless it exists.
func (q *Queries) EnsureNonce(ctx context.Context, chainID int64, address string, start uint64) error {
	return sqlc.EnsureNonce(ctx, q.db, dbsqlc.EnsureNonceParams{ChainID: chainID, Address: address, NextNonce: bigint(start)})
}

// AllocateNonce takes the next nonce of an address. The row stays locked until the caller's
// transaction ends, so allocations of one address are serialised and a rolled-back
// allocation leaves no gap.
func (q *Queries) AllocateNonce(ctx context.Context, chainID int64, address string) (uint64, error) {
	n, err := sqlc.AllocateNonce(ctx, q.db, dbsqlc.AllocateNonceParams{ChainID: chainID, Address: address})
	return chainUint(n), notFound(err)
}

// InsertChainTx stores a new transaction and its first signed attempt.
func (q *Queries) InsertChainTx(ctx context.Context, t domain.ChainTx, a domain.TxAttempt) (int64, error) {
	return sqlc.InsertChainTx(ctx, q.db, dbsqlc.InsertChainTxParams{ChainID: t.ChainID, FromAddress: t.From, Nonce: bigint(t.Nonce),
		ToAddress: t.To, Value: Uint256(t.Value), Data: t.Data, GasLimit: bigint(t.GasLimit), Purpose: t.Purpose, Ref: t.Ref,
		PaysOwnGas: t.PaysOwnGas, Authorizations: t.Authorizations, Hash: a.Hash, Raw: a.Raw, GasTipCap: Uint256(a.TipCap), GasFeeCap: Uint256(a.FeeCap)})
}

// InsertTxAttempt stores a replacement attempt.
func (q *Queries) InsertTxAttempt(ctx context.Context, txID int64, a domain.TxAttempt) error {
	return sqlc.InsertTxAttempt(ctx, q.db, dbsqlc.InsertTxAttemptParams{TxID: txID, Hash: a.Hash, Raw: a.Raw,
		GasTipCap: Uint256(a.TipCap), GasFeeCap: Uint256(a.FeeCap), Value: Uint256(a.Value), Cancel: a.Cancel})
}

// MarkBroadcast records that an attempt was handed to a node.
func (q *Queries) MarkBroadcast(ctx context.Context, attemptID int64) error {
	return sqlc.MarkBroadcast(ctx, q.db, attemptID)
}

// MarkMined records the attempt that was mined; state is mined or reverted. The transaction's
// value becomes the mined attempt's.
func (q *Queries) MarkMined(ctx context.Context, txID int64, state, hash string, block, gasUsed uint64, price *big.Int) error {
	return sqlc.MarkMined(ctx, q.db, dbsqlc.MarkMinedParams{ID: txID, State: domain.ChainTxState(state), MinedHash: hash,
		MinedBlock: bigint(block), GasUsed: bigint(gasUsed), EffectiveGasPrice: Uint256(price)})
}

// MoveMinedBlock records the block mined transaction txID (mined as hash) is in now, read on
// the chain; false when it is no longer mined as hash.
func (q *Queries) MoveMinedBlock(ctx context.Context, txID int64, hash string, block uint64) (bool, error) {
	n, err := sqlc.MoveMinedBlock(ctx, q.db, dbsqlc.MoveMinedBlockParams{ID: txID, MinedHash: hash, MinedBlock: bigint(block)})
	return n > 0, err
}

// chainTxOf maps a chain_txs row to the domain, without its attempts.
func chainTxOf(r dbsqlc.ChainTx) domain.ChainTx {
	t := domain.ChainTx{ID: r.ID, ChainID: r.ChainID, From: r.FromAddress, Nonce: chainUint(r.Nonce), To: r.ToAddress,
		Value: r.Value.BigInt(), Data: r.Data, GasLimit: chainUint(r.GasLimit), Purpose: r.Purpose, Ref: r.Ref, PaysOwnGas: r.PaysOwnGas,
		State: r.State, MinedHash: deref(r.MinedHash), MinedBlock: chainUint(r.MinedBlock.Int64), GasUsed: chainUint(r.GasUsed.Int64),
		CreatedAt: r.CreatedAt, MinedAt: r.MinedAt, Authorizations: r.Authorizations}
	if r.RequestedAction != nil {
		t.RequestedAction = *r.RequestedAction
	}
	if r.EffectiveGasPrice.Valid {
		t.EffectiveGasPrice = r.EffectiveGasPrice.Decimal.BigInt()
	}
	return t
}

// txAttemptOf maps a chain_tx_attempts row to the domain.
func txAttemptOf(r dbsqlc.ChainTxAttempt) domain.TxAttempt {
	return domain.TxAttempt{ID: r.ID, Hash: r.Hash, Raw: r.Raw, TipCap: r.GasTipCap.BigInt(), FeeCap: r.GasFeeCap.BigInt(),
		Value: r.Value.BigInt(), CreatedAt: r.CreatedAt, BroadcastAt: r.BroadcastAt, Cancel: r.Cancel}
}

// withAttempts maps a loaded transaction and reads its attempts, oldest first.
func (q *Queries) withAttempts(ctx context.Context, r dbsqlc.ChainTx, err error) (domain.ChainTx, error) {
	if err != nil {
		return domain.ChainTx{}, notFound(err)
	}
	t := chainTxOf(r)
	attempts, err := sqlc.ChainTxAttempts(ctx, q.db, t.ID)
	for _, a := range attempts {
		t.Attempts = append(t.Attempts, txAttemptOf(a))
	}
	return t, err
}

// ChainTx loads a transaction with its attempts.
func (q *Queries) ChainTx(ctx context.Context, id int64) (domain.ChainTx, error) {
	r, err := sqlc.GetChainTx(ctx, q.db, id)
	return q.withAttempts(ctx, r, err)
}

// ChainTxByRef loads the transaction of a purpose and reference.
func (q *Queries) ChainTxByRef(ctx context.Context, purpose, ref string) (domain.ChainTx, error) {
	r, err := sqlc.ChainTxByRef(ctx, q.db, dbsqlc.ChainTxByRefParams{Purpose: purpose, Ref: ref})
	return q.withAttempts(ctx, r, err)
}

// ChainTxsByRefPrefix lists the transactions of a purpose whose ref starts with prefix, oldest first.
func (q *Queries) ChainTxsByRefPrefix(ctx context.Context, purpose, prefix string) ([]domain.ChainTx, error) {
	ids, err := sqlc.ChainTxIDsByRefPrefix(ctx, q.db, dbsqlc.ChainTxIDsByRefPrefixParams{Purpose: purpose, Prefix: prefix})
	if err != nil {
		return nil, err
	}
	return q.chainTxs(ctx, ids)
}

// LockChainTxState locks a transaction's row until dbtx ends, and says its state and mined
// hash ("" when none) as they are then.
func (q *Queries) LockChainTxState(ctx context.Context, txID int64) (domain.ChainTxState, string, error) {
	r, err := sqlc.LockChainTxState(ctx, q.db, txID)
	return r.State, r.MinedHash, notFound(err)
}

// ReopenChainTx puts a transaction whose mined attempt left the chain (a reorg) back to
// pending, its attempts not broadcast: the next advance sends the stored bytes again at once;
// the nonce stays the same. Only a transaction still in state from with mined hash minedHash
// (as the caller read it) moves: false when it changed meanwhile (nothing changes).
func (q *Queries) ReopenChainTx(ctx context.Context, txID int64, from domain.ChainTxState, minedHash string) (bool, error) {
	return sqlc.ReopenChainTx(ctx, q.db, dbsqlc.ReopenChainTxParams{ID: txID, FromState: from, MinedHash: minedHash})
}

// RequestTxAction asks the worker to re-send or cancel a pending transaction; false when it is
// not pending any more.
func (q *Queries) RequestTxAction(ctx context.Context, txID int64, a domain.TxAction) (bool, error) {
	n, err := sqlc.RequestTxAction(ctx, q.db, dbsqlc.RequestTxActionParams{ID: txID, Action: string(a)})
	return n == 1, err
}

// ClearTxAction records that the worker carried out the request a (a newer one stays).
func (q *Queries) ClearTxAction(ctx context.Context, txID int64, a domain.TxAction) error {
	return sqlc.ClearTxAction(ctx, q.db, dbsqlc.ClearTxActionParams{ID: txID, Action: string(a)})
}

// InsertTxAction writes one entry of a transaction's ops audit trail.
func (q *Queries) InsertTxAction(ctx context.Context, txID int64, r domain.TxActionRecord) error {
	return sqlc.InsertTxAction(ctx, q.db, dbsqlc.InsertTxActionParams{TxID: txID, Action: r.Action, Actor: string(r.Actor), Reason: r.Reason})
}

// TxActions is a transaction's ops audit trail, oldest first.
func (q *Queries) TxActions(ctx context.Context, txID int64) ([]domain.TxActionRecord, error) {
	rows, err := sqlc.TxActions(ctx, q.db, txID)
	out := make([]domain.TxActionRecord, 0, len(rows))
	for _, r := range rows {
		out = append(out, domain.TxActionRecord{Action: r.Action, Actor: domain.Actor(r.Actor), Reason: r.Reason, CreatedAt: r.CreatedAt})
	}
	return out, err
}

// ResolveChainTx moves a transaction from one state to a final one (cancelled or failed) and
// frees its (purpose, ref); false when it was not in from any more.
func (q *Queries) ResolveChainTx(ctx context.Context, txID int64, from, to domain.ChainTxState) (bool, error) {
	n, err := sqlc.ResolveChainTx(ctx, q.db, dbsqlc.ResolveChainTxParams{ID: txID, FromState: from, ToState: to})
	return n == 1, err
}

// ChainTxs lists transactions newest first (at most limit); with stuck, only those pending
// since before stuckBefore and the reverted or cancelled payouts not resolved yet.
func (q *Queries) ChainTxs(ctx context.Context, stuck bool, stuckBefore time.Time, limit int32) ([]domain.ChainTx, error) {
	ids, err := sqlc.ListChainTxIDs(ctx, q.db, dbsqlc.ListChainTxIDsParams{Stuck: stuck, StuckBefore: stuckBefore, MaxRows: limit})
	if err != nil {
		return nil, err
	}
	return q.chainTxs(ctx, ids)
}

// chainTxs loads the transactions of the ids a listing query returned, in its order.
func (q *Queries) chainTxs(ctx context.Context, ids []int64) ([]domain.ChainTx, error) {
	out := make([]domain.ChainTx, 0, len(ids))
	for _, id := range ids {
		t, err := q.ChainTx(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// GapChainTxIDs lists the ids of from's transactions below toNonce that may hold a gap before
// it, lowest nonce first: pending ones, ones mined in the books at or above the chain's nonce
// (fromNonce), and mined cancels not yet retired.
func (q *Queries) GapChainTxIDs(ctx context.Context, chainID int64, from string, fromNonce, toNonce uint64) ([]int64, error) {
	return sqlc.GapChainTxIDs(ctx, q.db, dbsqlc.GapChainTxIDsParams{ChainID: chainID, FromAddress: from,
		FromNonce: int64(fromNonce), ToNonce: int64(toNonce)}) //nolint:gosec // G115: nonces fit an int64
}

// MinedTxIDsFromNonce lists the ids of from's transactions of a purpose that the books have
// mined (an attempt, reverted or not, or their cancel) at or above fromNonce (the sender's nonce on the chain),
// lowest nonce first.
func (q *Queries) MinedTxIDsFromNonce(ctx context.Context, chainID int64, from string, fromNonce uint64, purpose string) ([]int64, error) {
	ids, err := sqlc.MinedTxIDsFromNonce(ctx, q.db, dbsqlc.MinedTxIDsFromNonceParams{ChainID: chainID, FromAddress: from,
		FromNonce: int64(fromNonce), Purpose: purpose}) //nolint:gosec // G115: nonces fit an int64
	return nonNil(ids), err
}

// FailedTxIDsFromNonce lists the ids of from's transactions of a purpose marked failed at or
// above fromNonce (the sender's nonce on the chain: the nonce that proved them never mined is
// free again), lowest nonce first.
func (q *Queries) FailedTxIDsFromNonce(ctx context.Context, chainID int64, from string, fromNonce uint64, purpose string) ([]int64, error) {
	ids, err := sqlc.FailedTxIDsFromNonce(ctx, q.db, dbsqlc.FailedTxIDsFromNonceParams{ChainID: chainID, FromAddress: from,
		FromNonce: int64(fromNonce), Purpose: purpose}) //nolint:gosec // G115: nonces fit an int64
	return nonNil(ids), err
}

// ReopenFailedToCancel puts a failed transaction whose nonce is free again back to pending
// with a cancel requested, and records the request (actor, reason); false when it is not
// failed any more.
func (q *Queries) ReopenFailedToCancel(ctx context.Context, txID int64, actor domain.Actor, reason string) (bool, error) {
	n, err := sqlc.ReopenFailedToCancel(ctx, q.db, dbsqlc.ReopenFailedToCancelParams{ID: txID, Actor: string(actor), Reason: reason})
	return n == 1, err
}

// ResolvedPendingTxIDs lists the ids of the transactions of a purpose pending again after they
// were resolved (a retired cancel whose block left the chain).
func (q *Queries) ResolvedPendingTxIDs(ctx context.Context, purpose string) ([]int64, error) {
	ids, err := sqlc.ResolvedPendingTxIDs(ctx, q.db, purpose)
	return nonNil(ids), err
}
