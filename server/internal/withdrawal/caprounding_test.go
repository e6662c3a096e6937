package withdrawal_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestCapsAreNeverPassedByRounding: a withdrawal in another fiat than the operator's is
// converted for the caps without rounding it below its worth. What was seen: 92.000000000000000001
// EUR at 0.92 EUR a USD is 100.0000000000000000011 USD, but its cap amount was divided at 16
// decimals (100.0000000000000000) and passed a 100 USD per-transaction cap; two of
// 46.000000000000000001 EUR passed a 100 USD daily cap together. Each is above the cap by its
// exact value and is held CAP_EXCEEDED; an amount exactly at the cap still passes.
func TestCapsAreNeverPassedByRounding(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		perTx, daily   string
		first, second  string // EUR; first is approved (and paid) before second is decided
		wantSecondHeld withdrawal.HeldReason
	}{
		{"per-transaction cap, just above", "100", "1000", "", "92.000000000000000001", withdrawal.CapExceeded},
		{"per-transaction cap, exactly at it", "100", "1000", "", "92", ""},
		{"daily cap, just above", "1000", "100", "46.000000000000000001", "46.000000000000000001", withdrawal.CapExceeded},
		{"daily cap, exactly at it", "1000", "100", "46", "46", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			usd := "USD"
			e, op := setupOperator(t, modeB(domain.OperatorSettings{FiatCurrency: &usd, PerTxCap: &c.perTx, DailyCap: &c.daily}))
			approve := func(user, eur string) withdrawal.Decided {
				t.Helper()
				o, err := e.sessions.Open(e.ctx, op, session.Withdraw, session.Input{ExternalUserID: user, Lang: "en",
					FiatCurrency: "EUR", UserBalance: "1000", Amount: eur})
				if err != nil {
					t.Fatal(err)
				}
				w := e.submit(o.Session, newAddress(), "USDT")
				d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), w.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			if c.first != "" {
				if d := approve("first", c.first); d.Held != "" {
					t.Fatalf("first withdrawal of %s EUR: held %s", c.first, d.Held)
				}
			}
			if d := approve("second", c.second); d.Held != c.wantSecondHeld {
				t.Fatalf("%s EUR: held %q (status %s), want %q", c.second, d.Held, d.Withdrawal.Status, c.wantSecondHeld)
			}
		})
	}
}
