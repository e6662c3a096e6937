package operator_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func setup(t *testing.T) (*operator.Service, func(string) []byte) {
	t.Helper()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	dump := func(id string) []byte { // every stored byte of an operator's keys
		var b []byte
		rows, _ := pool.Query(context.Background(), `SELECT digest || sealed || convert_to(prefix, 'UTF8') FROM operator_keys WHERE operator_id = $1`, id)
		for rows.Next() {
			var r []byte
			if err := rows.Scan(&r); err != nil {
				t.Fatal(err)
			}
			b = append(b, r...)
		}
		rows.Close()
		return b
	}
	s := operator.New(pool, box)
	s.SetCurrencies(rates.DevStatic())
	return s, dump
}

func TestCreateAndAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dump := setup(t)
	op, key, err := s.Create(ctx, domain.OperatorSettings{Name: new(" Acme "), WebhookURL: new("https://acme.example/hook"),
		ApprovalMode: new(domain.ApprovalMode("external")), FiatCurrency: new("eur"), PerTxCap: new("100.50")})
	if err != nil {
		t.Fatal(err)
	}
	if op.Name != "Acme" || op.ApprovalMode != "EXTERNAL" || op.FiatCurrency != "EUR" || !op.Active {
		t.Fatalf("operator %+v", op)
	}
	if !strings.HasPrefix(key, "sk_") || len(key) != 67 {
		t.Fatalf("key %q", key)
	}
	if bytes.Contains(dump(op.ID), []byte(key[3:])) {
		t.Fatal("the key is stored in clear")
	}
	got, err := s.Authenticate(ctx, key)
	if err != nil || got.ID != op.ID {
		t.Fatalf("authenticate: %v %v", got.ID, err)
	}
	for _, bad := range []string{"", "sk_", key + "x", "adm_" + key[3:], strings.ToUpper(key)} {
		if _, err := s.Authenticate(ctx, bad); !fault.Is(err, fault.Unauthenticated) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
	// An inactive operator still authenticates (it may query and decide; it cannot open sessions).
	if _, err := s.Update(ctx, op.ID, domain.OperatorSettings{Active: new(false)}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Authenticate(ctx, key); err != nil || got.Active {
		t.Fatalf("inactive: %+v %v", got, err)
	}
}

// TestFiatCurrencyMustBePriced: create and update refuse a platform currency without a rate
// (INVALID_ARGUMENT on fiatCurrency, listing the supported ones) and change nothing; priced
// ones are accepted in any case; with no rate table only USD is.
func TestFiatCurrencyMustBePriced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	op, _, err := s.Create(ctx, domain.OperatorSettings{Name: new("A"), WebhookURL: new("https://a.example"), FiatCurrency: new("gbp")})
	if err != nil || op.FiatCurrency != "GBP" {
		t.Fatalf("create GBP: %+v %v", op, err)
	}
	for _, code := range []string{"JPY", "xyz"} {
		_, _, err := s.Create(ctx, domain.OperatorSettings{Name: new("B"), WebhookURL: new("https://b.example"), FiatCurrency: new(code)})
		fe := fault.As(err)
		if fe.Code != fault.InvalidArgument || fe.Field != "fiatCurrency" || !strings.Contains(fe.Message, "EUR, GBP, USD") ||
			!strings.Contains(fe.Message, strings.ToUpper(code)) {
			t.Errorf("create %s: %v", code, err)
		}
		if _, err := s.Update(ctx, op.ID, domain.OperatorSettings{FiatCurrency: new(code), Name: new("renamed")}); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("update %s: %v", code, err)
		}
	}
	if got, _ := s.Get(ctx, op.ID); got.FiatCurrency != "GBP" || got.Name != "A" {
		t.Fatalf("a refused update changed the operator: %+v", got)
	}
	if list, _ := s.List(ctx, ""); len(list) != 1 {
		t.Fatalf("refused creates left %d operators", len(list))
	}
	if got, err := s.Update(ctx, op.ID, domain.OperatorSettings{FiatCurrency: new("eur")}); err != nil || got.FiatCurrency != "EUR" {
		t.Fatalf("update EUR: %+v %v", got, err)
	}
	box, _ := secret.NewBox(secret.Random(32))
	bare := operator.New(testdb.New(t), box)
	if _, _, err := bare.Create(ctx, domain.OperatorSettings{Name: new("C"), WebhookURL: new("https://c.example"), FiatCurrency: new("EUR")}); !strings.Contains(fault.As(err).Message, "supported currencies: USD") {
		t.Fatalf("no rate table: %v", err)
	}
}

func TestRotateKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	op, oldKey, _ := s.Create(ctx, domain.OperatorSettings{Name: new("A"), WebhookURL: new("https://a.example")})
	newKey, exp, err := s.RotateKey(ctx, op.ID, time.Hour)
	if err != nil || newKey == oldKey {
		t.Fatal(err)
	}
	if d := time.Until(exp); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("grace ends in %v", d)
	}
	for _, k := range []string{oldKey, newKey} {
		if _, err := s.Authenticate(ctx, k); err != nil {
			t.Fatalf("during grace: %v", err)
		}
	}
	keys, err := s.SigningKeys(ctx, op.ID)
	if err != nil || len(keys) != 2 || string(keys[0]) != newKey || string(keys[1]) != oldKey {
		t.Fatalf("signing keys: %q %v", keys, err)
	}
	prefixes, _ := s.KeyPrefixes(ctx, op.ID)
	if len(prefixes) != 2 || prefixes[0] != operator.Prefix(newKey) {
		t.Fatalf("prefixes %v", prefixes)
	}
	// Rotating again with no grace revokes every earlier key at once.
	newest, _, err := s.RotateKey(ctx, op.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{oldKey, newKey} {
		if _, err := s.Authenticate(ctx, k); !fault.Is(err, fault.Unauthenticated) {
			t.Fatalf("revoked key still works: %v", err)
		}
	}
	if keys, _ := s.SigningKeys(ctx, op.ID); len(keys) != 1 || string(keys[0]) != newest {
		t.Fatalf("signing keys after revocation: %q", keys)
	}
	if _, _, err := s.RotateKey(ctx, "00000000-0000-4000-8000-000000000000", 0); !fault.Is(err, fault.NotFound) {
		t.Fatalf("rotate unknown operator: %v", err)
	}
}

func TestSettingsValidationAndTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	for name, in := range map[string]domain.OperatorSettings{
		"no name":        {WebhookURL: new("https://a.example")},
		"no webhook":     {Name: new("A")},
		"ftp webhook":    {Name: new("A"), WebhookURL: new("ftp://a.example")},
		"relative url":   {Name: new("A"), WebhookURL: new("/hook")},
		"credentials":    {Name: new("A"), WebhookURL: new("https://u:p@a.example")},
		"mode":           {Name: new("A"), WebhookURL: new("https://a.example"), ApprovalMode: new(domain.ApprovalMode("MANUAL"))},
		"negative cap":   {Name: new("A"), WebhookURL: new("https://a.example"), DailyCap: new("-1")},
		"fee":            {Name: new("A"), WebhookURL: new("https://a.example"), DepositFeeBps: new(int32(10001))},
		"unknown parent": {Name: new("A"), WebhookURL: new("https://a.example"), ParentID: new("00000000-0000-4000-8000-000000000000")},
	} {
		if _, _, err := s.Create(ctx, in); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("%s: %v", name, err)
		}
	}
	root, _, _ := s.Create(ctx, domain.OperatorSettings{Name: new("Root"), WebhookURL: new("https://r.example")})
	child, _, _ := s.Create(ctx, domain.OperatorSettings{Name: new("Child"), WebhookURL: new("https://c.example"), ParentID: &root.ID})
	grandchild, _, _ := s.Create(ctx, domain.OperatorSettings{Name: new("Grandchild"), WebhookURL: new("https://g.example"), ParentID: &child.ID})
	if _, err := s.Update(ctx, root.ID, domain.OperatorSettings{ParentID: &grandchild.ID}); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("cycle accepted: %v", err)
	}
	tree, _ := s.Tree(ctx, root.ID)
	if len(tree) != 3 {
		t.Fatalf("tree %v", tree)
	}
	// Detaching makes the child a root.
	if op, err := s.Update(ctx, child.ID, domain.OperatorSettings{ParentID: new("")}); err != nil || op.ParentID != "" {
		t.Fatalf("detach: %+v %v", op, err)
	}
	if tree, _ := s.Tree(ctx, root.ID); len(tree) != 1 {
		t.Fatalf("tree after detach %v", tree)
	}
}

