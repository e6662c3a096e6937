package domain

import "slices"

// Scope is the set of operators a caller may see and act for. The zero Scope sees nothing:
// "every operator" is asked for by name (AllOperators), never implied by a missing value.
type Scope struct {
	all bool
	ids []string
}

// AllOperators is the service team's scope.
func AllOperators() Scope { return Scope{all: true} }

// Operators is a scope of the named operators (an operator and its sub-operators, or an
// operator-bound admin's operators).
func Operators(ids ...string) Scope { return Scope{ids: slices.Clone(ids)} }

// All reports whether the scope is every operator.
func (s Scope) All() bool { return s.all }

// IDs are the operators of a limited scope (nil for AllOperators).
func (s Scope) IDs() []string {
	if s.all {
		return nil
	}
	return slices.Clone(s.ids)
}

// Includes reports whether the scope covers the operator.
func (s Scope) Includes(operatorID string) bool {
	return s.all || slices.Contains(s.ids, operatorID)
}

// Narrow limits the scope to one operator ("" keeps it whole). ok is false when the operator
// is outside the scope: the caller answers as if it did not exist.
func (s Scope) Narrow(operatorID string) (narrowed Scope, ok bool) {
	if operatorID == "" {
		return s, true
	}
	if !s.Includes(operatorID) {
		return Scope{}, false
	}
	return Operators(operatorID), true
}

// Filter is the scope as a store filter: every operator, or exactly these (none for the zero
// Scope, which matches no row).
func (s Scope) Filter() (all bool, ids []string) {
	if s.all {
		return true, nil
	}
	if s.ids == nil {
		return false, []string{}
	}
	return false, slices.Clone(s.ids)
}
