package store

import (
	"context"
	"time"
)

// Admin is a panel user. OperatorID is "" for a service-team admin.
type Admin struct {
	ID           string
	Email        string
	PasswordHash string
	TOTPSealed   []byte
	OperatorID   string
	Active       bool
	CreatedAt    time.Time
}

const adminColumns = `id::text, email, password_hash, totp_sealed, COALESCE(operator_id::text, ''), active, created_at`

func scanAdmin(row interface{ Scan(...any) error }) (Admin, error) {
	var a Admin
	err := row.Scan(&a.ID, &a.Email, &a.PasswordHash, &a.TOTPSealed, &a.OperatorID, &a.Active, &a.CreatedAt)
	return a, notFound(err)
}

// InsertAdmin creates an admin.
func (q *Queries) InsertAdmin(ctx context.Context, a Admin) (Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `
		INSERT INTO admins (id, email, password_hash, totp_sealed, operator_id)
		VALUES ($1, $2, $3, $4, NULLIF($5, '')::uuid) RETURNING `+adminColumns,
		a.ID, a.Email, a.PasswordHash, a.TOTPSealed, a.OperatorID))
}

// AdminByEmail finds an admin by email, case-insensitively.
func (q *Queries) AdminByEmail(ctx context.Context, email string) (Admin, error) {
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
func (q *Queries) AdminBySessionDigest(ctx context.Context, digest []byte) (Admin, error) {
	return scanAdmin(q.db.QueryRow(ctx, `SELECT `+adminColumns+` FROM admins WHERE active AND id = (
		SELECT admin_id FROM admin_sessions WHERE digest = $1 AND expires_at > now())`, digest))
}

// DeleteAdminSession revokes a login token.
func (q *Queries) DeleteAdminSession(ctx context.Context, digest []byte) error {
	_, err := q.db.Exec(ctx, `DELETE FROM admin_sessions WHERE digest = $1`, digest)
	return err
}

// DeleteExpiredAdminSessions removes expired login tokens.
func (q *Queries) DeleteExpiredAdminSessions(ctx context.Context) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM admin_sessions WHERE expires_at <= now()`)
	return tag.RowsAffected(), err
}
