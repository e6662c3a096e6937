package auth

import (
	"slices"
	"testing"
)

func TestNarrow(t *testing.T) {
	for _, c := range []struct {
		name     string
		scope    []string
		operator string
		want     []string
		ok       bool
	}{
		{"service team, everything", nil, "", nil, true},
		{"service team, one operator", nil, "a", []string{"a"}, true},
		{"operator admin, its scope", []string{"a", "a-sub"}, "", []string{"a", "a-sub"}, true},
		{"operator admin, a sub-operator", []string{"a", "a-sub"}, "a-sub", []string{"a-sub"}, true},
		{"operator admin, another operator", []string{"a", "a-sub"}, "b", nil, false},
	} {
		got, ok := Narrow(c.scope, c.operator)
		if ok != c.ok || !slices.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("%s: Narrow(%v, %q) = %v, %v; want %v, %v", c.name, c.scope, c.operator, got, ok, c.want, c.ok)
		}
	}
}
