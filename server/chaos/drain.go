package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Drain waits, after the load and the faults, until the system has settled or the deadline
// passes: every payment credited, no payout in flight, every decision the run is making made,
// no webhook still to be delivered before the deadline, no job running long or still working.
// It returns what was still open at the end (empty when settled).
func Drain(ctx context.Context, s *Stack, l *Load, deadline time.Time, logf func(string, ...any)) []string {
	var open []string
	lastLog := time.Now()
	for {
		open = unsettled(ctx, s, l, deadline)
		if len(open) == 0 {
			time.Sleep(3 * time.Second) // a duplicate webhook or payout would show up here
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return open
		}
		if time.Since(lastLog) > 30*time.Second {
			logf("draining: %s", strings.Join(open, "; "))
			lastLog = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
}

func unsettled(ctx context.Context, s *Stack, l *Load, deadline time.Time) []string {
	var open []string
	count := func(what, query string, args ...any) {
		var n int
		if err := s.DB.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			open = append(open, fmt.Sprintf("%s: %v", what, err))
		} else if n > 0 {
			open = append(open, fmt.Sprintf("%d %s", n, what))
		}
	}
	payments, withdrawals := l.Ledger.Snapshot()
	var hashes []string
	for _, p := range payments {
		hashes = append(hashes, strings.ToLower(p.Tx.Hex()))
	}
	count("payments not credited yet", `SELECT count(*) FROM unnest($1::text[]) h
		WHERE NOT EXISTS (SELECT 1 FROM deposits d WHERE lower(d.tx_hash) = h AND d.status = 'CREDITED')`, hashes)
	count("payouts in flight", `SELECT count(*) FROM withdrawals WHERE payout_queued_at IS NOT NULL AND status <> 'COMPLETED'`)
	count("webhook events due before the drain deadline", `SELECT count(*) FROM webhook_events e
		JOIN webhook_queue q ON q.event_id = e.id
		WHERE e.state = 'pending' AND NOT e.sync AND NOT e.test AND q.next_attempt_at < $1`, deadline)
	count("jobs running for more than 30 s", `SELECT count(*) FROM river_job WHERE state = 'running' AND attempted_at < now() - interval '30 seconds'`)
	count("settle or payout jobs still working", `SELECT count(*) FROM river_job
		WHERE kind IN ('deposit.settle', 'withdrawal.payout') AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`)
	acked := map[string]bool{}
	for _, d := range l.recv.Deliveries() {
		if d.Acked && d.Event == "WITHDRAW_REQUEST" {
			acked[d.Form.Get("withdrawRequestId")] = true
		}
	}
	undecided := 0
	for _, w := range withdrawals {
		if d, _ := w.Decision(); d == "" && (w.Operator.Mode == "A" || acked[w.ID]) {
			undecided++
		}
	}
	if undecided > 0 {
		open = append(open, fmt.Sprintf("%d withdrawals the run is still finalizing", undecided))
	}
	return open
}
