package store

import (
	"context"
	"errors"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// sessionOf maps a sessions row to the domain.
func sessionOf(r dbsqlc.Session) (domain.Session, error) {
	return domain.Session{ID: r.ID, OperatorID: r.OperatorID, Kind: r.Kind, SessionRef: r.SessionRef, ExternalUserID: r.ExternalUserID,
		Lang: r.Lang, FiatCurrency: r.FiatCurrency, UserBalance: r.UserBalance, Amount: r.Amount, Email: deref(r.Email),
		OperatorReference: deref(r.OperatorReference), CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, CancelledAt: r.CancelledAt}, nil
}

// oneSession maps a single-row session query's result.
func oneSession(r dbsqlc.Session, err error) (domain.Session, error) {
	return one(r, err, sessionOf)
}

// InsertSession creates a session in one statement, registering the depositor of a deposit
// session on the way. CreatedAt and ExpiresAt (creation plus ttl) are set from the database
// clock. An operator reference is claimed first, in the same transaction (ClaimReference).
func (q *Queries) InsertSession(ctx context.Context, s domain.Session, ttl time.Duration) (domain.Session, error) {
	r, err := sqlc.InsertSession(ctx, q.db, dbsqlc.InsertSessionParams{ID: s.ID, OperatorID: s.OperatorID, Kind: s.Kind,
		SessionRef: s.SessionRef, ExternalUserID: s.ExternalUserID, Lang: s.Lang, FiatCurrency: s.FiatCurrency,
		UserBalance: s.UserBalance, Amount: s.Amount, Email: s.Email, OperatorReference: s.OperatorReference, Ttl: interval(ttl)})
	if err == nil {
		s.CreatedAt, s.ExpiresAt = r.CreatedAt, r.ExpiresAt
	}
	return s, err
}

// OpenSessionByKey is InsertSession for the operator owning an unexpired key with this
// digest, authenticated in the same statement; s.OperatorID is ignored and set from the key,
// and s must carry no operator reference (claiming one takes a transaction). ErrNotFound when
// no unexpired key has the digest; opened is false when its operator is inactive. Nothing is
// written unless opened.
func (q *Queries) OpenSessionByKey(ctx context.Context, digest []byte, s domain.Session, ttl time.Duration) (_ domain.Session, opened bool, err error) {
	if s.OperatorReference != "" {
		return s, false, errors.New("store: OpenSessionByKey with an operator reference")
	}
	r, err := sqlc.OpenSessionByKey(ctx, q.db, dbsqlc.OpenSessionByKeyParams{Digest: digest, ID: s.ID, Kind: s.Kind,
		SessionRef: s.SessionRef, ExternalUserID: s.ExternalUserID, Lang: s.Lang, FiatCurrency: s.FiatCurrency,
		UserBalance: s.UserBalance, Amount: s.Amount, Email: s.Email, Ttl: interval(ttl)})
	if err != nil {
		return s, false, notFound(err)
	}
	s.OperatorID = r.OperatorID
	if r.CreatedAt == nil || r.ExpiresAt == nil {
		return s, false, nil
	}
	s.CreatedAt, s.ExpiresAt = *r.CreatedAt, *r.ExpiresAt
	return s, true, nil
}

// SessionByID finds a session by sid. The sid is the widget's credential, so this lookup is
// not scoped by operator; operator-facing callers use SessionForOperators.
func (q *Queries) SessionByID(ctx context.Context, sid string) (domain.Session, error) {
	return oneSession(sqlc.SessionByID(ctx, q.db, sid))
}

// SessionsByIDs loads the sessions of the given ids (those that exist), by id.
func (q *Queries) SessionsByIDs(ctx context.Context, ids []string) (map[string]domain.Session, error) {
	rows, err := sqlc.SessionsByIDs(ctx, q.db, ids)
	list, err := many(rows, err, sessionOf)
	if err != nil {
		return nil, err
	}
	out := make(map[string]domain.Session, len(list))
	for _, s := range list {
		out[s.ID] = s
	}
	return out, nil
}

// SessionForOperators finds a session owned by one of the given operators.
func (q *Queries) SessionForOperators(ctx context.Context, operatorIDs []string, sid string) (domain.Session, error) {
	return oneSession(sqlc.SessionForOperators(ctx, q.db, dbsqlc.SessionForOperatorsParams{ID: sid, OperatorIDs: operatorIDs}))
}

// CancelSession marks an open session cancelled; it returns the session as it now stands.
func (q *Queries) CancelSession(ctx context.Context, sid string) (domain.Session, error) {
	return oneSession(sqlc.CancelSession(ctx, q.db, sid))
}
