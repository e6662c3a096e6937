package store

import (
	"context"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// WatchFilter is the watched set's filter as a worker saved it: every watched address with an
// index up to LastIndex is in Filter, except the indexes in Gaps.
type WatchFilter = dbsqlc.GetWatchFilterRow

// WatchFilter returns the saved filter, or ErrNotFound before the first save.
func (q *Queries) WatchFilter(ctx context.Context) (WatchFilter, error) {
	f, err := sqlc.GetWatchFilter(ctx, q.db)
	return f, notFound(err)
}

// SaveWatchFilter saves f unless the saved one has read further (or as far and is larger);
// it reports whether f replaced it.
func (q *Queries) SaveWatchFilter(ctx context.Context, f WatchFilter) (bool, error) {
	n, err := sqlc.SaveWatchFilter(ctx, q.db, dbsqlc.SaveWatchFilterParams{Format: f.Format, Capacity: f.Capacity,
		AddressCount: f.AddressCount, LastIndex: f.LastIndex, Gaps: f.Gaps, Filter: f.Filter, Checksum: f.Checksum})
	return n == 1, err
}

// DeleteWatchFilter removes the saved filter with this checksum (one that failed its checks),
// unless another has been saved since.
func (q *Queries) DeleteWatchFilter(ctx context.Context, checksum []byte) error {
	return sqlc.DeleteWatchFilter(ctx, q.db, checksum)
}
