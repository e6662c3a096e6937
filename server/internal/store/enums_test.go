package store_test

import (
	"context"
	"regexp"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestEnumsMatchSchema reads, after every migration, the CHECK constraint that lists each
// enumerated column's values and asserts it lists exactly the domain's constants: a status
// added (or renamed) in Go without a migration, or in a migration without Go, fails here
// rather than at the first INSERT in production.
func TestEnumsMatchSchema(t *testing.T) {
	t.Parallel()
	q := store.New(testdb.New(t))
	resolutions := []string{}
	for _, r := range domain.ReorgResolutions() {
		if r != domain.ReorgOpen { // open is NULL, not a value
			resolutions = append(resolutions, string(r))
		}
	}
	cases := []struct {
		table, column string
		want          []string
	}{
		{"deposits", "status", values(domain.DepositStatuses())},
		{"withdrawals", "status", values(domain.WithdrawalStatuses())},
		{"withdrawals", "approval_mode", values(domain.ApprovalModes())},
		{"operators", "approval_mode", values(domain.ApprovalModes())},
		{"sweeps", "status", values(domain.SweepStatuses())},
		{"sweep_batches", "status", values(domain.SweepBatchStatuses())},
		{"chain_txs", "state", values(domain.ChainTxStates())},
		{"payout_pauses", "scope", values(domain.PauseScopes())},
		{"chain_tx_actions", "action", values(domain.TxActions())},
		{"chain_txs", "requested_action", values([]domain.TxAction{domain.TxResend, domain.TxCancel})},
		{"webhook_events", "state", values(domain.DeliveryStates())},
		{"webhook_events", "event_type", values([]domain.EventType{domain.EventDeposit, domain.EventWithdrawRequest,
			domain.EventWithdrawComplete})},
		{"deposit_reorgs", "resolution", resolutions},
		{"deposit_reorg_actions", "action", append([]string{domain.ReorgDetected}, resolutions...)},
		{"sessions", "kind", values([]domain.SessionKind{domain.SessionDeposit, domain.SessionWithdraw})},
		{"sweep_carries", "kind", []string{store.CarryCarried, store.CarryTaken}},
		{"fund_entries", "kind", values([]domain.FundKind{domain.FundDeposit, domain.FundTreasury, domain.FundReserve,
			domain.FundSettle, domain.FundRelease, domain.FundAdjustment, domain.FundReorg, domain.FundReinstate})},
	}
	for _, c := range cases {
		got := checkedValues(t, q, c.table, c.column)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s.%s: the schema allows %q, Go has %q", c.table, c.column, got, want)
		}
	}
}

// TestDepositReorgPriorStatuses: a reorg records the status it took the deposit from, and
// every value the schema allows there is a deposit status.
func TestDepositReorgPriorStatuses(t *testing.T) {
	t.Parallel()
	q := store.New(testdb.New(t))
	for _, v := range checkedValues(t, q, "deposit_reorgs", "prior_status") {
		if !slices.Contains(domain.DepositStatuses(), domain.DepositStatus(v)) {
			t.Errorf("deposit_reorgs.prior_status allows %q, which is no deposit status", v)
		}
	}
}

var quoted = regexp.MustCompile(`'((?:[^']|'')*)'::text`)

// checkedValues are the values the column's one-column CHECK (col IN (...)) constraint allows,
// sorted. The test fails unless there is exactly one such constraint.
func checkedValues(t *testing.T, q *store.Queries, table, column string) []string {
	t.Helper()
	defs := testfactory.Column[string](context.Background(), t, q.DB(), `
		SELECT pg_get_constraintdef(c.oid)
		FROM pg_constraint c
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
		WHERE c.contype = 'c' AND c.conrelid = $1::regclass AND a.attname = $2 AND cardinality(c.conkey) = 1
		  AND pg_get_constraintdef(c.oid) LIKE '%= ANY (ARRAY[%'`, table, column)
	if len(defs) != 1 {
		t.Fatalf("%s.%s: want one CHECK (%s IN (...)) constraint, found %q", table, column, column, defs)
	}
	var out []string
	for _, m := range quoted.FindAllStringSubmatch(defs[0], -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

func values[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	return out
}
