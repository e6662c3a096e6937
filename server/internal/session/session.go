// Package session opens deposit and withdraw sessions for an operator's user and resolves
// the sid the widget presents. A session lives for a fixed TTL (30 minutes by default); after
// that, or once cancelled, every widget call on it answers SESSION_EXPIRED.
package session

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/ident"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Kinds of session.
const (
	Deposit  = domain.SessionDeposit
	Withdraw = domain.SessionWithdraw
)

// Config configures the service.
type Config struct {
	// TTL is the session lifetime; COFFER_SESSION_TTL's default (config.Defaults) when zero.
	TTL time.Duration
	// WidgetURL is the widget's base address; the session URL is WidgetURL + "/?sid=<sid>".
	WidgetURL string
	// Currencies are the platform fiat currencies sessions may use: those with a rate (nil: USD
	// only). A deposit in a currency without one could never be valued.
	Currencies rates.FiatSet
	// Cascade is what cancelling a withdraw session cancels with it, in the same transaction
	// (withdrawal.SessionCascade). Nil only where no withdrawal can exist: then the periodic
	// sweep is the only thing that cancels a cancelled session's withdrawals.
	Cascade Cascade
}

// Service is the session service.
type Service struct {
	pool *pgxpool.Pool
	cfg  Config
}

// New returns the service.
func New(pool *pgxpool.Pool, cfg Config) *Service {
	if cfg.TTL <= 0 {
		cfg.TTL = config.Defaults().SessionTTL
	}
	cfg.WidgetURL = strings.TrimRight(cfg.WidgetURL, "/")
	return &Service{pool: pool, cfg: cfg}
}

// Input is what an operator sends to open a session.
type Input struct {
	ExternalUserID    string
	Lang              string
	FiatCurrency      string
	UserBalance       string
	Amount            string
	Email             string
	OperatorReference string
}

// Opened is a created (or, for a repeated operator reference, existing) session.
type Opened struct {
	Session  domain.Session
	URL      string
	Existing bool
}

// Open opens a session of kind for the operator. An operator reference names one live session
// at a time: repeated with the same externalUserId, amount and currency it returns that
// session unchanged; with any of them (or the kind) different it is CONFLICT naming the field,
// and nothing is written; once that session expired or was cancelled, a new session opens and
// the reference names it from then on.
func (s *Service) Open(ctx context.Context, op domain.Operator, kind domain.SessionKind, in Input) (Opened, error) {
	if !op.Active {
		return Opened{}, fault.New(fault.Forbidden, "operator account is inactive")
	}
	fresh, err := s.prepare(op.ID, kind, in)
	if err != nil {
		return Opened{}, err
	}
	var out Opened
	if in.OperatorReference == "" {
		// One statement, atomic on its own: no transaction's round trips on the hot path.
		sess, err := store.New(s.pool).InsertSession(ctx, fresh, s.cfg.TTL)
		if err != nil {
			return Opened{}, fault.Wrap(err, "open session")
		}
		return Opened{Session: sess, URL: s.URL(sess.ID)}, nil
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		ref := in.OperatorReference
		current, err := q.ClaimReference(ctx, op.ID, ref, fresh.ID)
		if err != nil {
			return err
		}
		if current != fresh.ID {
			named, reused, err := claimed(ctx, q, current, fresh)
			if err != nil {
				return err
			}
			if reused {
				out = Opened{Session: named, Existing: true}
				return nil
			}
		}
		sess, err := q.InsertSession(ctx, fresh, s.cfg.TTL)
		out = Opened{Session: sess}
		return err
	})
	if err != nil {
		if fe, ok := errors.AsType[*fault.Error](err); ok {
			return Opened{}, fe
		}
		return Opened{}, fault.Wrap(err, "open session")
	}
	out.URL = s.URL(out.Session.ID)
	return out, nil
}

// prepare checks the input and makes the session it asks for.
func (s *Service) prepare(operatorID string, kind domain.SessionKind, in Input) (domain.Session, error) {
	if err := ident.UserID(in.ExternalUserID); err != nil {
		return domain.Session{}, err
	}
	if err := ident.Reference(in.OperatorReference); err != nil {
		return domain.Session{}, err
	}
	amount, err := decimal.NewFromString(in.Amount)
	if err != nil || !amount.IsPositive() {
		return domain.Session{}, fault.Invalid("amount", "must be a positive decimal string such as \"25.00\"")
	}
	balance, err := decimal.NewFromString(in.UserBalance)
	if err != nil {
		return domain.Session{}, fault.Invalid("userBalance", "must be a decimal string such as \"120.50\"")
	}
	currency, ok, supported := rates.Priced(s.cfg.Currencies, in.FiatCurrency)
	if !ok {
		return domain.Session{}, fault.Invalid("platformFiatCurrency", "%s has no exchange rate here; supported currencies: %s",
			currency, strings.Join(supported, ", "))
	}
	return domain.Session{
		ID:                uuid.NewString(),
		OperatorID:        operatorID,
		Kind:              kind,
		SessionRef:        secret.Token("sr_")[:3+32],
		ExternalUserID:    in.ExternalUserID,
		Lang:              in.Lang,
		FiatCurrency:      currency,
		UserBalance:       balance,
		Amount:            amount,
		Email:             in.Email,
		OperatorReference: in.OperatorReference,
	}, nil
}

