package store

import (
	"context"
	"encoding/json"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const themeColumns = `id::text, operator_id::text, slug, name, style, created_at, updated_at`

func scanTheme(row interface{ Scan(...any) error }) (domain.Theme, error) {
	var t domain.Theme
	var style []byte
	if err := row.Scan(&t.ID, &t.OperatorID, &t.Slug, &t.Name, &style, &t.CreatedAt, &t.UpdatedAt); err != nil {
		return t, notFound(err)
	}
	return t, json.Unmarshal(style, &t.Style)
}

func scanThemes(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]domain.Theme, error) {
	defer rows.Close()
	var out []domain.Theme
	for rows.Next() {
		t, err := scanTheme(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// InsertTheme creates a theme.
func (q *Queries) InsertTheme(ctx context.Context, t domain.Theme) (domain.Theme, error) {
	style, err := json.Marshal(t.Style)
	if err != nil {
		return domain.Theme{}, err
	}
	return scanTheme(q.db.QueryRow(ctx, `INSERT INTO themes (id, operator_id, slug, name, style)
		VALUES ($1, $2, $3, $4, $5) RETURNING `+themeColumns, t.ID, t.OperatorID, t.Slug, t.Name, style))
}

// UpdateTheme replaces the name and style of a theme owned by one of operatorIDs.
func (q *Queries) UpdateTheme(ctx context.Context, operatorIDs []string, id, name string, s domain.ThemeStyle) (domain.Theme, error) {
	style, err := json.Marshal(s)
	if err != nil {
		return domain.Theme{}, err
	}
	return scanTheme(q.db.QueryRow(ctx, `UPDATE themes SET name = $3, style = $4, updated_at = now()
		WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2::uuid[])) RETURNING `+themeColumns, id, operatorIDs, name, style))
}

// DeleteTheme removes a theme owned by one of operatorIDs (nil: any operator).
func (q *Queries) DeleteTheme(ctx context.Context, operatorIDs []string, id string) error {
	tag, err := q.db.Exec(ctx, `DELETE FROM themes WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2::uuid[]))`, id, operatorIDs)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return err
}

// ListThemes lists the themes of operatorIDs (nil: every operator).
func (q *Queries) ListThemes(ctx context.Context, operatorIDs []string) ([]domain.Theme, error) {
	rows, err := q.db.Query(ctx, `SELECT `+themeColumns+` FROM themes
		WHERE $1::uuid[] IS NULL OR operator_id = ANY($1::uuid[]) ORDER BY operator_id, slug`, operatorIDs)
	if err != nil {
		return nil, err
	}
	return scanThemes(rows)
}

// ThemeBySlug finds an operator's theme.
func (q *Queries) ThemeBySlug(ctx context.Context, operatorID, slug string) (domain.Theme, error) {
	return scanTheme(q.db.QueryRow(ctx, `SELECT `+themeColumns+` FROM themes WHERE operator_id = $1 AND slug = $2`, operatorID, slug))
}