// TestDepositFeeBound: a deposit fee above MaxDepositFeeBps (50%) is refused on create and on
// update, INVALID_ARGUMENT naming depositFeeBps, and changes nothing. At 100% a native deposit
// leaves nothing to pay its sweep's gas and is never credited.
func TestDepositFeeBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	op, _, err := s.Create(ctx, domain.OperatorSettings{Name: new("Acme"), WebhookURL: new("https://a.example"), DepositFeeBps: new(int32(150))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bps int32
		ok  bool
	}{{0, true}, {operator.MaxDepositFeeBps, true}, {operator.MaxDepositFeeBps + 1, false}, {10000, false}, {-1, false}} {
		created, _, err := s.Create(ctx, domain.OperatorSettings{Name: new("B"), WebhookURL: new("https://b.example"), DepositFeeBps: new(c.bps)})
		if c.ok {
			if err != nil || created.DepositFeeBps != c.bps {
				t.Errorf("create with %d bps: %+v %v", c.bps, created, err)
			}
			continue
		}
		if !fault.Is(err, fault.InvalidArgument) || !strings.Contains(err.Error(), "depositFeeBps") {
			t.Errorf("create with %d bps: %v, want INVALID_ARGUMENT naming depositFeeBps", c.bps, err)
		}
		if _, err := s.Update(ctx, op.ID, domain.OperatorSettings{DepositFeeBps: new(c.bps)}); !fault.Is(err, fault.InvalidArgument) ||
			!strings.Contains(err.Error(), "depositFeeBps") {
			t.Errorf("update to %d bps: %v, want INVALID_ARGUMENT naming depositFeeBps", c.bps, err)
		}
		if got, err := s.Get(ctx, op.ID); err != nil || got.DepositFeeBps != 150 {
			t.Errorf("after refusing %d bps the fee is %d (%v), want 150 unchanged", c.bps, got.DepositFeeBps, err)
		}
	}
}

// TestCapsAreWrittenAsTheOpsServiceTakesThem: a cap is a plain decimal of at most 20 integer
// digits and 18 decimals, on every path (the CLI calls the service without OpsService's
// protovalidate rule). What was seen: "1e-30" and "0.0000000000000000001" were stored as a cap
// of 0 (the column keeps 18 decimals), "+5" and "1e3" were taken, and "1e80", 21 digits or
// "1e1000000000" answered INTERNAL (numeric overflow). Each is INVALID_ARGUMENT naming the
// field, on create and update, and changes nothing.
func TestCapsAreWrittenAsTheOpsServiceTakesThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := setup(t)
	op, _, err := s.Create(ctx, domain.OperatorSettings{Name: new("Acme"), WebhookURL: new("https://a.example"), PerTxCap: new("500"),
		DailyCap: new("5000")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cap string
		ok  bool
	}{
		{"0", true}, {"500.25", true}, {"99999999999999999999.999999999999999999", true}, {"0.000000000000000001", true},
		{"1e3", false}, {"1e80", false}, {"1e-30", false}, {"0.0000000000000000001", false}, {"123456789012345678901", false},
		{"+5", false}, {"-1", false}, {"-0", false}, {" 5", false}, {"5.", false}, {".5", false}, {"NaN", false},
		{"1e1000000000", false}, {"1e-1000000000", false}, {"1,000", false},
	} {
		for _, field := range []string{"perTxCap", "dailyCap"} {
			set := func(s domain.OperatorSettings) domain.OperatorSettings {
				if field == "perTxCap" {
					s.PerTxCap = new(c.cap)
				} else {
					s.DailyCap = new(c.cap)
				}
				return s
			}
			created, _, err := s.Create(ctx, set(domain.OperatorSettings{Name: new("B"), WebhookURL: new("https://b.example")}))
			if c.ok {
				if err != nil {
					t.Errorf("create with %s %q: %v", field, c.cap, err)
				} else if got := map[string]string{"perTxCap": created.PerTxCap.Decimal.String(), "dailyCap": created.DailyCap.Decimal.String()}[field]; got != decString(c.cap) {
					t.Errorf("create with %s %q: stored %s", field, c.cap, got)
				}
				continue
			}
			if !fault.Is(err, fault.InvalidArgument) || !strings.Contains(err.Error(), field) {
				t.Errorf("create with %s %q: %v, want INVALID_ARGUMENT naming %s", field, c.cap, err, field)
			}
			if _, err := s.Update(ctx, op.ID, set(domain.OperatorSettings{})); !fault.Is(err, fault.InvalidArgument) ||
				!strings.Contains(err.Error(), field) {
				t.Errorf("update to %s %q: %v, want INVALID_ARGUMENT naming %s", field, c.cap, err, field)
			}
		}
	}
	if got, err := s.Get(ctx, op.ID); err != nil || got.PerTxCap.Decimal.String() != "500" || got.DailyCap.Decimal.String() != "5000" {
		t.Errorf("after the refusals the caps are %v and %v (%v), want 500 and 5000 unchanged", got.PerTxCap, got.DailyCap, err)
	}
}

// decString is a decimal string as decimal.Decimal writes it ("500.25", "0.000000000000000001").
func decString(s string) string { return decimal.RequireFromString(s).String() }
