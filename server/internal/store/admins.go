package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const adminColumns = `id::text, email, password_hash, totp_sealed, COALESCE(operator_id::text, ''), active, created_at`

func scanAdmin(row interface{ Scan(...any) error }) (domain.Admin, error) {
	var a domain.Admin
	err := row.Scan(&a.ID, &a.Email, &a.PasswordHash, &a.TOTPSealed, &a.OperatorID, &a.Active, &a.CreatedAt)
	return a, notFound(err)
}

// InsertAdmin creates an admin.
func (q *Queries) InsertAdmin(ctx context.Context, a domain.Admin) (domain.Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `
		INSERT INTO admins (id, email, password_hash, totp_sealed, operator_id)
		VALUES ($1, $2, $3, $4, NULLIF($5, '')::uuid) RETURNING `+adminColumns,
		a.ID, a.Email, a.PasswordHash, a.TOTPSealed, a.OperatorID))
}

// AdminByEmail finds an admin by email, case-insensitively.
func (q *Queries) AdminByEmail(ctx context.Context, email string) (domain.Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `SELECT `+adminColumns+` FROM admins WHERE lower(email) = lower($1)`, email))
}

// InsertAdminSession stores a login token's digest.
func (q *Queries) InsertAdminSession(ctx context.Context, digest []byte, adminID string, ttl time.Duration) (time.Time, error) {
	var exp time.Time
	err := q.db.QueryRow(ctx, `INSERT INTO admin_sessions (digest, admin_id, expires_at) VALUES ($1, $2, now() + $3::interval)
		RETURNING expires_at`, digest, adminID, ttl).Scan(&exp)
	return exp, err
}

// AdminBySessionDigest authenticates a login token: the active admin of an unexpired session.
func (q *Queries) AdminBySessionDigest(ctx context.Context, digest []byte) (domain.Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `SELECT `+adminColumns+` FROM admins WHERE active AND id = (
		SELECT admin_id FROM admin_sessions WHERE digest = $1 AND expires_at > now())`, digest))
}

// DeleteAdminSession revokes a login token.
func (q *Queries) DeleteAdminSession(ctx context.Context, digest []byte) error {
	_, err := q.db.Exec(ctx, `DELETE FROM admin_sessions WHERE digest = $1`, digest)
	return err
}

// AdminByID finds an admin by id.
func (q *Queries) AdminByID(ctx context.Context, id string) (domain.Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `SELECT `+adminColumns+` FROM admins WHERE id = $1`, id))
}

// SetAdminActive enables or disables an admin. Disabling also deletes its login tokens (in the
// same statement), so none comes back when the admin is enabled again; revoked counts them.
func (q *Queries) SetAdminActive(ctx context.Context, id string, active bool) (a domain.Admin, revoked int64, err error) {
	err = q.db.QueryRow(ctx, `
		WITH revoked AS (DELETE FROM admin_sessions WHERE admin_id = $1 AND NOT $2 RETURNING 1),
		     updated AS (UPDATE admins SET active = $2 WHERE id = $1 RETURNING `+adminColumns+`)
		SELECT updated.*, (SELECT count(*) FROM revoked) FROM updated`, id, active).
		Scan(&a.ID, &a.Email, &a.PasswordHash, &a.TOTPSealed, &a.OperatorID, &a.Active, &a.CreatedAt, &revoked)
	return a, revoked, notFound(err)
}

// DeleteAdminSessions revokes every login token of an admin and returns how many there were.
func (q *Queries) DeleteAdminSessions(ctx context.Context, adminID string) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM admin_sessions WHERE admin_id = $1`, adminID)
	return tag.RowsAffected(), err
}

// UseTOTPStep records step as the admin's last accepted TOTP time step, unless that step or a
// later one was accepted already (a replay): ok is false then. Atomic, so of two logins racing
// with one code only one gets in.
func (q *Queries) UseTOTPStep(ctx context.Context, adminID string, step int64) (ok bool, err error) {
	tag, err := q.db.Exec(ctx, `UPDATE admins SET totp_last_step = $2
		WHERE id = $1 AND (totp_last_step IS NULL OR totp_last_step < $2)`, adminID, step)
	return tag.RowsAffected() == 1, err
}

// RememberLoginClient records that the admin logged in from client (see LoginClientKnown).
func (q *Queries) RememberLoginClient(ctx context.Context, adminID, client string) error {
	_, err := q.db.Exec(ctx, `INSERT INTO admin_login_clients (admin_id, client) VALUES ($1, $2)
		ON CONFLICT (admin_id, client) DO UPDATE SET last_login_at = now()`, adminID, client)
	return err
}

// LoginClientKnown reports whether the admin with this email logged in from client within the
// last period. It answers false for an unknown email, with the same one query.
func (q *Queries) LoginClientKnown(ctx context.Context, email, client string, period time.Duration) (bool, error) {
	var known bool
	err := q.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM admin_login_clients c JOIN admins a ON a.id = c.admin_id
		WHERE lower(a.email) = lower($1) AND c.client = $2 AND c.last_login_at >= now() - $3::interval)`,
		email, client, period).Scan(&known)
	return known, err
}

// DeleteOldLoginClients forgets login clients not used since before.
func (q *Queries) DeleteOldLoginClients(ctx context.Context, before time.Time) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM admin_login_clients WHERE last_login_at < $1`, before)
	return tag.RowsAffected(), err
}

// DeleteExpiredAdminSessions removes expired login tokens.
func (q *Queries) DeleteExpiredAdminSessions(ctx context.Context) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM admin_sessions WHERE expires_at <= now()`)
	return tag.RowsAffected(), err
}
