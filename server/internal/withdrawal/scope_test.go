package withdrawal_test

import (
	"context"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestZeroScopeSeesNothing: a scope nobody filled in lists, reads and changes nothing; every
// operator is asked for by name (AllOperators).
func TestZeroScopeSeesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	older := f.withdrawal(t, domain.WithdrawalPending)
	newer := f.withdrawal(t, domain.WithdrawalPending)
	svc := withdrawal.New(withdrawal.Deps{Pool: f.pool, River: jobs.NewInserter()}, withdrawal.Config{})

	if list, _, err := svc.List(ctx, domain.Scope{}, domain.WithdrawalFilter{}, ""); err != nil || len(list) != 0 {
		t.Errorf("zero scope lists %d withdrawals, %v", len(list), err)
	}
	if _, _, err := svc.List(ctx, domain.Scope{}, domain.WithdrawalFilter{OperatorIDs: []string{f.op.ID}}, ""); !fault.Is(err, fault.NotFound) {
		t.Errorf("zero scope narrowed to an operator: %v, want NOT_FOUND", err)
	}
	if _, _, err := svc.Get(ctx, domain.Scope{}, older); !fault.Is(err, fault.NotFound) {
		t.Errorf("zero scope reads a withdrawal: %v, want NOT_FOUND", err)
	}
	if _, err := f.apply(domain.Scope{}, withdrawal.Change{ID: older, Action: withdrawal.AdminProcess, Actor: "admin:a"}); !fault.Is(err, fault.NotFound) {
		t.Errorf("zero scope changes a withdrawal: %v, want NOT_FOUND", err)
	}
	for name, scope := range map[string]domain.Scope{"all": domain.AllOperators(), "own": domain.Operators(f.op.ID)} {
		if list, _, err := svc.List(ctx, scope, domain.WithdrawalFilter{}, ""); err != nil || len(list) != 2 {
			t.Errorf("%s: lists %d withdrawals, %v", name, len(list), err)
		}
	}

	// Pages: the token walks newest first; a token of another list or format is refused.
	first, next, err := svc.List(ctx, domain.AllOperators(), domain.WithdrawalFilter{Limit: 1}, "")
	if err != nil || len(first) != 1 || first[0].ID != newer || next == "" {
		t.Fatalf("first page: %+v %q %v", first, next, err)
	}
	second, _, err := svc.List(ctx, domain.AllOperators(), domain.WithdrawalFilter{Limit: 1}, next)
	if err != nil || len(second) != 1 || second[0].ID != older {
		t.Fatalf("second page: %+v %v", second, err)
	}
	for _, bad := range []string{"xyz", next[:len(next)-2], "MTc2Mzg4Mzc1NjAwMDAwMHwxMjM"} {
		if _, _, err := svc.List(ctx, domain.AllOperators(), domain.WithdrawalFilter{}, bad); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("token %q: %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}
