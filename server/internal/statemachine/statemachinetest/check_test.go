package statemachinetest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/statemachine"
	"github.com/cofferhq/coffer/server/internal/statemachine/statemachinetest"
)

var errRefused = errors.New("refused")

func lightTable() statemachine.Table[string, string, string] {
	return statemachine.New([]string{"on", "off"}, statemachine.Rows[string, string, string]{
		"dark": {"on": "lit"},
		"lit":  {"off": "dark"},
	}, statemachine.RefuseWith[string, string](errRefused, "light"))
}

func isRefused(_ string, err error) (bool, string) { return errors.Is(err, errRefused), "refused" }

// recorder is a testing.TB that records failures instead of failing the test.
type recorder struct {
	testing.TB

	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	const x = "x"
	for _, c := range []struct {
		name string
		d    statemachinetest.Decided[string, string, string]
		want []string // a word of each failure, in order
	}{
		{"every pair decided", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {"lit", x}, "lit": {x, "dark"}},
		}, nil},
		{"columns in another order", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"off", "on"},
			Want: map[string][]string{"dark": {x, "lit"}, "lit": {"dark", x}},
		}, nil},
		{"a wrong outcome and a wrong refusal", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {"dark", "lit"}, "lit": {x, "dark"}},
		}, []string{"dark + on", "dark + off", "Allowed(dark)"}},
		{"an allowed pair decided refused", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {x, x}, "lit": {x, "dark"}},
		}, []string{"dark + on", "Allowed(dark)"}},
		{"an event not decided", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"on"},
			Want: map[string][]string{"dark": {"lit"}, "lit": {x}},
		}, []string{"decided the events", "Allowed(lit)", "outside"}},
		{"a state not decided", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit", "broken"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {"lit", x}, "lit": {x, "dark"}},
		}, []string{"decided 2 states", "broken: not every event"}},
		{"a short row", statemachinetest.Decided[string, string, string]{
			States: []string{"dark", "lit"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {"lit"}, "lit": {x, "dark"}},
		}, []string{"dark: not every event"}},
		{"the table has a state outside the machine", statemachinetest.Decided[string, string, string]{
			States: []string{"dark"}, Events: []string{"on", "off"},
			Want: map[string][]string{"dark": {"lit", x}},
		}, []string{"lit + off"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.d.Refused, c.d.Refusal = x, isRefused
			r := &recorder{TB: t}
			statemachinetest.Check(r, lightTable(), c.d)
			if len(r.failures) != len(c.want) {
				t.Fatalf("failures %q; want %d mentioning %q", r.failures, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(r.failures[i], w) {
					t.Errorf("failure %q; want it to mention %q", r.failures[i], w)
				}
			}
		})
	}
}
