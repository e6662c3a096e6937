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
`, "coffer_deposits", "coffer_chain_cursor_lag_blocks", "coffer_chaintx_pending", "coffer_db_metrics_up", "coffer_webhook_due")
	if n, err := testutil.GatherAndCount(reg, "coffer_webhook_oldest_due_age_seconds"); err != nil || n != 1 {
		t.Fatalf("oldest due age: %d series, %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "coffer_webhook_oldest_due_age_seconds" {
			if age := mf.GetMetric()[0].GetGauge().GetValue(); age < 3590 || age > 3700 {
				t.Fatalf("oldest due age %v s, want the event due an hour ago", age)
			}
		}
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
