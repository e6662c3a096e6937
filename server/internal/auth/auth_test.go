package auth

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// trees is an operator hierarchy: an operator's tree is itself and its listed descendants.
type trees map[string][]string

func (t trees) Tree(_ context.Context, id string) ([]string, error) {
	if id == "broken" {
		return nil, errors.New("database down")
	}
	return append([]string{id}, t[id]...), nil
}

// TestScope: every kind of caller, the scope it gets.
func TestScope(t *testing.T) {
	t.Parallel()
	hierarchy := trees{"a": {"a-sub"}}
	bg := context.Background()
	opA := WithOperator(bg, domain.Operator{ID: "a"})
	for _, c := range []struct {
		name            string
		ctx             context.Context //nolint:containedctx // the caller a row authenticates is its input
		reach           Reach
		all             bool
		ids             []string // when not all
		unauthenticated bool
	}{
		{"ops token", WithServiceTeam(bg), OwnOperator(), true, nil, false},
		{"service-team admin", WithAdmin(bg, Admin{Admin: domain.Admin{ID: "x"}}), OwnOperator(), true, nil, false},
		{"service-team admin, reach ignored", WithAdmin(bg, Admin{}), SubOperators(hierarchy), true, nil, false},
		{"operator-bound admin", WithAdmin(bg, Admin{Admin: domain.Admin{OperatorID: "a"}, Operators: []string{"a", "a-sub"}}),
			OwnOperator(), false, []string{"a", "a-sub"}, false},
		{"operator-bound admin, tree unresolved: nothing, not everything", WithAdmin(bg, Admin{Admin: domain.Admin{OperatorID: "a"}}),
			OwnOperator(), false, []string{}, false},
		{"operator key, own operator", opA, OwnOperator(), false, []string{"a"}, false},
		{"operator key, with sub-operators", opA, SubOperators(hierarchy), false, []string{"a", "a-sub"}, false},
		{"leaf operator key, with sub-operators", WithOperator(bg, domain.Operator{ID: "a-sub"}), SubOperators(hierarchy),
			false, []string{"a-sub"}, false},
		{"no credential", bg, OwnOperator(), false, []string{}, true},
	} {
		got, err := Scope(c.ctx, c.reach)
		if c.unauthenticated {
			if !fault.Is(err, fault.Unauthenticated) {
				t.Errorf("%s: error %v, want UNAUTHENTICATED", c.name, err)
			}
		} else if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		all, ids := got.Filter()
		if all != c.all || (!c.all && !slices.Equal(ids, c.ids)) {
			t.Errorf("%s: scope all=%v ids=%v, want all=%v ids=%v", c.name, all, ids, c.all, c.ids)
		}
	}
	if _, err := Scope(WithOperator(bg, domain.Operator{ID: "broken"}), SubOperators(hierarchy)); err == nil {
		t.Error("a failed tree lookup gave a scope")
	}
}

// TestOperatorIDs: the store's spelling keeps "every operator" (nil) apart from "none" (empty).
func TestOperatorIDs(t *testing.T) {
	t.Parallel()
	if ids := OperatorIDs(domain.AllOperators()); ids != nil {
		t.Errorf("all operators: %v, want nil", ids)
	}
	if ids := OperatorIDs(domain.Scope{}); ids == nil || len(ids) != 0 {
		t.Errorf("zero scope: %#v, want empty and not nil", ids)
	}
	if ids := OperatorIDs(domain.Operators()); ids == nil || len(ids) != 0 {
		t.Errorf("no operators: %#v, want empty and not nil", ids)
	}
	if ids := OperatorIDs(domain.Operators("a", "b")); !slices.Equal(ids, []string{"a", "b"}) {
		t.Errorf("two operators: %v", ids)
	}
}

// TestOwnOrSub: an operator key reads its own records, or a sub-operator's it names; any
// other operator is NOT_FOUND (never PERMISSION_DENIED), and the tree is not looked up for
// the caller's own records.
func TestOwnOrSub(t *testing.T) {
	t.Parallel()
	hierarchy := trees{"a": {"a-sub"}, "broken": {"x"}}
	bg := context.Background()
	opA, sub := WithOperator(bg, domain.Operator{ID: "a"}), WithOperator(bg, domain.Operator{ID: "a-sub"})
	for _, c := range []struct {
		name       string
		ctx        context.Context //nolint:containedctx // the caller a row authenticates is its input
		operatorID string
		ids        []string // nil: NOT_FOUND
	}{
		{"own records", opA, "", []string{"a"}},
		{"own id named", opA, "a", []string{"a"}},
		{"a sub-operator named", opA, "a-sub", []string{"a-sub"}},
		{"a sub-operator named in capitals", opA, "A-SUB", []string{"a-sub"}},
		{"an unrelated operator", opA, "b", nil},
		{"the parent, by its sub-operator", sub, "a", nil},
		{"a broken tree, own records: no lookup", WithOperator(bg, domain.Operator{ID: "broken"}), "", []string{"broken"}},
		{"ops token narrowed", WithServiceTeam(bg), "b", []string{"b"}},
	} {
		got, err := OwnOrSub(c.ctx, hierarchy, c.operatorID)
		if c.ids == nil {
			if !fault.Is(err, fault.NotFound) {
				t.Errorf("%s: %v, want NOT_FOUND", c.name, err)
			}
			continue
		}
		if _, ids := got.Filter(); err != nil || !slices.Equal(ids, c.ids) {
			t.Errorf("%s: %v %v, want %v", c.name, ids, err, c.ids)
		}
	}
	if _, err := OwnOrSub(bg, hierarchy, ""); !fault.Is(err, fault.Unauthenticated) {
		t.Errorf("no credential: %v, want UNAUTHENTICATED", err)
	}
	if _, err := OwnOrSub(WithOperator(bg, domain.Operator{ID: "broken"}), hierarchy, "x"); err == nil || fault.Is(err, fault.NotFound) {
		t.Errorf("a failed tree lookup: %v, want the lookup's error", err)
	}
}
