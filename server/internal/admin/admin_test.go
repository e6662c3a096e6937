package admin

import (
	"context"
	"encoding/base32"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestPasswordHash(t *testing.T) {
	h := HashPassword("hunter2hunter2")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if ok, err := CheckPassword(h, "hunter2hunter2"); !ok || err != nil {
		t.Fatal("right password refused", err)
	}
	if ok, _ := CheckPassword(h, "hunter2hunter3"); ok {
		t.Fatal("wrong password accepted")
	}
	if HashPassword("x") == HashPassword("x") {
		t.Fatal("hashes are not salted")
	}
	if _, err := CheckPassword("$2a$10$bcrypt", "x"); err == nil {
		t.Fatal("non-argon2 hash accepted")
	}
}

// RFC 6238 appendix B (SHA-1 secret "12345678901234567890"), truncated to 6 digits.
func TestTOTPVectors(t *testing.T) {
	secretKey := []byte("12345678901234567890")
	for _, v := range []struct {
		unix int64
		code string
	}{{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}} {
		if got := totpCode(secretKey, uint64(v.unix/30)); got != v.code {
			t.Errorf("T=%d: %s, want %s", v.unix, got, v.code)
		}
		if !ValidTOTP(secretKey, v.code, time.Unix(v.unix+30, 0)) || ValidTOTP(secretKey, v.code, time.Unix(v.unix+95, 0)) {
			t.Errorf("T=%d: skew window wrong", v.unix)
		}
	}
	uri, _ := url.Parse(TOTPURI(secretKey, "a@b.c"))
	if uri.Scheme != "otpauth" || uri.Query().Get("secret") != base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secretKey) {
		t.Fatalf("uri %s", uri)
	}
}

func TestLoginLifecycle(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	s := New(pool, box)
	if _, _, err := s.Create(ctx, "ops@coffer.test", "short", "", false); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("short password: %v", err)
	}
	a, uri, err := s.Create(ctx, "Ops@Coffer.test", "a long enough password", "", false)
	if err != nil || uri != "" {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, "ops@coffer.test", "another long password", "", false); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate email: %v", err)
	}
	token, exp, got, err := s.Login(ctx, "ops@coffer.test", "a long enough password", "")
	if err != nil || got.ID != a.ID || !strings.HasPrefix(token, TokenPrefix) || time.Until(exp) < TokenTTL-time.Minute {
		t.Fatalf("login: %v", err)
	}
	who, err := s.Authenticate(ctx, token)
	if err != nil || who.ID != a.ID || who.Scope != nil {
		t.Fatalf("authenticate: %+v %v", who, err)
	}
	if err := s.Logout(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("token works after logout: %v", err)
	}
	// Expired tokens stop working.
	token, _, _, _ = s.Login(ctx, "ops@coffer.test", "a long enough password", "")
	pool.Exec(ctx, `UPDATE admin_sessions SET expires_at = now() - interval '1 second'`)
	if _, err := s.Authenticate(ctx, token); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("expired token works: %v", err)
	}
}

func TestLoginFailuresAndThrottle(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	s := New(pool, box)
	s.Create(ctx, "a@coffer.test", "a long enough password", "", false)
	for _, c := range []struct{ email, password string }{{"a@coffer.test", "wrong password!"}, {"nobody@coffer.test", "a long enough password"}} {
		if _, _, _, err := s.Login(ctx, c.email, c.password, ""); !fault.Is(err, fault.Unauthenticated) {
			t.Fatalf("%v: %v", c, err)
		}
	}
	// One failure so far; nine more reach the limit.
	for i := 1; i < maxFailedLogins; i++ {
		if _, _, _, err := s.Login(ctx, "a@coffer.test", "wrong password!", ""); !fault.Is(err, fault.Unauthenticated) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	// Throttled now, even with the right password: guessing cannot continue.
	for _, pw := range []string{"wrong password!", "a long enough password"} {
		_, _, _, err := s.Login(ctx, "a@coffer.test", pw, "")
		fe := fault.As(err)
		if fe.Code != fault.RateLimited || fe.RetryAfter <= 0 || fe.RetryAfter > int(loginWindow.Seconds())+1 {
			t.Fatalf("throttle with %q: %+v", pw, fe)
		}
	}
	// Other emails are unaffected.
	s.Create(ctx, "b@coffer.test", "a long enough password", "", false)
	if _, _, _, err := s.Login(ctx, "b@coffer.test", "a long enough password", ""); err != nil {
		t.Fatalf("another admin throttled: %v", err)
	}
}

func TestTOTPLogin(t *testing.T) {
	ctx := context.Background()
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	s := New(pool, box)
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	a, uri, err := s.Create(ctx, "t@coffer.test", "a long enough password", "", true)
	if err != nil || uri == "" {
		t.Fatal(err)
	}
	u, _ := url.Parse(uri)
	key, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(u.Query().Get("secret"))
	if _, _, _, err := s.Login(ctx, a.Email, "a long enough password", ""); !fault.Is(err, fault.Unauthenticated) || !strings.Contains(err.Error(), "TOTP") {
		t.Fatalf("missing code: %v", err)
	}
	if _, _, _, err := s.Login(ctx, a.Email, "a long enough password", "000000"); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("wrong code: %v", err)
	}
	if _, _, _, err := s.Login(ctx, a.Email, "a long enough password", totpCode(key, uint64(now.Unix()/30))); err != nil {
		t.Fatalf("right code: %v", err)
	}
}
