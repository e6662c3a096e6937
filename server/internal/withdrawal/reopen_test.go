package withdrawal_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// What was seen: a mode-B withdrawal the operator approved, whose payout was stopped before it
// was signed (the operator was made inactive) and reopened AWAITING_APPROVAL, was expired by
// the sweep once its 24-hour TTL passed, and every APPROVE after the TTL was held EXPIRED: the
// approved withdrawal could never be paid. The spec expires only withdrawals left unactioned;
// this one was approved, so its TTL no longer applies (as a mode-A withdrawal an admin took
// never expires): the sweep leaves it, and once the operator is active again an APPROVE pays
// it, once.
func TestApprovedWithdrawalOutlivesItsTTLAfterItsPayoutStopped(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	inactive, active := false, true
	op := e.operator(modeB(domain.OperatorSettings{}))
	w := e.submit(e.withdrawSession(op, "user-1", "10.00"), newAddress(), "USDT")
	if d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), w.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), ""); err != nil ||
		d.Held != "" {
		t.Fatalf("APPROVE: %+v %v", d, err)
	}
	e.update(op, domain.OperatorSettings{Active: &inactive})
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || !done {
		t.Fatalf("pay: %v %v", done, err)
	}
	if got := e.get(w.ID); got.Status != domain.WithdrawalAwaitingApproval || got.PayoutQueuedAt != nil || got.HeldReason != "OPERATOR_INACTIVE" {
		t.Fatalf("stopped payout: %+v", got)
	}
	// A day passes while the operator is inactive.
	if _, err := e.pool.Exec(e.ctx, `UPDATE withdrawals SET expires_at = now() - interval '1 second' WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	if swept, err := e.svc.Sweep(e.ctx); err != nil || swept.Expired != 0 {
		t.Fatalf("sweep: %+v %v; want nothing expired", swept, err)
	}
	if got := e.get(w.ID); got.Status != domain.WithdrawalAwaitingApproval {
		t.Fatalf("after the sweep: %s", got.Status)
	}
	e.update(op, domain.OperatorSettings{Active: &active})
	d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), w.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
	if err != nil || d.Held != "" {
		t.Fatalf("APPROVE again: %+v %v; want it paid", d, err)
	}
	e.payAll()
	got := e.get(w.ID)
	if got.Status != domain.WithdrawalCompleted || e.payouts() != 1 {
		t.Fatalf("after APPROVE again: %s, %d payouts", got.Status, e.payouts())
	}
	if bal := e.tokenBalance(common.HexToAddress(got.Address)); bal.Cmp(big.NewInt(10_000_000)) != 0 {
		t.Fatalf("destination holds %v", bal)
	}

	// One nobody approved still expires.
	never := e.submit(e.withdrawSession(op, "user-2", "1.00"), newAddress(), "USDT")
	if _, err := e.pool.Exec(e.ctx, `UPDATE withdrawals SET expires_at = now() - interval '1 second' WHERE id = $1`, never.ID); err != nil {
		t.Fatal(err)
	}
	if d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), never.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), ""); err != nil ||
		d.Held != withdrawal.HeldExpired {
		t.Fatalf("APPROVE past the TTL of an unactioned withdrawal: %+v %v; want held EXPIRED", d, err)
	}
	if swept, err := e.svc.Sweep(e.ctx); err != nil || swept.Expired != 1 || e.get(never.ID).Status != domain.WithdrawalExpired {
		t.Fatalf("sweep of an unactioned withdrawal past its TTL: %+v %v", swept, err)
	}
}
