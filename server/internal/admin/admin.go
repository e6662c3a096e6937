// Package admin manages panel admins: creation by the service team, login with password and
// optional TOTP, opaque login tokens stored as digests, and each admin's operator scope.
package admin

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// TokenPrefix starts every admin token.
const TokenPrefix = "adm_"

// TokenTTL is how long a login lasts.
const TokenTTL = 12 * time.Hour

// Defaults of Options.
const (
	// DefaultHashMemory is the memory all password hashes running at once may hold: two
	// argon2id hashes of 19 MiB. It bounds what logins cost whatever arrives, and two
	// single-lane hashes keep two cores busy.
	DefaultHashMemory = 2 * HashMemoryPerHash
	// DefaultHashWait is how long a login waits for hashing capacity before it is refused
	// with UNAVAILABLE.
	DefaultHashWait = 2 * time.Second
)

// Options tune the service; zero fields take the defaults.
type Options struct {
	// HashMemory is the budget, in bytes, of password hashes running at once (at least one).
	HashMemory int64
	// HashWait is how long a login waits for room in that budget.
	HashWait time.Duration
	Limits   Limits
}

// Service is the admin service.
type Service struct {
	pool     *pgxpool.Pool
	box      *secret.Box
	now      func() time.Time
	gate     *hashGate
	hashWait time.Duration
	limits   Limits
}

// New returns the service.
func New(pool *pgxpool.Pool, box *secret.Box, opts Options) *Service {
	if opts.HashMemory <= 0 {
		opts.HashMemory = DefaultHashMemory
	}
	if opts.HashWait <= 0 {
		opts.HashWait = DefaultHashWait
	}
	if opts.Limits == (Limits{}) {
		opts.Limits = DefaultLimits()
	}
	return &Service{pool: pool, box: box, now: time.Now, gate: newHashGate(opts.HashMemory), hashWait: opts.HashWait,
		limits: opts.Limits}
}

func totpContext(adminID string) string { return "admin-totp:" + adminID }

// Create creates an admin; operatorID "" makes a service-team admin. With enableTOTP the
// otpauth URI of the new secret is returned, once.
func (s *Service) Create(ctx context.Context, email, password, operatorID string, enableTOTP bool) (domain.Admin, string, error) {
	email = strings.TrimSpace(email)
	if !strings.Contains(email, "@") {
		return domain.Admin{}, "", fault.Invalid("email", "must be an email address")
	}
	if len(password) < 12 {
		return domain.Admin{}, "", fault.Invalid("password", "must be at least 12 characters")
	}
	q := store.New(s.pool)
	if operatorID != "" {
		if _, err := q.GetOperator(ctx, operatorID); errors.Is(err, store.ErrNotFound) {
			return domain.Admin{}, "", fault.Invalid("operatorId", "operator %s does not exist", operatorID)
		} else if err != nil {
			return domain.Admin{}, "", fault.Wrap(err, "load operator")
		}
	}
	a := domain.Admin{ID: uuid.NewString(), Email: email, OperatorID: operatorID}
	// The service team is authenticated: it waits for hashing capacity as long as it likes.
	if err := s.gate.run(ctx, argonMemory, 0, func() { a.PasswordHash = HashPassword(password) }); err != nil {
		return domain.Admin{}, "", err
	}
	var uri string
	if enableTOTP {
		key := secret.Random(20)
		a.TOTPSealed = s.box.Seal(key, totpContext(a.ID))
		uri = TOTPURI(key, email)
	}
	created, err := q.InsertAdmin(ctx, a)
	if _, dup := store.IsUniqueViolation(err); dup {
		return domain.Admin{}, "", fault.New(fault.Conflict, "an admin with email %s already exists", email)
	}
	if err != nil {
		return domain.Admin{}, "", fault.Wrap(err, "create admin")
	}
	return created, uri, nil
}

