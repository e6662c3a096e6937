// Package theme manages widget themes. Admins create them in the panel for operators in
// their scope; the widget applies one with ?theme=<slug>, else the operator's default.
package theme

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Service is the theme service.
type Service struct{ pool *pgxpool.Pool }

// New returns the service.
func New(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// List lists the themes the admin may see, optionally of one operator.
func (s *Service) List(ctx context.Context, a auth.Admin, operatorID string) ([]domain.Theme, error) {
	ids, err := auth.NarrowedIDs(a.Scope(), operatorID)
	if err != nil {
		return nil, err
	}
	themes, err := store.New(s.pool).ListThemes(ctx, ids)
	if err != nil {
		return nil, fault.Wrap(err, "list themes")
	}
	return themes, nil
}

// Create creates a theme for an operator in the admin's scope (default: the admin's own).
func (s *Service) Create(ctx context.Context, a auth.Admin, operatorID, slug, name string, style domain.ThemeStyle) (domain.Theme, error) {
	if operatorID == "" {
		operatorID = a.OperatorID
	}
	if operatorID == "" {
		return domain.Theme{}, fault.Invalid("operatorId", "is required for a service-team admin")
	}
	if !a.Scope().Includes(operatorID) {
		return domain.Theme{}, fault.New(fault.NotFound, "operator not found")
	}
	q := store.New(s.pool)
	if _, err := q.GetOperator(ctx, operatorID); errors.Is(err, store.ErrNotFound) {
		return domain.Theme{}, fault.New(fault.NotFound, "operator not found")
	} else if err != nil {
		return domain.Theme{}, fault.Wrap(err, "load operator")
	}
	t, err := q.InsertTheme(ctx, domain.Theme{ID: uuid.NewString(), OperatorID: operatorID, Slug: slug, Name: name, Style: style})
	if _, dup := store.IsUniqueViolation(err); dup {
		return t, fault.New(fault.Conflict, "theme slug %q is already used by this operator", slug)
	}
	if err != nil {
		return t, fault.Wrap(err, "create theme")
	}
	return t, nil
}

// Update replaces a theme's name and style.
func (s *Service) Update(ctx context.Context, a auth.Admin, id, name string, style domain.ThemeStyle) (domain.Theme, error) {
	t, err := store.New(s.pool).UpdateTheme(ctx, auth.OperatorIDs(a.Scope()), id, name, style)
	if errors.Is(err, store.ErrNotFound) {
		return t, fault.New(fault.NotFound, "theme not found")
	}
	if err != nil {
		return t, fault.Wrap(err, "update theme")
	}
	return t, nil
}

// Delete removes a theme.
func (s *Service) Delete(ctx context.Context, a auth.Admin, id string) error {
	err := store.New(s.pool).DeleteTheme(ctx, auth.OperatorIDs(a.Scope()), id)
	if errors.Is(err, store.ErrNotFound) {
		return fault.New(fault.NotFound, "theme not found")
	}
	if err != nil {
		return fault.Wrap(err, "delete theme")
	}
	return nil
}

// Resolve picks the theme a widget shows: the slug asked for, else the operator's default;
// ok is false for the built-in look.
func (s *Service) Resolve(ctx context.Context, op domain.Operator, slug string) (domain.Theme, bool, error) {
	q := store.New(s.pool)
	for _, candidate := range []string{slug, op.ThemeSlug} {
		if candidate == "" {
			continue
		}
		t, err := q.ThemeBySlug(ctx, op.ID, candidate)
		if err == nil {
			return t, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return t, false, fault.Wrap(err, "load theme")
		}
	}
	return domain.Theme{}, false, nil
}
