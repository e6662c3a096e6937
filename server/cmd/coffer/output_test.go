package main

import (
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// printTable's cells print as the commands' former Fprintf verbs did (%d, %s, %t), aligned
// two spaces apart; an empty list prints its message, or the bare header without one.
func TestPrintTable(t *testing.T) {
	t.Parallel()
	type row struct {
		id     int64
		scope  domain.PauseScope
		amount decimal.Decimal
		by     domain.Actor
		ok     bool
	}
	rows := []row{
		{7, domain.PauseGlobal, decimal.RequireFromString("0.50"), domain.ServiceTeamActor("cli:oncall"), true},
		{12345, domain.PauseChain, decimal.RequireFromString("100"), "system", false},
	}
	cells := func(r row) []any { return []any{r.id, r.scope, r.amount, r.by, r.ok, orDash("")} }
	// The former way: a tabwriter and one Fprintf a row.
	var want strings.Builder
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCOPE\tAMOUNT\tBY\tOK\tNOTE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%t\t%s\n", r.id, r.scope, r.amount, r.by, r.ok, "-")
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.String(), "12345  chain   100     system                   false  -\n") {
		t.Fatalf("the reference is not aligned as expected:\n%s", want.String())
	}
	for _, tc := range []struct {
		name, empty string
		rows        []row
		want        string
	}{
		{"rows", "nothing", rows, want.String()},
		{"empty with a message", "nothing", nil, "nothing\n"},
		{"empty without one", "", nil, "ID  SCOPE  AMOUNT  BY  OK  NOTE\n"},
	} {
		var b strings.Builder
		if err := printTable(&b, tc.empty, "ID\tSCOPE\tAMOUNT\tBY\tOK\tNOTE", tc.rows, cells); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n%q\nwant\n%q", tc.name, b.String(), tc.want)
		}
	}
}