// checkTOTP checks the second factor of an admin who has one: an error when it cannot be
// checked or is missing, else why the code is refused ("" when it is accepted or not needed).
func (s *Service) checkTOTP(ctx context.Context, q *store.Queries, a domain.Admin, code string) (refused string, err error) {
	if a.TOTPSealed == nil {
		return "", nil
	}
	key, err := s.box.Open(a.TOTPSealed, totpContext(a.ID))
	if err != nil {
		return "", fault.Wrap(err, "open TOTP secret")
	}
	if code == "" {
		return "", fault.New(fault.Unauthenticated, "a TOTP code is required for this admin")
	}
	step, ok := MatchTOTP(key, code, s.now())
	if !ok {
		return "invalid TOTP code", nil
	}
	fresh, err := q.UseTOTPStep(ctx, a.ID, int64(step)) //nolint:gosec // steps are about 2^26
	if err != nil {
		return "", fault.Wrap(err, "record TOTP step")
	}
	if !fresh {
		return "this TOTP code was used already; wait for the next one", nil
	}
	return "", nil
}

// Credentials are one login attempt.
type Credentials struct {
	Email, Password, TOTP string
	// Client is the caller's address (see clientip); attempts without one are counted as
	// one "unknown" client.
	Client netip.Addr
}

// Login checks the credentials and returns a new admin token. The attempt is counted against
// the Limits first; the password is checked within the hashing budget, an unknown email
// against a dummy hash; a TOTP code is accepted once.
func (s *Service) Login(ctx context.Context, c Credentials) (string, time.Time, domain.Admin, error) {
	q := store.New(s.pool)
	email := strings.TrimSpace(c.Email)
	client := clientip.Key(c.Client)
	known, err := q.LoginClientKnown(ctx, email, client, s.limits.KnownClientFor)
	if err != nil {
		return "", time.Time{}, domain.Admin{}, fault.Wrap(err, "read login clients")
	}
	att, err := s.countAttempt(ctx, q, email, client, known)
	if err != nil {
		return "", time.Time{}, domain.Admin{}, err
	}
	failed := false
	defer func() {
		if !failed {
			att.refund(ctx)
		}
	}()
	fail := func(msg string) (string, time.Time, domain.Admin, error) {
		failed = true
		return "", time.Time{}, domain.Admin{}, fault.New(fault.Unauthenticated, "%s", msg)
	}

	a, err := q.AdminByEmail(ctx, email)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", time.Time{}, domain.Admin{}, fault.Wrap(err, "load admin")
	}
	hash := dummyHash()
	if found {
		hash = a.PasswordHash
	}
	ok, err := s.checkPassword(ctx, hash, c.Password)
	if err != nil {
		return "", time.Time{}, domain.Admin{}, err
	}
	if !found || !ok || !a.Active {
		return fail("invalid email or password")
	}
	if refused, err := s.checkTOTP(ctx, q, a, c.TOTP); err != nil {
		return "", time.Time{}, a, err
	} else if refused != "" {
		return fail(refused)
	}
	if err := q.RememberLoginClient(ctx, a.ID, client); err != nil {
		return "", time.Time{}, a, fault.Wrap(err, "record login client")
	}
	token := secret.Token(TokenPrefix)
	exp, err := q.InsertAdminSession(ctx, secret.Digest(token), a.ID, TokenTTL)
	if err != nil {
		return "", time.Time{}, a, fault.Wrap(err, "store admin session")
	}
	return token, exp, a, nil
}

// checkPassword verifies a password within the hashing budget.
func (s *Service) checkPassword(ctx context.Context, hash, password string) (bool, error) {
	h, err := parseHash(hash)
	if err != nil {
		return false, fault.Wrap(err, "stored password hash")
	}
	var ok bool
	if err := s.gate.run(ctx, h.mem, s.hashWait, func() { ok = h.check(password) }); err != nil {
		return false, err
	}
	return ok, nil
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
		if out.Operators, err = q.OperatorTree(ctx, a.OperatorID); err != nil {
			return auth.Admin{}, fault.Wrap(err, "admin scope")
		}
	}
	return out, nil
}