// ErrNotByKey is OpenByKey's answer when it opened nothing and wrote nothing: the key is no
// unexpired operator key, its operator is inactive, the input is invalid, or it names an
// operator reference. The caller answers through the general path (authenticate, then Open),
// whose errors come in their documented order; only these failures pay its extra round trip.
var ErrNotByKey = errors.New("session: not opened by key")

// OpenByKey is Open for the operator owning the key with this digest (secret.Digest),
// authenticated in the statement that inserts the session: one round trip where
// authenticating and then opening take two. It opens exactly what Open would for that
// operator (same checks: an unexpired key, an active operator, valid input) and returns the
// operator's id with it; anything else is ErrNotByKey, or the database's error.
func (s *Service) OpenByKey(ctx context.Context, digest []byte, kind domain.SessionKind, in Input) (Opened, string, error) {
	if in.OperatorReference != "" {
		return Opened{}, "", ErrNotByKey
	}
	fresh, err := s.prepare("", kind, in)
	if err != nil {
		return Opened{}, "", ErrNotByKey
	}
	sess, opened, err := store.New(s.pool).OpenSessionByKey(ctx, digest, fresh, s.cfg.TTL)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !opened) {
		return Opened{}, "", ErrNotByKey
	}
	if err != nil {
		return Opened{}, "", fault.Wrap(err, "open session")
	}
	return Opened{Session: sess, URL: s.URL(sess.ID)}, sess.OperatorID, nil
}

// claimed decides an operator reference that session current already holds: that session
// when it is still open and asks for what fresh asks (reused), else the reference now names
// fresh. A mismatch is sameSession's CONFLICT.
func claimed(ctx context.Context, q *store.Queries, current string, fresh domain.Session) (named domain.Session, reused bool, err error) {
	named, err = q.SessionByID(ctx, current)
	if err != nil {
		return domain.Session{}, false, err
	}
	if named.StatusAt(time.Now()) == domain.SessionOpen {
		if err := sameSession(named, fresh.Kind, fresh); err != nil {
			return domain.Session{}, false, err
		}
		return named, true, nil
	}
	return domain.Session{}, false, q.PointReference(ctx, fresh.OperatorID, fresh.OperatorReference, fresh.ID)
}

// sameSession checks that a repeated operator reference asks for the live session it names:
// same kind, user, amount (numerically: "25" is "25.00") and currency. Otherwise it is a
// CONFLICT naming the first field that differs: the operator reused an order id for another
// order, and answering with the first session would pay or credit the wrong one.
func sameSession(named domain.Session, kind domain.SessionKind, asked domain.Session) error {
	conflict := func(field, what string) error {
		e := fault.New(fault.Conflict, "%s: operatorReference %q already names an open %s session %s; repeat it with the same "+
			"externalUserId, amount and platformFiatCurrency to get that session, or use a new reference",
			field, asked.OperatorReference, strings.ToLower(string(named.Kind)), what)
		e.Field = field
		return e
	}
	switch {
	case named.Kind != kind:
		e := fault.New(fault.Conflict, "operatorReference: %q already names an open %s session; use a new reference for a %s session",
			asked.OperatorReference, strings.ToLower(string(named.Kind)), strings.ToLower(string(kind)))
		e.Field = "operatorReference"
		return e
	case named.ExternalUserID != asked.ExternalUserID:
		return conflict("externalUserId", "of another user")
	case !named.Amount.Equal(asked.Amount):
		return conflict("amount", "for "+money.Fiat(named.Amount)+" "+named.FiatCurrency)
	case named.FiatCurrency != asked.FiatCurrency:
		return conflict("platformFiatCurrency", "in "+named.FiatCurrency)
	}
	return nil
}

// URL is the widget URL of a session.
func (s *Service) URL(sid string) string { return s.cfg.WidgetURL + "/?sid=" + sid }

// ForWidget resolves the sid of a widget call that acts on its session (an address, a quote,
// a submission): the session must be open. See access for the policy.
func (s *Service) ForWidget(ctx context.Context, sid string, kind domain.SessionKind) (domain.Session, error) {
	return s.access(ctx, sid, kind, true)
}

