package session_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestOpenByKey: a session opened with the key checked in its own statement is the session
// Open makes for the key's operator (a deposit session registers its depositor); every case
// that Open or authentication would refuse (unknown, expired or another operator's key, an
// inactive operator, bad input, an operator reference) is ErrNotByKey and writes nothing.
func TestOpenByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, 0)
	other, key, err := f.ops.Create(ctx, domain.OperatorSettings{Name: new("Other"), WebhookURL: new("https://other.example/hook")})
	if err != nil {
		t.Fatal(err)
	}
	opKey := other.ID

	in := input("")
	in.ExternalUserID, in.Email = "user-by-key", "u@example.com"
	o, operatorID, err := f.sessions.OpenByKey(ctx, secret.Digest(key), session.Deposit, in)
	if err != nil || operatorID != opKey {
		t.Fatalf("OpenByKey: %v (operator %q, want %q)", err, operatorID, opKey)
	}
	if o.URL != "https://pay.example/widget/?sid="+o.Session.ID || o.Existing || o.Session.OperatorID != opKey ||
		o.Session.FiatCurrency != "USD" || o.Session.Kind != domain.SessionDeposit || len(o.Session.SessionRef) != 35 ||
		o.Session.ExpiresAt.Sub(o.Session.CreatedAt) != 30*time.Minute {
		t.Fatalf("opened %+v", o)
	}
	stored, err := f.sessions.Lookup(ctx, o.Session.ID)
	if err != nil || stored.OperatorID != opKey || stored.Email != "u@example.com" || !stored.Amount.Equal(o.Session.Amount) {
		t.Fatalf("stored %+v: %v", stored, err)
	}
	if n := testdb.Count(ctx, t, f.pool, `SELECT count(*) FROM depositors WHERE operator_id = $1 AND external_user_id = 'user-by-key'`, opKey); n != 1 {
		t.Fatalf("%d depositors registered", n)
	}
	if _, _, err := f.sessions.OpenByKey(ctx, secret.Digest(key), session.Withdraw, in); err != nil {
		t.Fatalf("withdraw session by key: %v", err)
	}

	sessions := func() int { return testdb.Count(ctx, t, f.pool, `SELECT count(*) FROM sessions`) }
	before := sessions()
	refuse := func(name string, digest []byte, in session.Input) {
		t.Helper()
		if _, _, err := f.sessions.OpenByKey(ctx, digest, session.Deposit, in); !errors.Is(err, session.ErrNotByKey) {
			t.Errorf("%s: %v, want ErrNotByKey", name, err)
		}
	}
	refuse("unknown key", secret.Digest("sk_nobody"), input(""))
	bad := input("")
	bad.Amount = "0"
	refuse("zero amount", secret.Digest(key), bad)
	bad = input("")
	bad.FiatCurrency = "XXX"
	refuse("unpriced currency", secret.Digest(key), bad)
	refuse("operator reference", secret.Digest(key), input("order-1"))
	if _, err := f.pool.Exec(ctx, `UPDATE operator_keys SET expires_at = now() - interval '1 second' WHERE digest = $1`, secret.Digest(key)); err != nil {
		t.Fatal(err)
	}
	refuse("expired key", secret.Digest(key), input(""))
	if _, err := f.pool.Exec(ctx, `UPDATE operator_keys SET expires_at = NULL WHERE digest = $1`, secret.Digest(key)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ops.Update(ctx, opKey, domain.OperatorSettings{Active: new(false)}); err != nil {
		t.Fatal(err)
	}
	refuse("inactive operator", secret.Digest(key), input(""))
	if n := sessions(); n != before {
		t.Fatalf("refusals wrote %d sessions", n-before)
	}
}
