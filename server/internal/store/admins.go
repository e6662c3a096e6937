package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// adminOf maps an admins row to the domain.
func adminOf(r dbsqlc.Admin) domain.Admin {
	return domain.Admin{ID: r.ID, Email: r.Email, PasswordHash: r.PasswordHash, TOTPSealed: r.TotpSealed,
		OperatorID: deref(r.OperatorID), Active: r.Active, CreatedAt: r.CreatedAt}
}

// InsertAdmin creates an admin.
func (q *Queries) InsertAdmin(ctx context.Context, a domain.Admin) (domain.Admin, error) {
	r, err := sqlc.InsertAdmin(ctx, q.db, dbsqlc.InsertAdminParams{ID: a.ID, Email: a.Email, PasswordHash: a.PasswordHash,
		TotpSealed: a.TOTPSealed, OperatorID: a.OperatorID})
	return adminOf(r), notFound(err)
}

// AdminByEmail finds an admin by email, case-insensitively.
func (q *Queries) AdminByEmail(ctx context.Context, email string) (domain.Admin, error) {
	r, err := sqlc.AdminByEmail(ctx, q.db, email)
	return adminOf(r), notFound(err)
}

// InsertAdminSession stores a login token's digest.
func (q *Queries) InsertAdminSession(ctx context.Context, digest []byte, adminID string, ttl time.Duration) (time.Time, error) {
	return sqlc.InsertAdminSession(ctx, q.db, dbsqlc.InsertAdminSessionParams{Digest: digest, AdminID: adminID, Ttl: interval(ttl)})
}

// AdminBySessionDigest authenticates a login token: the active admin of an unexpired session.
func (q *Queries) AdminBySessionDigest(ctx context.Context, digest []byte) (domain.Admin, error) {
	r, err := sqlc.AdminBySessionDigest(ctx, q.db, digest)
	return adminOf(r), notFound(err)
}

// DeleteAdminSession revokes a login token.
func (q *Queries) DeleteAdminSession(ctx context.Context, digest []byte) error {
	return sqlc.DeleteAdminSession(ctx, q.db, digest)
}

// AdminByID finds an admin by id.
func (q *Queries) AdminByID(ctx context.Context, id string) (domain.Admin, error) {
	r, err := sqlc.AdminByID(ctx, q.db, id)
	return adminOf(r), notFound(err)
}

// SetAdminActive enables or disables an admin. Disabling also deletes its login tokens (in the
// same statement), so none comes back when the admin is enabled again; revoked counts them.
func (q *Queries) SetAdminActive(ctx context.Context, id string, active bool) (a domain.Admin, revoked int64, err error) {
	r, err := sqlc.SetAdminActive(ctx, q.db, dbsqlc.SetAdminActiveParams{ID: id, Active: active})
	return adminOf(r.Admin), r.Revoked, notFound(err)
}

// DeleteAdminSessions revokes every login token of an admin and returns how many there were.
func (q *Queries) DeleteAdminSessions(ctx context.Context, adminID string) (int64, error) {
	return sqlc.DeleteAdminSessions(ctx, q.db, adminID)
}

// UseTOTPStep records step as the admin's last accepted TOTP time step, unless that step or a
// later one was accepted already (a replay): ok is false then. Atomic, so of two logins racing
// with one code only one gets in.
func (q *Queries) UseTOTPStep(ctx context.Context, adminID string, step int64) (ok bool, err error) {
	n, err := sqlc.UseTOTPStep(ctx, q.db, dbsqlc.UseTOTPStepParams{ID: adminID, Step: step})
	return n == 1, err
}

// RememberLoginClient records that the admin logged in from client (see LoginClientKnown).
func (q *Queries) RememberLoginClient(ctx context.Context, adminID, client string) error {
	return sqlc.RememberLoginClient(ctx, q.db, dbsqlc.RememberLoginClientParams{AdminID: adminID, Client: client})
}

// LoginClientKnown reports whether the admin with this email logged in from client within the
// last period. It answers false for an unknown email, with the same one query.
func (q *Queries) LoginClientKnown(ctx context.Context, email, client string, period time.Duration) (bool, error) {
	return sqlc.LoginClientKnown(ctx, q.db, dbsqlc.LoginClientKnownParams{Email: email, Client: client, Period: interval(period)})
}

// DeleteOldLoginClients forgets login clients not used since before.
func (q *Queries) DeleteOldLoginClients(ctx context.Context, before time.Time) (int64, error) {
	return sqlc.DeleteOldLoginClients(ctx, q.db, before)
}

// DeleteExpiredAdminSessions removes expired login tokens.
func (q *Queries) DeleteExpiredAdminSessions(ctx context.Context) (int64, error) {
	return sqlc.DeleteExpiredAdminSessions(ctx, q.db)
}
