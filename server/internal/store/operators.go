package store

import (
	"context"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const operatorColumns = `id::text, COALESCE(parent_id::text, ''), name, webhook_url, approval_mode, approval_enabled,
	per_tx_cap, daily_cap, fiat_currency, COALESCE(redirect_url, ''), COALESCE(theme_slug, ''), deposit_fee_bps,
	active, created_at, updated_at`

func scanOperator(row interface{ Scan(...any) error }) (domain.Operator, error) {
	var o domain.Operator
	err := row.Scan(&o.ID, &o.ParentID, &o.Name, &o.WebhookURL, &o.ApprovalMode, &o.ApprovalEnabled,
		&o.PerTxCap, &o.DailyCap, &o.FiatCurrency, &o.RedirectURL, &o.ThemeSlug, &o.DepositFeeBps,
		&o.Active, &o.CreatedAt, &o.UpdatedAt)
	return o, notFound(err)
}

// InsertOperator creates an operator with id; absent settings take the column defaults.
func (q *Queries) InsertOperator(ctx context.Context, id string, s domain.OperatorSettings) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `
		INSERT INTO operators (id, name, webhook_url, parent_id, approval_mode, approval_enabled, per_tx_cap,
			daily_cap, fiat_currency, redirect_url, theme_slug, deposit_fee_bps, active)
		VALUES ($1, $2, $3, NULLIF($4, '')::uuid, COALESCE($5, 'SYNC'), COALESCE($6, false), NULLIF($7, '')::numeric,
			NULLIF($8, '')::numeric, COALESCE($9, 'USD'), NULLIF($10, ''), NULLIF($11, ''), COALESCE($12, 0), COALESCE($13, true))
		RETURNING `+operatorColumns,
		id, s.Name, s.WebhookURL, s.ParentID, s.ApprovalMode, s.ApprovalEnabled, s.PerTxCap, s.DailyCap,
		s.FiatCurrency, s.RedirectURL, s.ThemeSlug, s.DepositFeeBps, s.Active))
}

// UpdateOperator applies the non-nil settings.
func (q *Queries) UpdateOperator(ctx context.Context, id string, s domain.OperatorSettings) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `
		UPDATE operators SET
			name = COALESCE($2, name),
			webhook_url = COALESCE($3, webhook_url),
			parent_id = CASE WHEN $4::text IS NULL THEN parent_id ELSE NULLIF($4, '')::uuid END,
			approval_mode = COALESCE($5, approval_mode),
			approval_enabled = COALESCE($6, approval_enabled),
			per_tx_cap = CASE WHEN $7::text IS NULL THEN per_tx_cap ELSE NULLIF($7, '')::numeric END,
			daily_cap = CASE WHEN $8::text IS NULL THEN daily_cap ELSE NULLIF($8, '')::numeric END,
			fiat_currency = COALESCE($9, fiat_currency),
			redirect_url = CASE WHEN $10::text IS NULL THEN redirect_url ELSE NULLIF($10, '') END,
			theme_slug = CASE WHEN $11::text IS NULL THEN theme_slug ELSE NULLIF($11, '') END,
			deposit_fee_bps = COALESCE($12, deposit_fee_bps),
			active = COALESCE($13, active),
			updated_at = now()
		WHERE id = $1
		RETURNING `+operatorColumns,
		id, s.Name, s.WebhookURL, s.ParentID, s.ApprovalMode, s.ApprovalEnabled, s.PerTxCap, s.DailyCap,
		s.FiatCurrency, s.RedirectURL, s.ThemeSlug, s.DepositFeeBps, s.Active))
}

// GetOperator returns one operator.
func (q *Queries) GetOperator(ctx context.Context, id string) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE id = $1`, id))
}

// ListOperators lists every operator, or the direct children of parentID when it is not "".
func (q *Queries) ListOperators(ctx context.Context, parentID string) ([]domain.Operator, error) {
	rows, err := q.db.Query(ctx, `SELECT `+operatorColumns+` FROM operators
		WHERE $1 = '' OR parent_id = NULLIF($1, '')::uuid ORDER BY created_at, id`, parentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []domain.Operator
	for rows.Next() {
		o, err := scanOperator(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// OperatorTree returns the ids of root and every operator below it (sub-operators, transitively).
func (q *Queries) OperatorTree(ctx context.Context, root string) ([]string, error) {
	rows, err := q.db.Query(ctx, `
		WITH RECURSIVE tree AS (
			SELECT id FROM operators WHERE id = $1
			UNION SELECT o.id FROM operators o JOIN tree t ON o.parent_id = t.id
		) SELECT id::text FROM tree`, root)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// OperatorKey is a stored operator key (never the key itself).
type OperatorKey struct {
	ID         int64
	OperatorID string
	Sealed     []byte
	Prefix     string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
}

// InsertOperatorKey stores a key's digest and sealed form.
func (q *Queries) InsertOperatorKey(ctx context.Context, operatorID string, digest, sealed []byte, prefix string) error {
	_, err := q.db.Exec(ctx, `INSERT INTO operator_keys (operator_id, digest, sealed, prefix) VALUES ($1, $2, $3, $4)`,
		operatorID, digest, sealed, prefix)
	return err
}

// ExpireCurrentKeys starts the grace period of the operator's current keys; it returns the
// expiry it set.
func (q *Queries) ExpireCurrentKeys(ctx context.Context, operatorID string, grace time.Duration) (time.Time, error) {
	var at time.Time
	err := q.db.QueryRow(ctx, `
		WITH upd AS (
			UPDATE operator_keys SET expires_at = now() + $2::interval
			WHERE operator_id = $1 AND (expires_at IS NULL OR expires_at > now() + $2::interval)
		) SELECT now() + $2::interval`, operatorID, grace).Scan(&at)
	return at, err
}

// ValidOperatorKeys returns the operator's unexpired keys, newest first.
func (q *Queries) ValidOperatorKeys(ctx context.Context, operatorID string) ([]OperatorKey, error) {
	rows, err := q.db.Query(ctx, `SELECT id, operator_id::text, sealed, prefix, created_at, expires_at FROM operator_keys
		WHERE operator_id = $1 AND (expires_at IS NULL OR expires_at > now()) ORDER BY created_at DESC, id DESC`, operatorID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []OperatorKey
	for rows.Next() {
		var k OperatorKey
		if err := rows.Scan(&k.ID, &k.OperatorID, &k.Sealed, &k.Prefix, &k.CreatedAt, &k.ExpiresAt); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// OperatorByKeyDigest authenticates: the operator owning an unexpired key with this digest.
func (q *Queries) OperatorByKeyDigest(ctx context.Context, digest []byte) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE id = (
		SELECT operator_id FROM operator_keys WHERE digest = $1 AND (expires_at IS NULL OR expires_at > now()))`, digest))
}
