// Package admin manages panel admins: creation by the service team, login with password and
// optional TOTP, opaque login tokens stored as digests, and each admin's operator scope.
package admin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// TokenPrefix starts every admin token.
const TokenPrefix = "adm_"

// TokenTTL is how long a login lasts.
const TokenTTL = 12 * time.Hour

// Failed logins per email allowed in loginWindow before RATE_LIMITED.
const (
	maxFailedLogins = 10
	loginWindow     = 15 * time.Minute
)

// dummyHash is checked when the email is unknown, so response time does not reveal which
// emails exist. It is made on first use: argon2id takes 19 MiB, which no process should pay
// at start-up.
var dummyHash = sync.OnceValue(func() string { return HashPassword("coffer-dummy-password") })

// Service is the admin service.
type Service struct {
	pool *pgxpool.Pool
	box  *secret.Box
	now  func() time.Time
}

// New returns the service.
func New(pool *pgxpool.Pool, box *secret.Box) *Service {
	return &Service{pool: pool, box: box, now: time.Now}
}

func totpContext(adminID string) string { return "admin-totp:" + adminID }

// Create creates an admin; operatorID "" makes a service-team admin. With enableTOTP the
// otpauth URI of the new secret is returned, once.
func (s *Service) Create(ctx context.Context, email, password, operatorID string, enableTOTP bool) (store.Admin, string, error) {
	email = strings.TrimSpace(email)
	if !strings.Contains(email, "@") {
		return store.Admin{}, "", fault.Invalid("email", "must be an email address")
	}
	if len(password) < 12 {
		return store.Admin{}, "", fault.Invalid("password", "must be at least 12 characters")
	}
	q := store.New(s.pool)
	if operatorID != "" {
		if _, err := q.GetOperator(ctx, operatorID); errors.Is(err, store.ErrNotFound) {
			return store.Admin{}, "", fault.Invalid("operatorId", "operator %s does not exist", operatorID)
		} else if err != nil {
			return store.Admin{}, "", fault.Wrap(err, "load operator")
		}
	}
	a := store.Admin{ID: uuid.NewString(), Email: email, PasswordHash: HashPassword(password), OperatorID: operatorID}
	var uri string
	if enableTOTP {
		key := secret.Random(20)
		a.TOTPSealed = s.box.Seal(key, totpContext(a.ID))
		uri = TOTPURI(key, email)
	}
	created, err := q.InsertAdmin(ctx, a)
	if _, dup := store.IsUniqueViolation(err); dup {
		return store.Admin{}, "", fault.New(fault.Conflict, "an admin with email %s already exists", email)
	}
	if err != nil {
		return store.Admin{}, "", fault.Wrap(err, "create admin")
	}
	return created, uri, nil
}

// Login checks the credentials and returns a new admin token. After maxFailedLogins failures
// for an email within loginWindow, every attempt for it is refused until the window ends,
// whether or not the password is right, so guessing cannot continue.
func (s *Service) Login(ctx context.Context, email, password, totp string) (string, time.Time, store.Admin, error) {
	q := store.New(s.pool)
	email = strings.TrimSpace(email)
	throttleKey := "admin-login:" + strings.ToLower(email)
	throttled := func(reset time.Time) error {
		e := fault.New(fault.RateLimited, "too many failed logins; try again later")
		e.RetryAfter = int(time.Until(reset).Seconds()) + 1
		return e
	}
	hits, reset, err := q.RateLimitHits(ctx, throttleKey, loginWindow)
	if err != nil {
		return "", time.Time{}, store.Admin{}, fault.Wrap(err, "read login throttle")
	}
	if hits >= maxFailedLogins {
		return "", time.Time{}, store.Admin{}, throttled(reset)
	}
	fail := func(msg string) (string, time.Time, store.Admin, error) {
		hits, reset, err := q.HitRateLimit(ctx, throttleKey, loginWindow)
		if err != nil {
			return "", time.Time{}, store.Admin{}, fault.Wrap(err, "count failed login")
		}
		if hits > maxFailedLogins {
			return "", time.Time{}, store.Admin{}, throttled(reset)
		}
		return "", time.Time{}, store.Admin{}, fault.New(fault.Unauthenticated, "%s", msg)
	}
	a, err := q.AdminByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", time.Time{}, a, fault.Wrap(err, "load admin")
	}
	var hash string
	if err == nil {
		hash = a.PasswordHash
	} else {
		hash = dummyHash()
	}
	ok, _ := CheckPassword(hash, password)
	if err != nil || !ok || !a.Active {
		return fail("invalid email or password")
	}
	if a.TOTPSealed != nil {
		key, err := s.box.Open(a.TOTPSealed, totpContext(a.ID))
		if err != nil {
			return "", time.Time{}, a, fault.Wrap(err, "open TOTP secret")
		}
		if totp == "" {
			return "", time.Time{}, a, fault.New(fault.Unauthenticated, "a TOTP code is required for this admin")
		}
		if !ValidTOTP(key, totp, s.now()) {
			return fail("invalid TOTP code")
		}
	}
	token := secret.Token(TokenPrefix)
	exp, err := q.InsertAdminSession(ctx, secret.Digest(token), a.ID, TokenTTL)
	if err != nil {
		return "", time.Time{}, a, fault.Wrap(err, "store admin session")
	}
	return token, exp, a, nil
}

// Authenticate resolves an admin token, with the admin's operator scope.
func (s *Service) Authenticate(ctx context.Context, token string) (auth.Admin, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return auth.Admin{}, fault.New(fault.Unauthenticated, "invalid admin token")
	}
	q := store.New(s.pool)
	a, err := q.AdminBySessionDigest(ctx, secret.Digest(token))
	if errors.Is(err, store.ErrNotFound) {
		return auth.Admin{}, fault.New(fault.Unauthenticated, "invalid or expired admin token")
	}
	if err != nil {
		return auth.Admin{}, fault.Wrap(err, "authenticate admin")
	}
	out := auth.Admin{Admin: a, Token: token}
	if a.OperatorID != "" {
		if out.Scope, err = q.OperatorTree(ctx, a.OperatorID); err != nil {
			return auth.Admin{}, fault.Wrap(err, "admin scope")
		}
	}
	return out, nil
}

// Logout revokes a token.
func (s *Service) Logout(ctx context.Context, token string) error {
	if err := store.New(s.pool).DeleteAdminSession(ctx, secret.Digest(token)); err != nil {
		return fault.Wrap(err, "logout")
	}
	return nil
}
