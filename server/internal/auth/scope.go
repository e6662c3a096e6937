package auth

import (
	"context"
	"strings"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// Subtrees resolves an operator and every sub-operator below it (operator.Service.Tree).
type Subtrees interface {
	Tree(ctx context.Context, operatorID string) ([]string, error)
}

// Reach is how far an operator key reaches: its own operator (withdrawals), or also its
// sub-operators (balances, test webhooks). Admins and the ops token are not affected by it.
type Reach struct{ subs Subtrees }

// OwnOperator reaches the calling operator only.
func OwnOperator() Reach { return Reach{} }

// SubOperators reaches the calling operator and its sub-operators, resolved by t.
func SubOperators(t Subtrees) Reach { return Reach{subs: t} }

// Scope is the operators the authenticated caller may see and act for, decided here and
// nowhere else:
//
//   - the ops token (the service team): every operator;
//   - an admin: see Admin.Scope;
//   - an operator key: that operator, and with SubOperators its sub-operators too;
//   - no credential: UNAUTHENTICATED, with the zero Scope (which sees nothing).
func Scope(ctx context.Context, reach Reach) (domain.Scope, error) {
	if serviceTeam(ctx) {
		return domain.AllOperators(), nil
	}
	if a, ok := AdminFrom(ctx); ok {
		return a.Scope(), nil
	}
	op, ok := Operator(ctx)
	if !ok {
		return domain.Scope{}, fault.New(fault.Unauthenticated, "credential required")
	}
	if reach.subs == nil {
		return domain.Operators(op.ID), nil
	}
	tree, err := reach.subs.Tree(ctx, op.ID)
	if err != nil {
		return domain.Scope{}, err
	}
	return domain.Operators(tree...), nil
}

// Scope is an admin's scope: a service-team admin (bound to no operator) sees every operator;
// an operator-bound admin its operator and sub-operators (Operators), never every operator,
// even when those could not be resolved.
func (a Admin) Scope() domain.Scope {
	if a.OperatorID == "" {
		return domain.AllOperators()
	}
	return domain.Operators(a.Operators...)
}

// OperatorIDs is a scope as the store's operator filters spell it: nil for every operator,
// else exactly these ids (empty but not nil for the zero Scope, so it matches no row).
func OperatorIDs(s domain.Scope) []string {
	all, ids := s.Filter()
	if all {
		return nil
	}
	return ids
}

// NarrowedIDs is scope narrowed to the operator a request names (asked: one operator of the
// scope; none, "" or a list of several keep it whole) as the store's operator filters spell it
// (OperatorIDs); an operator outside the scope is NOT_FOUND, as if it did not exist.
func NarrowedIDs(scope domain.Scope, asked ...string) ([]string, error) {
	one := ""
	if len(asked) == 1 {
		// Scopes hold ids as the database spells them (lower case); a UUID may be asked in any.
		one = strings.ToLower(asked[0])
	}
	narrowed, ok := scope.Narrow(one)
	if !ok {
		return nil, fault.New(fault.NotFound, "operator not found")
	}
	return OperatorIDs(narrowed), nil
}

// OwnOrSub is the scope of an operator key reading its own records: the calling operator, or,
// naming operatorID, that one of its sub-operators. Any other operator is NOT_FOUND, as if it
// did not exist (never PERMISSION_DENIED: an operator learns nothing of the others). The ops
// token and admins get their scope narrowed to operatorID the same way.
func OwnOrSub(ctx context.Context, subs Subtrees, operatorID string) (domain.Scope, error) {
	operatorID = strings.ToLower(operatorID)
	if op, ok := Operator(ctx); ok && !serviceTeam(ctx) {
		if _, admin := AdminFrom(ctx); !admin && (operatorID == "" || operatorID == op.ID) {
			return domain.Operators(op.ID), nil
		}
	}
	tree, err := Scope(ctx, SubOperators(subs))
	if err != nil {
		return domain.Scope{}, err
	}
	scope, ok := tree.Narrow(operatorID)
	if !ok {
		return domain.Scope{}, fault.New(fault.NotFound, "operator %s is not one of your sub-operators", operatorID)
	}
	return scope, nil
}
