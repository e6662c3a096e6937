package store

import "github.com/cofferhq/coffer/server/internal/store/dbsqlc"

// sqlc holds the generated statements (dbsqlc: queries in .sql files beside the generated
// code, checked against the migrations by `make gen`). Each takes the connection it runs on,
// so one value serves the pool and every transaction.
var sqlc = dbsqlc.New() //nolint:gochecknoglobals // an empty struct with no state to share or mutate; a call at every statement buys nothing

// mapAll maps generated rows to domain values, stopping at the first error.
func mapAll[R, T any](rows []R, of func(R) (T, error)) ([]T, error) {
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		t, err := of(r)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// one maps a single-row query's result: no row is ErrNotFound.
func one[R, T any](r R, err error, of func(R) (T, error)) (T, error) {
	if err != nil {
		var zero T
		return zero, notFound(err)
	}
	return of(r)
}

// many maps a list query's result.
func many[R, T any](rows []R, err error, of func(R) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	return mapAll(rows, of)
}

// nonNil is s, or an empty slice for nil: lists that were collected with pgx.CollectRows stay
// empty, not nil, when nothing matches.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
