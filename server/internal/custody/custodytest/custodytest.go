// Package custodytest fills a test database with one secret of every kind the master key
// seals, and checks that each still opens, through the code that uses it, with a given set of
// master keys: the tests of master key rotation share it.
package custodytest

import (
	"bytes"
	"context"
	"encoding/base32"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// Fixture is a database's secrets and what they are in clear.
type Fixture struct {
	Pool      *pgxpool.Pool
	Operators map[string][][]byte // operator id → its keys in clear, newest first
	TOTP      map[string][]byte   // admin id → TOTP secret
	Wallet    wallet.PublicRecord
}

// Values is the number of sealed values Populate makes with n operators: the seed, the
// public record, n+1 operator keys (the first operator's was rotated), 2 TOTP secrets.
func Values(operators int) int { return 2 + operators + 1 + 2 }

// Populate fills a database as a running service would, under box: the HD wallet, n
// operators (the first with a rotated key, so two keys) and three admins, two with TOTP. With
// legacyKey set (the key box seals under), the seed and the first operator's keys are then
// rewritten in the format of before key ids, as an old database holds them.
func Populate(t testing.TB, pool *pgxpool.Pool, box *secret.Box, operators int, legacyKey []byte) *Fixture {
	t.Helper()
	ctx := context.Background()
	f := &Fixture{Pool: pool, Operators: map[string][][]byte{}, TOTP: map[string][]byte{}}
	keys, err := wallet.Load(ctx, pool, box)
	if err != nil {
		t.Fatal(err)
	}
	f.Wallet = keys.Public().Record()
	ops := operator.New(pool, box)
	var first string
	for i := range operators {
		name, hook := fmt.Sprintf("Op %d", i), "https://op.example/hook"
		op, key, err := ops.Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook})
		if err != nil {
			t.Fatal(err)
		}
		f.Operators[op.ID] = [][]byte{[]byte(key)}
		if i == 0 {
			first = op.ID
			next, _, err := ops.RotateKey(ctx, op.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			f.Operators[op.ID] = [][]byte{[]byte(next), []byte(key)}
		}
	}
	admins := admin.New(pool, box, admin.Options{})
	for i := range 3 {
		a, uri, err := admins.Create(ctx, fmt.Sprintf("a%d-%s@coffer.test", i, secret.Token("")[:8]), "correct horse battery staple", "", i < 2)
		if err != nil {
			t.Fatal(err)
		}
		if uri != "" {
			f.TOTP[a.ID] = totpSecret(t, uri)
		}
	}
	if legacyKey != nil {
		var sealed []byte
		if err := pool.QueryRow(ctx, `SELECT sealed FROM wallet_seed`).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		seed, err := box.Open(sealed, wallet.SeedContext)
		if err != nil {
			t.Fatal(err)
		}
		Exec(t, pool, `UPDATE wallet_seed SET sealed = $1`, secret.SealV1ForTest(legacyKey, seed, wallet.SeedContext))
		for _, k := range f.Operators[first] {
			Exec(t, pool, `UPDATE operator_keys SET sealed = $1 WHERE operator_id = $2 AND digest = $3`,
				secret.SealV1ForTest(legacyKey, k, operator.KeyContext(first)), first, secret.Digest(string(k)))
		}
	}
	return f
}

func totpSecret(t testing.TB, uri string) []byte {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	b, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(u.Query().Get("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Exec runs a statement or fails the test.
func Exec(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// Check opens every secret with box through the code that uses it (the wallet as a worker and
// as an API replica, operator signing keys, TOTP secrets) and compares it with the clear.
func (f *Fixture) Check(box *secret.Box) error {
	ctx := context.Background()
	keys, err := wallet.Load(ctx, f.Pool, box)
	if err != nil {
		return err
	}
	if keys.Public().Record() != f.Wallet {
		return errors.New("wallet changed")
	}
	if p, err := wallet.LoadPublic(ctx, f.Pool, box); err != nil || p.Record() != f.Wallet {
		return fmt.Errorf("wallet public record: %w", err)
	}
	ops := operator.New(f.Pool, box)
	for id, want := range f.Operators {
		got, err := ops.SigningKeys(ctx, id)
		if err != nil {
			return fmt.Errorf("operator %s: %w", id, err)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			return fmt.Errorf("operator %s: keys changed", id)
		}
	}
	for id, want := range f.TOTP {
		var sealed []byte
		if err := f.Pool.QueryRow(ctx, `SELECT totp_sealed FROM admins WHERE id = $1`, id).Scan(&sealed); err != nil {
			return err
		}
		got, err := box.Open(sealed, admin.TOTPContext(id))
		if err != nil {
			return fmt.Errorf("admin %s TOTP: %w", id, err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("admin %s TOTP changed", id)
		}
	}
	return nil
}
