package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/metrics"
)

// BenchmarkScanSweepCheck: a scanner catching up over 1,000 blocks (two passes of the default
// 500-block window) in which the books have 200 sweep transactions mined, one every fifth
// block, on a new chain and on one with 20,000 sweeps mined before them. Each pass checks
// that the sweeps mined in the blocks it read are still in them (deposit/sweepleft.go:
// sweepsLeftAhead). Each iteration rescans the same blocks from the same cursor. Reported: the
// time per pass, and the RPC calls per pass, all and eth_getBlockByNumber (the pass reads each
// of its blocks once: the sweep check needs no block of its own).
func BenchmarkScanSweepCheck(b *testing.B) {
	for _, history := range []int64{0, 20_000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) { benchSweepCheck(b, history) })
	}
}

func benchSweepCheck(b *testing.B, history int64) {
	b.Helper()
	const blocks, every = 1000, 5
	ctx := context.Background()
	dev, env := startDevCoffer(b, 0, time.Hour, 3)
	awaitScanning(b, env) // the app's own passes, at its start, are done: none races the measured ones
	start := catchUp(ctx, b, env, dev)
	var sent []common.Hash
	var minedIn []int64
	for i := range blocks {
		if i%every != 0 {
			dev.Commit()
			continue
		}
		h, err := dev.SendNative(ctx, common.BigToAddress(big.NewInt(int64(0xbeef0000+i))), big.NewInt(1))
		if err != nil {
			b.Fatal(err)
		}
		r, err := dev.Mine(ctx, h)
		if err != nil {
			b.Fatal(err)
		}
		sent, minedIn = append(sent, h), append(minedIn, r[0].BlockNumber.Int64())
	}
	bookSweeps(ctx, b, env, dev.ChainID(), sent, minedIn, start, history)
	end := start + blocks - 1

	var elapsed time.Duration
	var passes int
	calls := map[string]float64{}
	for b.Loop() {
		b.StopTimer()
		for _, q := range []string{`DELETE FROM chain_blocks WHERE number >= $1`, `UPDATE chain_cursors SET next_block = $1`} {
			if _, err := env.Pool.Exec(ctx, q, start); err != nil {
				b.Fatal(err)
			}
		}
		before := rpcCalls(b)
		b.StartTimer()
		t0 := time.Now()
		for next := start; next <= end; next = cursor(ctx, b, env) {
			if err := env.Services.Deposits.Scan(ctx, dev.ChainID()); err != nil {
				b.Fatal(err)
			}
			passes++
		}
		elapsed += time.Since(t0)
		b.StopTimer()
		for m, n := range rpcCalls(b) {
			calls[m] += n - before[m]
		}
		b.StartTimer()
	}
	total := 0.0
	for _, n := range calls {
		total += n
	}
	perPass := func(n float64) float64 { return n / float64(passes) }
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(passes), "ns/pass")
	b.ReportMetric(perPass(total), "rpc/pass")
	b.ReportMetric(perPass(calls["eth_getBlockByNumber"]), "blocks-read/pass")
	var byMethod []string
	for _, m := range slices.Sorted(maps.Keys(calls)) {
		byMethod = append(byMethod, fmt.Sprintf("%s %.0f", m, perPass(calls[m])))
	}
	fmt.Printf("\nscan catch-up over %d blocks holding %d sweeps (%d sweeps before them): %d passes, %v per pass, "+
		"%.0f RPC calls per pass (%s)\n\n", blocks, len(sent), history, passes,
		(elapsed / time.Duration(passes)).Round(time.Microsecond), perPass(total), strings.Join(byMethod, ", "))
}

// catchUp scans until the cursor is past the chain's head and returns the cursor.
func catchUp(ctx context.Context, b *testing.B, env *apptest.Env, dev *devchain.Chain) int64 {
	b.Helper()
	for {
		head, err := dev.Client().BlockNumber(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := env.Services.Deposits.Scan(ctx, dev.ChainID()); err != nil && !errors.Is(err, deposit.ErrRaced) {
			b.Fatal(err)
		}
		if next := cursor(ctx, b, env); next > int64(head) {
			return next
		}
	}
}

func cursor(ctx context.Context, b *testing.B, env *apptest.Env) int64 {
	b.Helper()
	var next int64
	if err := env.Pool.QueryRow(ctx, `SELECT next_block FROM chain_cursors`).Scan(&next); err != nil {
		b.Fatal(err)
	}
	return next
}

// bookSweeps records in the books, as mined, a done sweep for each transaction sent (its
// transfer), and `history` done sweeps mined below block `below`.
func bookSweeps(ctx context.Context, b *testing.B, env *apptest.Env, chainID int64, sent []common.Hash, minedIn []int64,
	below, history int64) {
	b.Helper()
	hashes := make([]string, len(sent))
	for i, h := range sent {
		hashes[i] = h.Hex()
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`WITH s AS (INSERT INTO sweeps (chain_id, address, status)
				SELECT $1, '0x' || lpad(to_hex(i), 40, '0'), 'DONE' FROM generate_series(1, $2::bigint) i RETURNING id)
			INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, gas_limit, purpose, ref, state, mined_hash, mined_block)
			SELECT $1, 'history', id, '0xbea1', 0, 21000, 'sweep', 'sweep:' || id || ':ETH', 'mined', 'history-' || id, id % $3::bigint FROM s`,
			[]any{chainID, history, below}},
		{`WITH t AS (SELECT * FROM unnest($2::text[], $3::bigint[]) WITH ORDINALITY AS t (hash, block, n)),
			s AS (INSERT INTO sweeps (chain_id, address, status) SELECT $1, 'window-' || n, 'DONE' FROM t RETURNING id, address)
			INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, gas_limit, purpose, ref, state, mined_hash, mined_block)
			SELECT $1, s.address, 0, '0xbea1', 0, 21000, 'sweep', 'sweep:' || s.id || ':ETH', 'mined', t.hash, t.block
			FROM s JOIN t ON s.address = 'window-' || t.n`, []any{chainID, hashes, minedIn}},
		{`VACUUM (ANALYZE) sweeps, chain_txs`, nil},
	} {
		if _, err := env.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			b.Fatal(err)
		}
	}
}

// rpcCalls reads the JSON-RPC calls sent so far, by method (metrics.RPCRequests).
func rpcCalls(b *testing.B) map[string]float64 {
	b.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() {
		metrics.RPCRequests.Collect(ch)
		close(ch)
	}()
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			b.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "method" {
				out[l.GetValue()] += d.GetCounter().GetValue()
			}
		}
	}
	return out
}
