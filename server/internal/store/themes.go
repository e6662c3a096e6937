package store

import (
	"context"
	"encoding/json"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// themeOf maps a themes row to the domain.
func themeOf(r dbsqlc.Theme) (domain.Theme, error) {
	t := domain.Theme{ID: r.ID, OperatorID: r.OperatorID, Slug: r.Slug, Name: r.Name, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	return t, json.Unmarshal(r.Style, &t.Style)
}

// InsertTheme creates a theme.
func (q *Queries) InsertTheme(ctx context.Context, t domain.Theme) (domain.Theme, error) {
	style, err := json.Marshal(t.Style)
	if err != nil {
		return domain.Theme{}, err
	}
	r, err := sqlc.InsertTheme(ctx, q.db, dbsqlc.InsertThemeParams{ID: t.ID, OperatorID: t.OperatorID, Slug: t.Slug, Name: t.Name, Style: style})
	if err != nil {
		return domain.Theme{}, err
	}
	return themeOf(r)
}

// UpdateTheme replaces the name and style of a theme owned by one of operatorIDs.
func (q *Queries) UpdateTheme(ctx context.Context, operatorIDs []string, id, name string, s domain.ThemeStyle) (domain.Theme, error) {
	style, err := json.Marshal(s)
	if err != nil {
		return domain.Theme{}, err
	}
	r, err := sqlc.UpdateTheme(ctx, q.db, dbsqlc.UpdateThemeParams{ID: id, OperatorIDs: operatorIDs, Name: name, Style: style})
	if err != nil {
		return domain.Theme{}, notFound(err)
	}
	return themeOf(r)
}

// DeleteTheme removes a theme owned by one of operatorIDs (nil: any operator).
func (q *Queries) DeleteTheme(ctx context.Context, operatorIDs []string, id string) error {
	n, err := sqlc.DeleteTheme(ctx, q.db, dbsqlc.DeleteThemeParams{ID: id, OperatorIDs: operatorIDs})
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// ListThemes lists the themes of operatorIDs (nil: every operator).
func (q *Queries) ListThemes(ctx context.Context, operatorIDs []string) ([]domain.Theme, error) {
	rows, err := sqlc.ListThemes(ctx, q.db, operatorIDs)
	return many(rows, err, themeOf)
}

// ThemeBySlug finds an operator's theme.
func (q *Queries) ThemeBySlug(ctx context.Context, operatorID, slug string) (domain.Theme, error) {
	r, err := sqlc.ThemeBySlug(ctx, q.db, dbsqlc.ThemeBySlugParams{OperatorID: operatorID, Slug: slug})
	if err != nil {
		return domain.Theme{}, notFound(err)
	}
	return themeOf(r)
}
