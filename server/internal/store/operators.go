package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// operatorOf maps an operators row to the domain.
func operatorOf(r dbsqlc.Operator) domain.Operator {
	return domain.Operator{ID: r.ID, ParentID: deref(r.ParentID), Name: r.Name, WebhookURL: r.WebhookUrl,
		ApprovalMode: r.ApprovalMode, ApprovalEnabled: r.ApprovalEnabled, PerTxCap: r.PerTxCap, DailyCap: r.DailyCap,
		FiatCurrency: r.FiatCurrency, RedirectURL: deref(r.RedirectUrl), ThemeSlug: deref(r.ThemeSlug),
		DepositFeeBps: r.DepositFeeBps, Active: r.Active, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// operatorSettingsArgs are the settings as the statements take them (NULL: not set).
func operatorSettingsArgs(s domain.OperatorSettings) dbsqlc.UpdateOperatorParams {
	var mode *string
	if s.ApprovalMode != nil {
		m := string(*s.ApprovalMode)
		mode = &m
	}
	var fee pgtype.Int4
	if s.DepositFeeBps != nil {
		fee = pgtype.Int4{Int32: *s.DepositFeeBps, Valid: true}
	}
	return dbsqlc.UpdateOperatorParams{Name: s.Name, WebhookUrl: s.WebhookURL, ParentID: s.ParentID, ApprovalMode: mode,
		ApprovalEnabled: optionalBool(s.ApprovalEnabled), PerTxCap: s.PerTxCap, DailyCap: s.DailyCap,
		FiatCurrency: s.FiatCurrency, RedirectUrl: s.RedirectURL, ThemeSlug: s.ThemeSlug, DepositFeeBps: fee,
		Active: optionalBool(s.Active)}
}

func optionalBool(b *bool) pgtype.Bool {
	if b == nil {
		return pgtype.Bool{}
	}
	return pgtype.Bool{Bool: *b, Valid: true}
}

// InsertOperator creates an operator with id; absent settings take the column defaults.
func (q *Queries) InsertOperator(ctx context.Context, id string, s domain.OperatorSettings) (domain.Operator, error) {
	a := operatorSettingsArgs(s)
	r, err := sqlc.InsertOperator(ctx, q.db, dbsqlc.InsertOperatorParams{ID: id, Name: a.Name, WebhookUrl: a.WebhookUrl,
		ParentID: a.ParentID, ApprovalMode: a.ApprovalMode, ApprovalEnabled: a.ApprovalEnabled, PerTxCap: a.PerTxCap,
		DailyCap: a.DailyCap, FiatCurrency: a.FiatCurrency, RedirectUrl: a.RedirectUrl, ThemeSlug: a.ThemeSlug,
		DepositFeeBps: a.DepositFeeBps, Active: a.Active})
	return operatorOf(r), notFound(err)
}

// UpdateOperator applies the non-nil settings.
func (q *Queries) UpdateOperator(ctx context.Context, id string, s domain.OperatorSettings) (domain.Operator, error) {
	a := operatorSettingsArgs(s)
	a.ID = id
	r, err := sqlc.UpdateOperator(ctx, q.db, a)
	return operatorOf(r), notFound(err)
}

// GetOperator returns one operator. An id that is not a UUID names none (ErrNotFound), rather
// than failing the statement: the CLI passes ids as typed.
func (q *Queries) GetOperator(ctx context.Context, id string) (domain.Operator, error) {
	if len(id) != 36 || uuid.Validate(id) != nil { // the canonical form only (Validate also takes urn:uuid:…)
		return domain.Operator{}, ErrNotFound
	}
	r, err := sqlc.GetOperator(ctx, q.db, id)
	return operatorOf(r), notFound(err)
}

// ListOperators lists every operator, or the direct children of parentID when it is not "".
func (q *Queries) ListOperators(ctx context.Context, parentID string) ([]domain.Operator, error) {
	rows, err := sqlc.ListOperators(ctx, q.db, parentID)
	if err != nil || rows == nil {
		return nil, err
	}
	out := make([]domain.Operator, 0, len(rows))
	for _, r := range rows {
		out = append(out, operatorOf(r))
	}
	return out, nil
}

// OperatorTree returns the ids of root and every operator below it (sub-operators, transitively).
func (q *Queries) OperatorTree(ctx context.Context, root string) ([]string, error) {
	return sqlc.OperatorTree(ctx, q.db, root)
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

// operatorKeyOf maps an operator_keys row (its digest left out) to an OperatorKey.
func operatorKeyOf(r dbsqlc.OperatorKey) (OperatorKey, error) {
	return OperatorKey{ID: r.ID, OperatorID: r.OperatorID, Sealed: r.Sealed, Prefix: r.Prefix, CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt}, nil
}

// InsertOperatorKey stores a key's digest and sealed form.
func (q *Queries) InsertOperatorKey(ctx context.Context, operatorID string, digest, sealed []byte, prefix string) error {
	return sqlc.InsertOperatorKey(ctx, q.db, dbsqlc.InsertOperatorKeyParams{OperatorID: operatorID, Digest: digest,
		Sealed: sealed, Prefix: prefix})
}

// ExpireCurrentKeys starts the grace period of the operator's current keys; it returns the
// expiry it set.
func (q *Queries) ExpireCurrentKeys(ctx context.Context, operatorID string, grace time.Duration) (time.Time, error) {
	return sqlc.ExpireCurrentKeys(ctx, q.db, dbsqlc.ExpireCurrentKeysParams{OperatorID: operatorID, Grace: interval(grace)})
}

// ValidOperatorKeys returns the operator's unexpired keys, newest first.
func (q *Queries) ValidOperatorKeys(ctx context.Context, operatorID string) ([]OperatorKey, error) {
	rows, err := sqlc.ValidOperatorKeys(ctx, q.db, operatorID)
	if err != nil || rows == nil {
		return nil, err
	}
	return mapAll(rows, operatorKeyOf)
}

// OperatorByKeyDigest authenticates: the operator owning an unexpired key with this digest.
func (q *Queries) OperatorByKeyDigest(ctx context.Context, digest []byte) (domain.Operator, error) {
	r, err := sqlc.OperatorByKeyDigest(ctx, q.db, digest)
	return operatorOf(r), notFound(err)
}