// Follow resolves the sid of a widget call that only follows what its session started (its
// deposits' progress): any state will do, since a payment sent in time may confirm after the
// session expired. See access for the policy.
func (s *Service) Follow(ctx context.Context, sid string, kind domain.SessionKind) (domain.Session, error) {
	return s.access(ctx, sid, kind, false)
}

// access is the widget's one session-access policy. An unknown sid is UNAUTHENTICATED (the
// sid is the credential); when the call needs an open session, an expired or cancelled one
// is SESSION_EXPIRED; a session of the other kind is FORBIDDEN. kind "" accepts either kind.
func (s *Service) access(ctx context.Context, sid string, kind domain.SessionKind, mustBeOpen bool) (domain.Session, error) {
	sess, err := s.Lookup(ctx, sid)
	if err != nil {
		return sess, err
	}
	if mustBeOpen {
		switch sess.StatusAt(time.Now()) {
		case domain.SessionOpen:
		case domain.SessionExpired:
			return sess, fault.New(fault.SessionExpired, "session expired; create a new session")
		case domain.SessionCancelled:
			return sess, fault.New(fault.SessionExpired, "session was cancelled; create a new session")
		}
	}
	if kind != "" && sess.Kind != kind {
		return sess, fault.New(fault.Forbidden, "this is a %s session", strings.ToLower(string(sess.Kind)))
	}
	return sess, nil
}

// Lookup resolves a sid whatever the session's state.
func (s *Service) Lookup(ctx context.Context, sid string) (domain.Session, error) {
	if _, err := uuid.Parse(sid); err != nil {
		return domain.Session{}, fault.Invalid("sid", "must be a UUID")
	}
	sess, err := store.New(s.pool).SessionByID(ctx, sid)
	if errors.Is(err, store.ErrNotFound) {
		return sess, fault.New(fault.Unauthenticated, "unknown session id")
	}
	if err != nil {
		return sess, fault.Wrap(err, "load session")
	}
	return sess, nil
}

// ForOperators returns a session owned by an operator in scope (an operator and its
// sub-operators); anything else is NOT_FOUND, so other operators' sessions stay invisible.
func (s *Service) ForOperators(ctx context.Context, scope domain.Scope, sid string) (domain.Session, error) {
	if _, err := uuid.Parse(sid); err != nil {
		return domain.Session{}, fault.Invalid("sid", "must be a UUID")
	}
	var sess domain.Session
	var err error
	if all, ids := scope.Filter(); all {
		sess, err = store.New(s.pool).SessionByID(ctx, sid)
	} else {
		sess, err = store.New(s.pool).SessionForOperators(ctx, ids, sid)
	}
	if errors.Is(err, store.ErrNotFound) {
		return sess, fault.New(fault.NotFound, "session not found")
	}
	if err != nil {
		return sess, fault.Wrap(err, "load session")
	}
	return sess, nil
}

// Cascade cancels, in the transaction that cancels a withdraw session, what hangs off it:
// its open withdrawals (withdrawal.SessionCascade).
type Cascade func(ctx context.Context, tx pgx.Tx, sessionID string) error

// Cancel records that the user cancelled the session and, for a withdraw session, cancels its
// open withdrawals in the same transaction. Cancelling twice is harmless (the withdrawals are
// looked at again); an expired session stays expired.
func (s *Service) Cancel(ctx context.Context, sid string) (domain.SessionStatus, error) {
	sess, err := s.Lookup(ctx, sid)
	if err != nil {
		return "", err
	}
	status := sess.StatusAt(time.Now())
	to, err := Next(status, Cancel)
	if err != nil {
		return "", err
	}
	// A withdraw session's withdrawals are looked at again even when the session is no longer
	// open (a cancel repeated after a crash between the two).
	cascades := sess.Kind == Withdraw && s.cfg.Cascade != nil
	if to == status && !cascades {
		return status, nil // not open: nothing changes
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if to != status {
			cancelled, err := store.New(tx).CancelSession(ctx, sid)
			switch {
			case errors.Is(err, store.ErrNotFound): // expired meanwhile
				status = domain.SessionExpired
			case err != nil:
				return fault.Wrap(err, "cancel session")
			default:
				status = cancelled.StatusAt(time.Now())
			}
		}
		if !cascades {
			return nil
		}
		return s.cfg.Cascade(ctx, tx, sid)
	})
	if err != nil {
		if fe, ok := errors.AsType[*fault.Error](err); ok {
			return "", fe
		}
		return "", fault.Wrap(err, "cancel session")
	}
	return status, nil
}
