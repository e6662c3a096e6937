package metrics_test

import (
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestDBCollector reads the gauges from a real database, and a deposit that settles moves from
// its open status to CREDITED on the next scrape (the recount of settled deposits is skipped
// only while the open ones stay the same).
func TestDBCollector(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := t.Context()
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO operators (id, name, webhook_url) VALUES ('00000000-0000-0000-0000-000000000001', 'x', 'http://x')`)
	exec(`INSERT INTO deposits (operator_id, external_user_id, chain_id, tx_hash, log_index, block_number, block_hash, address,
		address_index, currency, decimals, gross_amount, status, idempotency_key)
		SELECT '00000000-0000-0000-0000-000000000001', 'u', 1, 'h' || i, 0, i, 'b', 'a', 0, 'USDT', 6, 1,
		CASE WHEN i <= 2 THEN 'SWEEPING' ELSE 'CREDITED' END, 'k' || i FROM generate_series(1, 5) i`)
	exec(`INSERT INTO chain_cursors (chain_id, genesis_hash, next_block, head_block) VALUES (1, '0x0', 91, 100)`)
	exec(`INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, gas_limit, purpose, ref, created_at)
		VALUES (1, '0xAbC0000000000000000000000000000000000001', 7, '0x02', 0, 21000, 'payout', 'w1', now() - interval '10 minutes'),
		       (1, '0x0000000000000000000000000000000000000009', 0, '0x02', 0, 21000, 'sweep', 'd1', now())`)
	exec(`INSERT INTO webhook_events (id, operator_id, event_type, subject_id, body)
		SELECT ('00000000-0000-0000-0000-00000000000' || i)::uuid, '00000000-0000-0000-0000-000000000001', 'DEPOSIT', i::text, 'b'
		FROM generate_series(1, 3) i`)
	exec(`INSERT INTO webhook_queue (event_id, operator_id, next_attempt_at)
		SELECT ('00000000-0000-0000-0000-00000000000' || i)::uuid, '00000000-0000-0000-0000-000000000001',
			now() + (i - 2) * interval '1 hour' FROM generate_series(1, 3) i`)
	exec(`DELETE FROM webhook_queue WHERE event_id = '00000000-0000-0000-0000-000000000003'`)
	exec(`UPDATE webhook_events SET state = 'dead', dead_at = now() WHERE id = '00000000-0000-0000-0000-000000000003'`)
	exec(`INSERT INTO river_job (args, kind, max_attempts, state, scheduled_at, attempted_at, finalized_at)
		VALUES ('{}', 'sweep', 5, 'available', now() - interval '1 minute', NULL, NULL),
		       ('{}', 'sweep', 5, 'available', now() - interval '2 minutes', NULL, NULL),
		       ('{}', 'sweep', 5, 'running', now() - interval '1 hour', now(), NULL),
		       ('{}', 'payout', 5, 'scheduled', now() + interval '1 hour', NULL, NULL),
		       ('{}', 'payout', 5, 'completed', now() - interval '1 hour', now(), now())`)
	reg := prometheus.NewRegistry()
	reg.MustRegister(&metrics.DBCollector{Pool: pool, Wallets: map[string]string{"0xabc0000000000000000000000000000000000001": "hot_wallet"}})
	expect := func(want string, names ...string) {
		t.Helper()
		if err := testutil.GatherAndCompare(reg, stringsReader(want), names...); err != nil {
			t.Fatal(err)
		}
	}
	expect(`
# HELP coffer_deposits Deposits by status, chain and currency (asset).
# TYPE coffer_deposits gauge
coffer_deposits{chain_id="1",currency="USDT",status="CREDITED"} 3
coffer_deposits{chain_id="1",currency="USDT",status="SWEEPING"} 2
# HELP coffer_chain_cursor_lag_blocks Head lag: the chain head minus the scanned cursor, in blocks, per chain.
# TYPE coffer_chain_cursor_lag_blocks gauge
coffer_chain_cursor_lag_blocks{chain_id="1"} 10
# HELP coffer_chain_head_block Latest chain head the scanner saw, per chain.
# TYPE coffer_chain_head_block gauge
coffer_chain_head_block{chain_id="1"} 100
# HELP coffer_chain_scanned_block Last block the scanner has read (its cursor), per chain.
# TYPE coffer_chain_scanned_block gauge
coffer_chain_scanned_block{chain_id="1"} 90
# HELP coffer_chaintx_pending Signed chain transactions not mined yet, per chain and sending wallet (gas_tank, hot_wallet, deposit, other).
# TYPE coffer_chaintx_pending gauge
coffer_chaintx_pending{chain_id="1",wallet="deposit"} 1
coffer_chaintx_pending{chain_id="1",wallet="hot_wallet"} 1
# HELP coffer_db_metrics_up 1 when the last scrape's PostgreSQL-derived metrics were read in time, else 0 (and those metrics are missing).
# TYPE coffer_db_metrics_up gauge
coffer_db_metrics_up 1
# HELP coffer_webhook_due Outbox webhooks due for an attempt now (the backlog operators' drains work through).
# TYPE coffer_webhook_due gauge
coffer_webhook_due 2
# HELP coffer_webhook_dead_letters Webhook events dead-lettered (all attempts failed) and not redelivered yet.
# TYPE coffer_webhook_dead_letters gauge
coffer_webhook_dead_letters 1
# HELP coffer_river_jobs River jobs not finished, by kind and state (available, scheduled, retryable, running).
# TYPE coffer_river_jobs gauge
coffer_river_jobs{kind="payout",state="scheduled"} 1
coffer_river_jobs{kind="sweep",state="available"} 2
coffer_river_jobs{kind="sweep",state="running"} 1
`, "coffer_deposits", "coffer_chain_cursor_lag_blocks", "coffer_chain_head_block", "coffer_chain_scanned_block",
		"coffer_chaintx_pending", "coffer_db_metrics_up", "coffer_webhook_due", "coffer_webhook_dead_letters", "coffer_river_jobs")
	if n, err := testutil.GatherAndCount(reg, "coffer_webhook_oldest_due_age_seconds"); err != nil || n != 1 {
		t.Fatalf("oldest due age: %d series, %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ages := map[string][2]float64{ // the one series' bounds, in seconds
		"coffer_webhook_oldest_due_age_seconds":     {3590, 3700}, // the event due an hour ago
		"coffer_river_oldest_available_age_seconds": {115, 200},   // the sweep due two minutes ago
		"coffer_chain_scan_lag_seconds":             {0, 60},      // the cursor just written
	}
	for _, mf := range mfs {
		want, ok := ages[mf.GetName()]
		if !ok {
			continue
		}
		if ms := mf.GetMetric(); len(ms) != 1 || ms[0].GetGauge().GetValue() < want[0] || ms[0].GetGauge().GetValue() > want[1] {
			t.Fatalf("%s: %v, want one series in %v s", mf.GetName(), ms, want)
		}
		delete(ages, mf.GetName())
	}
	if len(ages) > 0 {
		t.Fatalf("missing: %v", ages)
	}
	exec(`UPDATE deposits SET status = 'CREDITED' WHERE block_number = 1`)
	expect(`
# HELP coffer_deposits Deposits by status, chain and currency (asset).
# TYPE coffer_deposits gauge
coffer_deposits{chain_id="1",currency="USDT",status="CREDITED"} 4
coffer_deposits{chain_id="1",currency="USDT",status="SWEEPING"} 1
`, "coffer_deposits")
	// A lost database: the scrape still answers, with coffer_db_metrics_up 0.
	pool.Close()
	expect(`
# HELP coffer_db_metrics_up 1 when the last scrape's PostgreSQL-derived metrics were read in time, else 0 (and those metrics are missing).
# TYPE coffer_db_metrics_up gauge
coffer_db_metrics_up 0
`, "coffer_db_metrics_up", "coffer_deposits")
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
