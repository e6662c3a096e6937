package admin

import (
	"context"
	"encoding/base32"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

const password = "a long enough password"

// newService is the service on a fresh database. Unless a test is about the hashing budget,
// logins wait long for it, so that a loaded machine does not turn them into UNAVAILABLE.
func newService(t *testing.T, opts Options) (*Service, *pgxpool.Pool) {
	t.Helper()
	pool := testdb.New(t)
	box, err := secret.NewBox(secret.Random(32))
	if err != nil {
		t.Fatal(err)
	}
	if opts.HashWait == 0 {
		opts.HashWait = time.Minute
	}
	return New(pool, box, opts), pool
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

var (
	attacker = addr("203.0.113.66")
	home     = addr("198.51.100.7")
)

func login(s *Service, email, pw string, client netip.Addr) (string, error) {
	token, _, _, err := s.Login(context.Background(), Credentials{Email: email, Password: pw, Client: client})
	return token, err
}

func code(err error) string {
	if err == nil {
		return "ok"
	}
	return fault.As(err).Code.String()
}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
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
	if first, second := HashPassword("x"), HashPassword("x"); first == second {
		t.Fatal("hashes are not salted")
	}
	if _, err := CheckPassword("$2a$10$bcrypt", "x"); err == nil {
		t.Fatal("non-argon2 hash accepted")
	}
	// The dummy hash of unknown emails costs what a real one costs.
	d, _ := parseHash(dummyHash())
	r, _ := parseHash(h)
	if d.mem != r.mem || d.time != r.time || d.threads != r.threads || len(d.want) != len(r.want) {
		t.Fatalf("dummy hash %+v differs from a real one %+v", d, r)
	}
}

// RFC 6238 appendix B (SHA-1 secret "12345678901234567890"), truncated to 6 digits.
func TestTOTPVectors(t *testing.T) {
	t.Parallel()
	secretKey := []byte("12345678901234567890")
	for _, v := range []struct {
		unix int64
		code string
	}{{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"}, {1234567890, "005924"}, {2000000000, "279037"}} {
		if got := totpCode(secretKey, uint64(v.unix/30)); got != v.code {
			t.Errorf("T=%d: %s, want %s", v.unix, got, v.code)
		}
		// One step of skew each way, and the step the code belongs to.
		for _, c := range []struct {
			at int64
			ok bool
		}{{v.unix - 30, true}, {v.unix, true}, {v.unix + 30, true}, {v.unix + 95, false}, {v.unix - 65, false}} {
			if c.at < 0 {
				continue // before 1970
			}
			step, ok := MatchTOTP(secretKey, v.code, time.Unix(c.at, 0))
			if ok != c.ok || (ok && step != uint64(v.unix/30)) {
				t.Errorf("T=%d at %d: step %d ok %t, want ok %t", v.unix, c.at, step, ok, c.ok)
			}
		}
	}
	uri, _ := url.Parse(TOTPURI(secretKey, "a@b.c"))
	if uri.Scheme != "otpauth" || uri.Query().Get("secret") != base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secretKey) {
		t.Fatalf("uri %s", uri)
	}
}

func TestLoginLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newService(t, Options{})
	if _, _, err := s.Create(ctx, "ops@coffer.test", "short", "", false); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("short password: %v", err)
	}
	a, uri, err := s.Create(ctx, "Ops@Coffer.test", password, "", false)
	if err != nil || uri != "" {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, "ops@coffer.test", "another long password", "", false); !fault.Is(err, fault.Conflict) {
		t.Fatalf("duplicate email: %v", err)
	}
	token, exp, got, err := s.Login(ctx, Credentials{Email: "ops@coffer.test", Password: password, Client: home})
	if err != nil || got.ID != a.ID || !strings.HasPrefix(token, TokenPrefix) || time.Until(exp) < TokenTTL-time.Minute {
		t.Fatalf("login: %v", err)
	}
	who, err := s.Authenticate(ctx, token)
	if err != nil || who.ID != a.ID || who.Operators != nil || !who.Scope().All() {
		t.Fatalf("authenticate: %+v %v", who, err)
	}
	if err := s.Logout(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("token works after logout: %v", err)
	}
	// Expired tokens stop working.
	token, _ = login(s, "ops@coffer.test", password, home)
	if _, err := pool.Exec(ctx, `UPDATE admin_sessions SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !fault.Is(err, fault.Unauthenticated) {
		t.Fatalf("expired token works: %v", err)
	}
	// Successful logins are not failures: the admin logs in more often than the limit allows
	// failures.
	for i := range DefaultLimits().PerAccountClient + 5 {
		if _, err := login(s, "ops@coffer.test", password, home); err != nil {
			t.Fatalf("login %d: %v", i+1, err)
		}
	}
}

func TestLoginFailuresAndThrottle(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, Options{})
	if _, _, err := s.Create(context.Background(), "a@coffer.test", password, "", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ email, password string }{{"a@coffer.test", "wrong password!"}, {"nobody@coffer.test", password}} {
		if _, err := login(s, c.email, c.password, attacker); !fault.Is(err, fault.Unauthenticated) {
			t.Fatalf("%v: %v", c, err)
		}
	}
	// One failure so far; nine more reach the limit.
	for i := 1; i < DefaultLimits().PerAccountClient; i++ {
		if _, err := login(s, "A@coffer.test", "wrong password!", attacker); !fault.Is(err, fault.Unauthenticated) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	// Throttled now, even with the right password: guessing cannot continue.
	for _, pw := range []string{"wrong password!", password} {
		_, err := login(s, "a@coffer.test", pw, attacker)
		fe := fault.As(err)
		if fe.Code != fault.RateLimited || fe.RetryAfter <= 0 || fe.RetryAfter > 2*int(DefaultLimits().Window.Seconds()) {
			t.Fatalf("throttle with %q: %+v", pw, fe)
		}
	}
	// Other emails are unaffected.
	if _, _, err := s.Create(context.Background(), "b@coffer.test", password, "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := login(s, "b@coffer.test", password, attacker); err != nil {
		t.Fatalf("another admin throttled: %v", err)
	}
}

// The attack: 60 parallel guesses, the right password sent once the limit is used up.
// Each attempt is counted before its hash runs, so at most the limit of guesses is verified,
// and the right password, arriving beyond it, gets no token.
func TestParallelGuessesStayWithinTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newService(t, Options{})
	if _, _, err := s.Create(ctx, "a@coffer.test", password, "", false); err != nil {
		t.Fatal(err)
	}
	var verified atomic.Int64
	s.gate.onRun = func() { verified.Add(1) }

	const n = 60
	errs := make([]error, n)
	tokens := make([]string, n)
	var wg sync.WaitGroup
	for i := range n - 1 {
		wg.Go(func() {
			tokens[i], errs[i] = login(s, "a@coffer.test", "wrong guess "+string(rune('a'+i%26)), attacker)
		})
	}
	// The last guess, the right one, goes once the limit is taken by guesses in flight or failed.
	key := "admin-login:account-client:" + accountKey("a@coffer.test") + ":" + attacker.String()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		var hits int
		if err := pool.QueryRow(ctx, `SELECT COALESCE(sum(hits), 0) FROM rate_limits WHERE key = $1`, key).Scan(&hits); err != nil {
			t.Fatal(err)
		}
		if hits >= DefaultLimits().PerAccountClient {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guesses never reached the limit (%d)", hits)
		}
	}
	wg.Go(func() { tokens[n-1], errs[n-1] = login(s, "a@coffer.test", password, attacker) })
	wg.Wait()

	counts := map[string]int{}
	for _, err := range errs {
		counts[code(err)]++
	}
	t.Logf("60 parallel guesses: %v; %d passwords verified", counts, verified.Load())
	if counts["UNAUTHENTICATED"] > DefaultLimits().PerAccountClient || verified.Load() > int64(DefaultLimits().PerAccountClient) {
		t.Errorf("%d guesses verified, %v: the limit is %d", verified.Load(), counts, DefaultLimits().PerAccountClient)
	}
	if counts["RATE_LIMITED"] != n-counts["UNAUTHENTICATED"] {
		t.Errorf("answers %v: want only UNAUTHENTICATED and RATE_LIMITED", counts)
	}
	if tokens[n-1] != "" || code(errs[n-1]) != "RATE_LIMITED" {
		t.Errorf("the right password beyond the limit: %v (token %q)", errs[n-1], tokens[n-1])
	}
	var sessions int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM admin_sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	if sessions != 0 {
		t.Errorf("%d tokens issued", sessions)
	}
}

// An attacker hammering an admin's email is limited at its own address; the admin logs in from
// another. Guessing spread over many addresses meets the account's ceiling, which does not
// apply where the admin logged in before; one address spraying emails meets the client limit.
func TestAttackerCannotLockTheAdminOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{Window: 15 * time.Minute, PerAccountClient: 3, PerClient: 6, PerAccount: 8, KnownClientFor: time.Hour}
	s, _ := newService(t, Options{Limits: limits})
	if _, _, err := s.Create(ctx, "a@coffer.test", password, "", false); err != nil {
		t.Fatal(err)
	}
	office := addr("2001:db8:1:2::10")
	if _, err := login(s, "a@coffer.test", password, office); err != nil { // the admin's usual place
		t.Fatal(err)
	}

	// One address: three failures, then refused, even with the right password, for as long as
	// the attacker keeps trying.
	for i := range 10 {
		want := "UNAUTHENTICATED"
		if i >= limits.PerAccountClient {
			want = "RATE_LIMITED"
		}
		if _, err := login(s, "a@coffer.test", "guess", attacker); code(err) != want {
			t.Fatalf("attempt %d: %v, want %s", i+1, err, want)
		}
	}
	if _, err := login(s, "a@coffer.test", password, attacker); code(err) != "RATE_LIMITED" {
		t.Fatalf("right password from the limited attacker: %v", err)
	}
	// The admin from elsewhere, new or usual, is not affected.
	if _, err := login(s, "a@coffer.test", password, home); err != nil {
		t.Fatalf("admin from another address: %v", err)
	}

	// Many addresses: the account's ceiling (8) counts the first attacker's 3 failures and stops
	// the spread guessing after 5 more...
	for i := range 10 {
		want := "UNAUTHENTICATED"
		if i >= limits.PerAccount-limits.PerAccountClient {
			want = "RATE_LIMITED"
		}
		bot := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		if _, err := login(s, "a@coffer.test", "guess", bot); code(err) != want {
			t.Fatalf("bot %d: %v, want %s", i+1, err, want)
		}
	}
	// ... and a new place too, but not the admin where it logged in before. IPv6 clients are
	// their /64: another address of the office's /64 is the office.
	if _, err := login(s, "a@coffer.test", password, addr("203.0.113.200")); code(err) != "RATE_LIMITED" {
		t.Fatalf("new address past the account ceiling: %v", err)
	}
	for _, c := range []netip.Addr{office, addr("2001:db8:1:2::99"), home} {
		if _, err := login(s, "a@coffer.test", password, c); err != nil {
			t.Fatalf("admin from %s, where it logged in before: %v", c, err)
		}
	}

	// One address spraying emails: the client limit (6) counts across emails.
	sprayer := addr("198.51.100.250")
	for i := range 8 {
		want := "UNAUTHENTICATED"
		if i >= limits.PerClient {
			want = "RATE_LIMITED"
		}
		email := string(rune('a'+i)) + "-nobody@coffer.test"
		if _, err := login(s, email, "guess", sprayer); code(err) != want {
			t.Fatalf("spray %d: %v, want %s", i+1, err, want)
		}
	}
}

// The hashing budget: with room for two hashes, a third concurrent one waits, and beyond its
// wait it is refused with UNAVAILABLE and a Retry-After, having verified nothing and counted
// nothing. Unknown emails cost a hash within the same budget.
func TestHashingBudget(t *testing.T) {
	t.Parallel()
	t.Run("gate", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name                 string
			budget               int64
			callers, wantMaxRuns int
		}{
			{"one hash", HashMemoryPerHash, 5, 1},
			{"below one hash still runs one", 1 << 20, 3, 1},
			{"two hashes", 2 * HashMemoryPerHash, 6, 2},
			{"two and a half", 5 * HashMemoryPerHash / 2, 6, 2},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				g := newHashGate(c.budget)
				var running, most atomic.Int64
				var wg sync.WaitGroup
				for range c.callers {
					wg.Go(func() {
						err := g.run(context.Background(), argonMemory, time.Minute, func() {
							n := running.Add(1)
							for m := most.Load(); n > m; m = most.Load() {
								if most.CompareAndSwap(m, n) {
									break
								}
							}
							// Hold the room until as many run as should, and a little longer,
							// so that a gate letting one more in would be seen.
							for deadline := time.Now().Add(10 * time.Second); running.Load() < int64(c.wantMaxRuns) && time.Now().Before(deadline); {
								time.Sleep(time.Millisecond)
							}
							time.Sleep(10 * time.Millisecond)
							running.Add(-1)
						})
						if err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				if most.Load() != int64(c.wantMaxRuns) {
					t.Errorf("%d hashes ran at once, want %d", most.Load(), c.wantMaxRuns)
				}
			})
		}
	})

	t.Run("login beyond the budget", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		s, pool := newService(t, Options{HashMemory: 2 * HashMemoryPerHash, HashWait: 200 * time.Millisecond})
		if _, _, err := s.Create(ctx, "a@coffer.test", password, "", false); err != nil {
			t.Fatal(err)
		}
		// Two hashes hold the budget (as two slow logins would)...
		release := make(chan struct{})
		var held sync.WaitGroup
		for range 2 {
			held.Add(1)
			go s.gate.run(ctx, argonMemory, 0, func() { held.Done(); <-release }) //nolint:errcheck
		}
		held.Wait()
		// ... so a third waits, then is refused, known email or not.
		for _, email := range []string{"a@coffer.test", "nobody@coffer.test"} {
			start := time.Now()
			_, err := login(s, email, password, home)
			fe := fault.As(err)
			if fe.Code != fault.Unavailable || fe.RetryAfter < 1 || time.Since(start) < 200*time.Millisecond {
				t.Fatalf("%s beyond the budget: %+v after %s", email, fe, time.Since(start))
			}
		}
		var hits int
		if err := pool.QueryRow(ctx, `SELECT COALESCE(sum(hits), 0) FROM rate_limits`).Scan(&hits); err != nil {
			t.Fatal(err)
		}
		if hits != 0 {
			t.Errorf("refused logins still count %d hits", hits)
		}
		// A login waiting when the room frees gets its turn (with a wait a loaded machine
		// cannot outlast).
		s.hashWait = time.Minute
		done := make(chan error, 1)
		go func() { _, err := login(s, "a@coffer.test", password, home); done <- err }()
		time.Sleep(50 * time.Millisecond)
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("login after the wait: %v", err)
		}
	})
}

func totpKey(t *testing.T, uri string) []byte {
	t.Helper()
	u, _ := url.Parse(uri)
	key, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(u.Query().Get("secret"))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestTOTPLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Limits high enough for the failures this test makes on purpose.
	s, _ := newService(t, Options{Limits: Limits{Window: 15 * time.Minute, PerAccountClient: 100, PerClient: 100, PerAccount: 100,
		KnownClientFor: time.Hour}})
	now := time.Unix(1_800_000_000, 0)
	s.now = func() time.Time { return now }
	a, uri, err := s.Create(ctx, "t@coffer.test", password, "", true)
	if err != nil || uri == "" {
		t.Fatal(err)
	}
	key := totpKey(t, uri)
	step := uint64(now.Unix() / 30)
	try := func(code string) error {
		_, _, _, err := s.Login(ctx, Credentials{Email: a.Email, Password: password, TOTP: code, Client: home})
		return err
	}
	if err := try(""); !fault.Is(err, fault.Unauthenticated) || !strings.Contains(err.Error(), "TOTP") {
		t.Fatalf("missing code: %v", err)
	}
	// Each code logs in once; a replay, or a code of an earlier step, is refused.
	for _, c := range []struct {
		name string
		step uint64
		ok   bool
	}{
		{"wrong code", 0, false},
		{"current step", step, true},
		{"replay of the current step", step, false},
		{"previous step, within the skew", step - 1, false},
		{"next step", step + 1, true},
		{"replay of the next step", step + 1, false},
		{"current step, now older than the last accepted", step, false},
	} {
		code := "000000"
		if c.step != 0 {
			code = totpCode(key, c.step)
		}
		if err := try(code); (err == nil) != c.ok || (err != nil && !fault.Is(err, fault.Unauthenticated)) {
			t.Errorf("%s: %v, want ok %t", c.name, err, c.ok)
		}
	}
	// Of parallel logins with one fresh code, exactly one gets in.
	now = now.Add(90 * time.Second)
	code := totpCode(key, uint64(now.Unix()/30))
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 8 {
		wg.Go(func() {
			if try(code) == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 {
		t.Fatalf("%d of 8 parallel logins with one code got in, want 1", ok.Load())
	}
}

// Disable, enable and revoke: a disabled admin cannot log in and its tokens stop working at
// once; enabling does not bring them back; revoking ends every token of an enabled admin.
func TestDisableEnableRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := newService(t, Options{})
	a, _, _ := s.Create(ctx, "a@coffer.test", password, "", false)
	other, _, _ := s.Create(ctx, "b@coffer.test", password, "", false)
	otherToken, _ := login(s, other.Email, password, home)
	alive := func(token string) bool { _, err := s.Authenticate(ctx, token); return err == nil }

	t1, _ := login(s, a.Email, password, home)
	t2, _ := login(s, a.Email, password, attacker)
	got, revoked, err := s.Disable(ctx, "", "A@Coffer.test")
	if err != nil || got.ID != a.ID || got.Active || revoked != 2 {
		t.Fatalf("disable: %+v %d %v", got, revoked, err)
	}
	if alive(t1) || alive(t2) {
		t.Fatal("a disabled admin's token still works")
	}
	if _, err := login(s, a.Email, password, home); code(err) != "UNAUTHENTICATED" {
		t.Fatalf("disabled admin logs in: %v", err)
	}
	if _, revoked, err := s.Disable(ctx, a.ID, ""); err != nil || revoked != 0 { // idempotent
		t.Fatalf("disable again: %d %v", revoked, err)
	}
	got, err = s.Enable(ctx, a.ID, "")
	if err != nil || !got.Active {
		t.Fatalf("enable: %+v %v", got, err)
	}
	if alive(t1) {
		t.Fatal("enabling brought a revoked token back")
	}
	t3, err := login(s, a.Email, password, home)
	if err != nil {
		t.Fatalf("enabled admin cannot log in: %v", err)
	}
	t4, _ := login(s, a.Email, password, home)
	got, revoked, err = s.RevokeSessions(ctx, a.ID, "")
	if err != nil || revoked != 2 || !got.Active || alive(t3) || alive(t4) {
		t.Fatalf("revoke: %+v %d %v", got, revoked, err)
	}
	if _, err := login(s, a.Email, password, home); err != nil {
		t.Fatalf("login after revoke: %v", err)
	}
	if !alive(otherToken) {
		t.Fatal("another admin's token was revoked")
	}

	// Bad references change nothing.
	var before int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM admin_sessions`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, id, email, want string
	}{
		{"neither", "", "", "INVALID_ARGUMENT"},
		{"both", a.ID, a.Email, "INVALID_ARGUMENT"},
		{"not a uuid", "42", "", "INVALID_ARGUMENT"},
		{"unknown id", "00000000-0000-4000-8000-000000000000", "", "NOT_FOUND"},
		{"unknown email", "", "nobody@coffer.test", "NOT_FOUND"},
	} {
		_, _, err1 := s.Disable(ctx, c.id, c.email)
		_, err2 := s.Enable(ctx, c.id, c.email)
		_, _, err3 := s.RevokeSessions(ctx, c.id, c.email)
		for _, err := range []error{err1, err2, err3} {
			if code(err) != c.want {
				t.Errorf("%s: %v, want %s", c.name, err, c.want)
			}
		}
	}
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM admin_sessions`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before || !alive(otherToken) {
		t.Fatalf("bad references changed the sessions: %d → %d", before, after)
	}
}

// TestActorEmails: admin actors of a trail read as their emails; other actors, malformed ids
// and unknown admins are left out.
func TestActorEmails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newService(t, Options{})
	a, _, err := s.Create(ctx, "ops@coffer.test", password, "", false)
	if err != nil {
		t.Fatal(err)
	}
	actors := []domain.Actor{domain.AdminActor(a.ID), domain.AdminActor(a.ID), domain.OperatorActor(a.ID), domain.System,
		domain.AdminActor("not-a-uuid"), domain.AdminActor("00000000-0000-4000-8000-000000000000"), domain.ServiceTeamActor("cli")}
	got, err := s.ActorEmails(ctx, actors)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[domain.Actor]string{domain.AdminActor(a.ID): "ops@coffer.test"}; !maps.Equal(got, want) {
		t.Fatalf("ActorEmails = %v; want %v", got, want)
	}
}
