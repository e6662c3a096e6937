package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestExpiryThatLosesARaceSkipsOnlyThatWithdrawal: the expiry job lists a PENDING withdrawal
// past its TTL while an admin's PROCESSING (decided just before the TTL) holds its row; once
// that decision commits, the expiry of that one withdrawal is refused by the transition table.
// The run goes on: the other lapsed withdrawals expire in the same run, and the decided one
// stays PROCESSING.
func TestExpiryThatLosesARaceSkipsOnlyThatWithdrawal(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{Role: "api"}) // the test runs the sweep itself
	op, _ := env.Operator(t, domain.OperatorSettings{})
	admin, _ := env.Admin(t, op.ID)
	// The raced withdrawal lapsed first, so the job reaches it before the others.
	raced := lapsedWithdrawal(t, env, op, -time.Hour)
	others := []string{lapsedWithdrawal(t, env, op, -time.Minute), lapsedWithdrawal(t, env, op, -time.Second)}

	decision, err := env.Pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = decision.Rollback(context.Background()) }()
	if _, err := withdrawal.Apply(t.Context(), decision, domain.AllOperators(), withdrawal.Change{ID: raced,
		Action: withdrawal.AdminProcess, Actor: domain.AdminActor(admin.ID), Note: "decided before the TTL"}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		swept withdrawal.Swept
		err   error
	}
	done := make(chan result, 1)
	go func() {
		swept, err := env.Services.Withdrawals.Sweep(context.Background())
		done <- result{swept, err}
	}()
	waitForALockWait(t, env)
	if err := decision.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Errorf("the expiry run stopped at the withdrawal an admin decided: %v", got.err)
	}
	if got.swept.Expired != len(others) {
		t.Errorf("the run expired %d withdrawals, want %d", got.swept.Expired, len(others))
	}
	for id, want := range map[string]domain.WithdrawalStatus{raced: domain.WithdrawalProcessing,
		others[0]: domain.WithdrawalExpired, others[1]: domain.WithdrawalExpired} {
		var status string
		if err := env.Pool.QueryRow(t.Context(), `SELECT status FROM withdrawals WHERE id = $1`, id).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != string(want) {
			t.Errorf("withdrawal %s is %s after the run, want %s", id, status, want)
		}
	}
}

// lapsedWithdrawal records a PENDING (mode A) withdrawal whose TTL ended `ago` before now, on a
// session of its own.
func lapsedWithdrawal(t *testing.T, env *apptest.Env, op domain.Operator, ago time.Duration) string {
	t.Helper()
	opened, err := env.Services.Sessions.Open(t.Context(), op, domain.SessionWithdraw, session.Input{ExternalUserID: "lapsed-" + uuid.NewString()[:8],
		Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "25.00"})
	if err != nil {
		t.Fatal(err)
	}
	amount := decimal.RequireFromString("25.00")
	w := env.InsertWithdrawal(t, domain.Withdrawal{ID: uuid.NewString(), OperatorID: op.ID, SessionID: opened.Session.ID,
		ExternalUserID: opened.Session.ExternalUserID, Type: "DIRECT_TRANSFER", ApprovalMode: domain.ApprovalSync,
		Status: domain.WithdrawalPending, ChainID: 1337, Currency: "USDT", ContractAddress: "0x00000000000000000000000000000000000000a1",
		Decimals: 6, Address: destination, FiatCurrency: "USD", FiatAmount: amount, CryptoAmount: decimal.NewFromInt(25_000_000),
		ExpiresAt: time.Now().Add(ago), AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount)})
	return w.ID
}

// waitForALockWait waits until a statement of the test's database waits for a row lock.
func waitForALockWait(t *testing.T, env *apptest.Env) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var waiting bool
		if err := env.Pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("nothing waited for the decided withdrawal's row lock")
}

// TestWithdrawalTTLRunsFromItsRequest: the spec's withdrawal TTL is 24 hours unactioned, so a
// withdrawal expires exactly 24 hours after its requestedAt, in both approval modes. What was
// seen: expiresAt was taken from the clock before the submission's checks, lease and counting
// (and an off-ramp provider's order), requestedAt after them, so a withdrawal requested at
// 07:26:12.912726 expired at 07:26:12.904743 the next day: 8 ms early, as long as an off-ramp
// provider takes in the worst case.
func TestWithdrawalTTLRunsFromItsRequest(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	external, enabled := domain.ApprovalExternal, true
	modes := []struct {
		name     string
		settings domain.OperatorSettings
	}{
		{"synchronous (mode A)", domain.OperatorSettings{}},
		{"external approval (mode B)", domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			_, key := hooks.Operator(t, env, m.settings)
			sid := restSession(t, env, key, "withdraw", "ttl", "USD")
			c := mustREST(t, env, "POST", "/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+destination+`","currency":"USDT","chainId":1337}`)
			id, _ := c.data["withdrawRequestId"].(string)
			if c.status != http.StatusOK || id == "" {
				t.Fatalf("submit: %+v", c)
			}
			got := mustREST(t, env, "GET", "/withdrawals/"+id, key, "")
			requested, err1 := time.Parse(time.RFC3339Nano, fmt.Sprint(got.data["requestedAt"]))
			expires, err2 := time.Parse(time.RFC3339Nano, fmt.Sprint(got.data["expiresAt"]))
			if err := errors.Join(err1, err2); err != nil {
				t.Fatalf("withdrawal %v: %v", got.data, err)
			}
			if ttl := expires.Sub(requested); ttl != 24*time.Hour {
				t.Errorf("requestedAt %s, expiresAt %s: a TTL of %s, want 24h", requested.Format(time.RFC3339Nano),
					expires.Format(time.RFC3339Nano), ttl)
			}
		})
	}
}