// findAdmin resolves an admin named by id or by email (exactly one of them).
func (s *Service) findAdmin(ctx context.Context, q *store.Queries, id, email string) (domain.Admin, error) {
	id, email = strings.TrimSpace(id), strings.TrimSpace(email)
	var a domain.Admin
	var err error
	switch {
	case (id == "") == (email == ""):
		return a, fault.Invalid("id", "name the admin by id or by email (one of them)")
	case id != "":
		if uuid.Validate(id) != nil {
			return a, fault.Invalid("id", "must be an admin id (UUID)")
		}
		a, err = q.AdminByID(ctx, id)
	default:
		a, err = q.AdminByEmail(ctx, email)
	}
	if errors.Is(err, store.ErrNotFound) {
		return a, fault.New(fault.NotFound, "admin not found")
	}
	if err != nil {
		return a, fault.Wrap(err, "load admin")
	}
	return a, nil
}

// Disable disables an admin (named by id or email) and revokes all its tokens at once: it
// cannot log in, and its tokens stop working now, not when they expire. revoked counts them.
func (s *Service) Disable(ctx context.Context, id, email string) (a domain.Admin, revoked int64, err error) {
	return s.setActive(ctx, id, email, false)
}

// Enable lets a disabled admin log in again. Tokens revoked by Disable stay revoked.
func (s *Service) Enable(ctx context.Context, id, email string) (domain.Admin, error) {
	a, _, err := s.setActive(ctx, id, email, true)
	return a, err
}

func (s *Service) setActive(ctx context.Context, id, email string, active bool) (domain.Admin, int64, error) {
	q := store.New(s.pool)
	a, err := s.findAdmin(ctx, q, id, email)
	if err != nil {
		return a, 0, err
	}
	a, revoked, err := q.SetAdminActive(ctx, a.ID, active)
	if errors.Is(err, store.ErrNotFound) {
		return a, 0, fault.New(fault.NotFound, "admin not found")
	}
	if err != nil {
		return a, 0, fault.Wrap(err, "set admin active")
	}
	return a, revoked, nil
}

// RevokeSessions revokes every token of an admin (named by id or email), which stays enabled:
// it must log in again. revoked counts the tokens.
func (s *Service) RevokeSessions(ctx context.Context, id, email string) (domain.Admin, int64, error) {
	q := store.New(s.pool)
	a, err := s.findAdmin(ctx, q, id, email)
	if err != nil {
		return a, 0, err
	}
	revoked, err := q.DeleteAdminSessions(ctx, a.ID)
	if err != nil {
		return a, 0, fault.Wrap(err, "revoke admin sessions")
	}
	return a, revoked, nil
}

// Logout revokes a token.
func (s *Service) Logout(ctx context.Context, token string) error {
	if err := store.New(s.pool).DeleteAdminSession(ctx, secret.Digest(token)); err != nil {
		return fault.Wrap(err, "logout")
	}
	return nil
}

// ActorEmails returns the email of each admin among actors (an audit trail's), so that a
// person reads who acted rather than an admin id. Actors of other kinds, and admins that are
// gone, are left out.
func (s *Service) ActorEmails(ctx context.Context, actors []domain.Actor) (map[domain.Actor]string, error) {
	out := map[domain.Actor]string{}
	seen := map[domain.Actor]bool{}
	q := store.New(s.pool)
	for _, a := range actors {
		if seen[a] || !a.IsAdmin() || uuid.Validate(a.ID()) != nil {
			continue
		}
		seen[a] = true
		adm, err := q.AdminByID(ctx, a.ID())
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, fault.Wrap(err, "load admin")
		}
		out[a] = adm.Email
	}
	return out, nil
}
