package auth

import (
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestNarrowedIDs: naming no operator (or "", or several) keeps the scope whole, as the
// store's filters spell it (nil: every operator); naming one of it narrows to it; naming one
// outside it is NOT_FOUND.
func TestNarrowedIDs(t *testing.T) {
	t.Parallel()
	two := domain.Operators("a", "b")
	cases := []struct {
		name     string
		scope    domain.Scope
		asked    []string
		want     []string
		notFound bool
	}{
		{"every operator, none asked", domain.AllOperators(), nil, nil, false},
		{"every operator, one asked", domain.AllOperators(), []string{"c"}, []string{"c"}, false},
		{"none asked", two, nil, []string{"a", "b"}, false},
		{"empty asked", two, []string{""}, []string{"a", "b"}, false},
		{"several asked", two, []string{"a", "c"}, []string{"a", "b"}, false},
		{"one of the scope", two, []string{"b"}, []string{"b"}, false},
		{"one outside it", two, []string{"c"}, nil, true},
		{"the zero scope", domain.Scope{}, nil, []string{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := NarrowedIDs(c.scope, c.asked...)
			if c.notFound {
				if !fault.Is(err, fault.NotFound) || got != nil {
					t.Fatalf("NarrowedIDs = %v, %v; want NOT_FOUND", got, err)
				}
				return
			}
			slices.Sort(got)
			if err != nil || !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
				t.Fatalf("NarrowedIDs = %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
}
