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

// nonNil is s, or an empty slice for nil: lists that were collected with pgx.CollectRows stay
// empty, not nil, when nothing matches.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
