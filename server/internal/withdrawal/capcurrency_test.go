package withdrawal_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestCapsCountInTheOperatorsCurrencyOfTheDecision: the caps are in the operator's platform
// currency as it is when a withdrawal is approved. An operator moved from GBP to USD (caps
// 100 GBP, then 126 USD, the same money at 0.79 GBP per USD) is held CAP_EXCEEDED on a
// withdrawal of 100 GBP submitted before the move (126.58 USD), and on 36 USD after 90 GBP was
// paid that day (113.92 + 36 USD): the GBP amounts are converted, not read as dollars.
func TestCapsCountInTheOperatorsCurrencyOfTheDecision(t *testing.T) {
	t.Parallel()
	gbp, usd := "GBP", "USD"
	e, op := setupOperator(t, modeB(domain.OperatorSettings{FiatCurrency: &gbp, PerTxCap: new("100"), DailyCap: new("100")}))
	session := func(user, currency, amount string) domain.Session {
		t.Helper()
		o, err := e.sessions.Open(e.ctx, op, session.Withdraw, session.Input{ExternalUserID: user, Lang: "en", FiatCurrency: currency,
			UserBalance: "1000", Amount: amount})
		if err != nil {
			t.Fatal(err)
		}
		return o.Session
	}
	approve := func(w domain.Withdrawal) withdrawal.Decided {
		t.Helper()
		d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), w.ID, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	paid := e.submit(session("paid", "GBP", "90"), newAddress(), "USDT")
	if d := approve(paid); d.Held != "" {
		t.Fatalf("90 GBP within 100 GBP caps: held %s", d.Held)
	}
	e.payAll()
	waiting := e.submit(session("waiting", "GBP", "100"), newAddress(), "USDT")

	e.update(op, domain.OperatorSettings{FiatCurrency: &usd, PerTxCap: new("126"), DailyCap: new("300")})
	if d := approve(waiting); d.Held != withdrawal.CapExceeded {
		t.Fatalf("100 GBP (126.58 USD) against a 126 USD per-transaction cap: held %q, status %s", d.Held, d.Withdrawal.Status)
	}
	e.update(op, domain.OperatorSettings{PerTxCap: new("1000"), DailyCap: new("126")})
	if d := approve(e.submit(session("after", "USD", "36"), newAddress(), "USDT")); d.Held != withdrawal.CapExceeded {
		t.Fatalf("36 USD after 90 GBP (113.92 USD) paid, against a 126 USD daily cap: held %q, status %s", d.Held, d.Withdrawal.Status)
	}
	if n := e.payouts(); n != 1 {
		t.Fatalf("%d payouts, want the first withdrawal's only", n)
	}
}
