package withdrawal_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pgxdecimal "github.com/jackc/pgx-shopspring-decimal"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// What was seen: an admin COMPLETED answered 500 although the payout went through. Once the
// decision committed, the call answers its result (the withdrawal paying) even when reading
// the payout afterwards fails because PostgreSQL went away.
func TestAdminCompletedAnswersItsResultAfterItCommitted(t *testing.T) {
	url := testdb.URL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgxdecimal.Register(conn.TypeMap())
		return nil
	}
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		if down.Load() {
			return true, fmt.Errorf("PostgreSQL went away: %w", syscall.ECONNREFUSED)
		}
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := setupChainOn(t, withdrawal.Config{SettleWait: 2 * time.Second}, pool)
	op := e.operator(domain.OperatorSettings{})
	w := e.submit(e.withdrawSession(op, "user-1", "15.00"), newAddress(), "USDT")
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalProcessing, "admin:a@x", ""); err != nil {
		t.Fatal(err)
	}

	// PostgreSQL goes away as soon as the payout is queued: while the call waits for it.
	watch, err := pgx.Connect(e.ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(e.ctx)
	go func() {
		for range 2000 {
			var queued bool
			if err := watch.QueryRow(e.ctx, `SELECT payout_queued_at IS NOT NULL FROM withdrawals WHERE id = $1`, w.ID).Scan(&queued); err == nil && queued {
				down.Store(true)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	got, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a@x", "pay")
	if err != nil || got.Status != "PROCESSING" || got.PayoutQueuedAt == nil {
		t.Fatalf("COMPLETED whose payout was queued before PostgreSQL went away: %+v, %v; want PROCESSING with its payout queued", got.Status, err)
	}
	if !down.Load() {
		t.Fatal("PostgreSQL never went away: the test proved nothing")
	}
	down.Store(false)
	// The retry answers as a repeat: nothing more is queued.
	if again, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a@x", "retry"); err != nil || again.Status != "PROCESSING" {
		t.Fatalf("retry: %+v, %v", again.Status, err)
	}
	var payouts int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM river_job WHERE kind = 'withdrawal.payout'`).Scan(&payouts); err != nil || payouts != 1 {
		t.Fatalf("%d payout jobs (%v), want 1", payouts, err)
	}
}
