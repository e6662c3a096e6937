package store

import (
	"context"
	"math/big"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// Uint256 converts a big.Int for a NUMERIC(78,0) column.
func Uint256(x *big.Int) decimal.Decimal { return decimal.NewFromBigInt(x, 0) }

// EnsureNonce starts an address's nonce sequence at start unless it exists.
func (q *Queries) EnsureNonce(ctx context.Context, chainID int64, address string, start uint64) error {
	_, err := q.db.Exec(ctx, `INSERT INTO chain_nonces (chain_id, address, next_nonce) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, chainID, address, int64(start))
	return err
}

// AllocateNonce takes the next nonce of an address. The row stays locked until the caller's
// transaction ends, so allocations of one address are serialised and a rolled-back
// allocation leaves no gap.
func (q *Queries) AllocateNonce(ctx context.Context, chainID int64, address string) (uint64, error) {
	var n int64
	err := q.db.QueryRow(ctx, `UPDATE chain_nonces SET next_nonce = next_nonce + 1 WHERE chain_id = $1 AND address = $2
		RETURNING next_nonce - 1`, chainID, address).Scan(&n)
	return uint64(n), notFound(err)
}

// InsertChainTx stores a new transaction and its first signed attempt.
func (q *Queries) InsertChainTx(ctx context.Context, t domain.ChainTx, a domain.TxAttempt) (int64, error) {
	var id int64
	err := q.db.QueryRow(ctx, `
		WITH tx AS (
			INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref, pays_own_gas)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $14) RETURNING id
		), attempt AS (
			INSERT INTO chain_tx_attempts (tx_id, hash, raw, gas_tip_cap, gas_fee_cap, value)
			SELECT id, $10, $11, $12, $13, $5 FROM tx
		) SELECT id FROM tx`,
		t.ChainID, t.From, int64(t.Nonce), t.To, Uint256(t.Value), t.Data, int64(t.GasLimit), t.Purpose, t.Ref,
		a.Hash, a.Raw, Uint256(a.TipCap), Uint256(a.FeeCap), t.PaysOwnGas).Scan(&id)
	return id, err
}

// InsertTxAttempt stores a replacement attempt.
func (q *Queries) InsertTxAttempt(ctx context.Context, txID int64, a domain.TxAttempt) error {
	_, err := q.db.Exec(ctx, `INSERT INTO chain_tx_attempts (tx_id, hash, raw, gas_tip_cap, gas_fee_cap, value)
		VALUES ($1, $2, $3, $4, $5, $6)`, txID, a.Hash, a.Raw, Uint256(a.TipCap), Uint256(a.FeeCap), Uint256(a.Value))
	return err
}

// MarkBroadcast records that an attempt was handed to a node.
func (q *Queries) MarkBroadcast(ctx context.Context, attemptID int64) error {
	_, err := q.db.Exec(ctx, `UPDATE chain_tx_attempts SET broadcast_at = now() WHERE id = $1`, attemptID)
	return err
}

// MarkMined records the attempt that was mined; state is mined or reverted. The transaction's
// value becomes the mined attempt's.
func (q *Queries) MarkMined(ctx context.Context, txID int64, state, hash string, block, gasUsed uint64, price *big.Int) error {
	_, err := q.db.Exec(ctx, `UPDATE chain_txs SET state = $2, mined_hash = $3, mined_block = $4, gas_used = $5,
		effective_gas_price = $6, mined_at = now(),
		value = coalesce((SELECT value FROM chain_tx_attempts WHERE tx_id = $1 AND hash = $3), value)
		WHERE id = $1 AND state = 'pending'`,
		txID, state, hash, int64(block), int64(gasUsed), Uint256(price))
	return err
}

const chainTxColumns = `id, chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref, pays_own_gas, state,
	COALESCE(mined_hash, ''), COALESCE(mined_block, 0), COALESCE(gas_used, 0), effective_gas_price, created_at, mined_at`

func (q *Queries) chainTx(ctx context.Context, where string, args ...any) (domain.ChainTx, error) {
	var t domain.ChainTx
	var value decimal.Decimal
	var price decimal.NullDecimal
	var nonce, gas, block, used int64
	err := q.db.QueryRow(ctx, `SELECT `+chainTxColumns+` FROM chain_txs WHERE `+where, args...).Scan(
		&t.ID, &t.ChainID, &t.From, &nonce, &t.To, &value, &t.Data, &gas, &t.Purpose, &t.Ref, &t.PaysOwnGas, &t.State,
		&t.MinedHash, &block, &used, &price, &t.CreatedAt, &t.MinedAt)
	if err != nil {
		return t, notFound(err)
	}
	t.Nonce, t.GasLimit, t.MinedBlock, t.GasUsed, t.Value = uint64(nonce), uint64(gas), uint64(block), uint64(used), value.BigInt()
	if price.Valid {
		t.EffectiveGasPrice = price.Decimal.BigInt()
	}
	rows, err := q.db.Query(ctx, `SELECT id, hash, raw, gas_tip_cap, gas_fee_cap, value, created_at, broadcast_at
		FROM chain_tx_attempts WHERE tx_id = $1 ORDER BY id`, t.ID)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	for rows.Next() {
		var a domain.TxAttempt
		var tip, cap, v decimal.Decimal
		if err := rows.Scan(&a.ID, &a.Hash, &a.Raw, &tip, &cap, &v, &a.CreatedAt, &a.BroadcastAt); err != nil {
			return t, err
		}
		a.TipCap, a.FeeCap, a.Value = tip.BigInt(), cap.BigInt(), v.BigInt()
		t.Attempts = append(t.Attempts, a)
	}
	return t, rows.Err()
}

// ChainTx loads a transaction with its attempts.
func (q *Queries) ChainTx(ctx context.Context, id int64) (domain.ChainTx, error) {
	return q.chainTx(ctx, `id = $1`, id)
}

// ChainTxByRef loads the transaction of a purpose and reference.
func (q *Queries) ChainTxByRef(ctx context.Context, purpose, ref string) (domain.ChainTx, error) {
	return q.chainTx(ctx, `purpose = $1 AND ref = $2`, purpose, ref)
}

// ChainTxsByRefPrefix lists the transactions of a purpose whose ref starts with prefix, oldest first.
func (q *Queries) ChainTxsByRefPrefix(ctx context.Context, purpose, prefix string) ([]domain.ChainTx, error) {
	rows, err := q.db.Query(ctx, `SELECT id FROM chain_txs WHERE purpose = $1 AND starts_with(ref, $2) ORDER BY id`, purpose, prefix)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
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

// ReopenChainTx puts a transaction whose mined attempt left the chain (a reorg) back to
// pending, its attempts not broadcast: the next advance sends the stored bytes again at once;
// the nonce stays the same.
func (q *Queries) ReopenChainTx(ctx context.Context, txID int64) error {
	_, err := q.db.Exec(ctx, `
		WITH t AS (
			UPDATE chain_txs SET state = 'pending', mined_hash = NULL, mined_block = NULL, gas_used = NULL,
				effective_gas_price = NULL, mined_at = NULL
			WHERE id = $1 AND state <> 'pending' RETURNING id
		)
		UPDATE chain_tx_attempts SET broadcast_at = NULL WHERE tx_id IN (SELECT id FROM t)`, txID)
	return err
}
