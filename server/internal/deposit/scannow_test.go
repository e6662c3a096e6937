package deposit_test

import (
	"testing"
)

// TestScanNowQueuesOnePassPerChain: a worker that starts queues a pass over every chain at
// once, without waiting for River's leader to start the periodic scans; a pass already queued
// (another replica's, or the periodic one) makes it a no-op.
func TestScanNowQueuesOnePassPerChain(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	queued := func() (n int) {
		t.Helper()
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'deposit.scan'
			AND (args->>'chainId')::bigint = $1 AND state = 'available'`, e.dev.ChainID()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := queued(); n != 0 {
		t.Fatalf("%d scans queued before ScanNow", n)
	}
	for range 2 {
		if err := e.svc.ScanNow(e.ctx); err != nil {
			t.Fatal(err)
		}
		if n := queued(); n != 1 {
			t.Fatalf("%d scans queued for the chain, want 1", n)
		}
	}
}
