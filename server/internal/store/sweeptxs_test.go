package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/store"
)

// TestSweepTxsMinedInListsOnlyItsBlocks: a scan pass catching up over blocks 10..20 lists the
// sweep transactions the books have mined in those blocks only (each once per sweep it moved,
// a batch once per sweep of it), not the thousand mined above the window, nor those below it,
// nor another chain's, a reverted one, or a gas top-up whose ref names a sweep. A rollback
// (SweepTxsMinedFrom) still lists every one above its fork.
func TestSweepTxsMinedInListsOnlyItsBlocks(t *testing.T) {
	t.Parallel()
	ctx, pool, q, _ := setupOperatorPool(t)
	const chainID, other = 1337, 99
	s1, s2 := insertSweep(ctx, t, pool, chainID, "0xa1", 0), insertSweep(ctx, t, pool, chainID, "0xa2", 0)
	batch := scalar(ctx, t, pool, `INSERT INTO sweep_batches (chain_id) VALUES ($1) RETURNING id`, chainID)
	s3, s4 := insertSweep(ctx, t, pool, chainID, "0xb3", batch), insertSweep(ctx, t, pool, chainID, "0xb4", batch)
	s5 := insertSweep(ctx, t, pool, other, "0xa1", 0)

	transfer := insertTx(ctx, t, pool, chainID, "sweep", fmt.Sprintf("sweep:%d:USDT", s1), "mined", 10)
	fee := insertTx(ctx, t, pool, chainID, "sweep-fee", fmt.Sprintf("sweep:%d:USDT", s1), "mined", 20)
	batched := insertTx(ctx, t, pool, chainID, "sweep-batch", fmt.Sprintf("batch:%d", batch), "mined", 15)
	below := insertTx(ctx, t, pool, chainID, "sweep", fmt.Sprintf("sweep:%d:USDC", s2), "mined", 9)
	insertTx(ctx, t, pool, chainID, "sweep", fmt.Sprintf("sweep:%d:ETH", s1), "reverted", 11)
	insertTx(ctx, t, pool, chainID, "gas", fmt.Sprintf("sweep:%d#1", s2), "mined", 12)
	insertTx(ctx, t, pool, other, "sweep", fmt.Sprintf("sweep:%d:USDT", s5), "mined", 12)
	// A thousand sweeps mined above the window, each with its transfer.
	if _, err := pool.Exec(ctx, `WITH s AS (INSERT INTO sweeps (chain_id, address, status)
			SELECT $1, '0x' || lpad(to_hex(i), 40, '0'), 'DONE' FROM generate_series(1, 1000) i RETURNING id)
		INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, gas_limit, purpose, ref, state, mined_hash, mined_block)
		SELECT $1, 'above', id, '0xbea1', 0, 21000, 'sweep', 'sweep:' || id || ':USDT', 'mined', 'above-' || id, 20 + id FROM s`,
		chainID); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name     string
		from, to uint64
		want     []store.SweepTx
	}{
		{"the window", 10, 20, []store.SweepTx{sweepTx(s1, transfer, 10), sweepTx(s1, fee, 20), sweepTx(s3, batched, 15),
			sweepTx(s4, batched, 15)}},
		{"one block", 9, 9, []store.SweepTx{sweepTx(s2, below, 9)}},
		{"blocks with none", 11, 14, []store.SweepTx{}},
	} {
		got, err := q.SweepTxsMinedIn(ctx, chainID, c.from, c.to)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s (%d..%d): %+v, want %+v", c.name, c.from, c.to, got, c.want)
		}
	}
	all, err := q.SweepTxsMinedFrom(ctx, chainID, 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1001 || all[0] != sweepTx(s1, fee, 20) || all[1000].MinedBlock == 0 {
		t.Errorf("from block 16 on: %d transactions (first %+v), want the fee transfer and the thousand above", len(all), all[0])
	}
}

// sweepTx is the row SweepTxsMinedIn lists for transaction txID, mined as hashOf(txID).
func sweepTx(sweepID, txID int64, block uint64) store.SweepTx {
	return store.SweepTx{SweepID: sweepID, TxID: txID, MinedHash: hashOf(txID), MinedBlock: block}
}

func hashOf(txID int64) string { return fmt.Sprintf("0xtx%d", txID) }

// insertSweep stores a done sweep of address on a chain: in batch when non-zero.
func insertSweep(ctx context.Context, t *testing.T, pool *pgxpool.Pool, chainID int64, address string, batch int64) int64 {
	t.Helper()
	return scalar(ctx, t, pool, `INSERT INTO sweeps (chain_id, address, status, batched, batch_id)
		VALUES ($1, $2, 'DONE', $3::bigint <> 0, nullif($3::bigint, 0)) RETURNING id`, chainID, address, batch)
}

// insertTx stores a chain transaction read in state in block, mined as hashOf(its id).
func insertTx(ctx context.Context, t *testing.T, pool *pgxpool.Pool, chainID int64, purpose, ref, state string, block int64) int64 {
	t.Helper()
	id := scalar(ctx, t, pool, `INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, gas_limit, purpose, ref,
		state, mined_block) VALUES ($1, $2, 0, '0xbea1', 0, 21000, $3, $4, $5, $6) RETURNING id`,
		chainID, purpose+ref, purpose, ref, state, block)
	if _, err := pool.Exec(ctx, `UPDATE chain_txs SET mined_hash = $2 WHERE id = $1`, id, hashOf(id)); err != nil {
		t.Fatal(err)
	}
	return id
}

func scalar(ctx context.Context, t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(ctx, sql, args...).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
