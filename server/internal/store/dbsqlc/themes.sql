-- name: InsertTheme :one
INSERT INTO themes (id, operator_id, slug, name, style)
VALUES (@id, @operator_id, @slug, @name, @style)
RETURNING id, operator_id, slug, name, style, created_at, updated_at;

-- name: UpdateTheme :one
-- A NULL operator_ids matches every operator.
UPDATE themes SET name = @name, style = @style, updated_at = now()
WHERE id = @id AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[]))
RETURNING id, operator_id, slug, name, style, created_at, updated_at;

-- name: DeleteTheme :execrows
DELETE FROM themes
WHERE id = @id AND (sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[]));

-- name: ListThemes :many
SELECT id, operator_id, slug, name, style, created_at, updated_at FROM themes
WHERE sqlc.narg(operator_ids)::uuid[] IS NULL OR operator_id = ANY(sqlc.narg(operator_ids)::uuid[])
ORDER BY operator_id, slug;

-- name: ThemeBySlug :one
SELECT id, operator_id, slug, name, style, created_at, updated_at FROM themes
WHERE operator_id = @operator_id AND slug = @slug;
