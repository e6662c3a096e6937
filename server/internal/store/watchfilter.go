package store

import (
	"context"
	"errors"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// WatchFilter is the watched set's filter as a worker saved it: every watched address with an
// index up to LastIndex is in Filter, except the indexes in Gaps.
type WatchFilter = dbsqlc.GetWatchFilterRow

// WatchFilterHeader is the saved filter without its bytes.
type WatchFilterHeader = dbsqlc.GetWatchFilterHeaderRow

// watchFilterChunk is how much of a saved filter is read at once.
const watchFilterChunk = 1 << 20

// WatchFilter returns the saved filter whole, or ErrNotFound before the first save.
func (q *Queries) WatchFilter(ctx context.Context) (WatchFilter, error) {
	f, err := sqlc.GetWatchFilter(ctx, q.db)
	return f, notFound(err)
}

// ReadWatchFilter reads the saved filter from one read-only snapshot (a save meanwhile cannot
// mix two filters): its header, then its bytes through a reader that fetches a megabyte at a
// time, so a 22 MB filter is not held whole beside what read builds from it. It returns
// ErrNotFound before the first save.
func (q *Queries) ReadWatchFilter(ctx context.Context, read func(WatchFilterHeader, io.Reader) error) error {
	run := func(tx DBTX) error {
		h, err := sqlc.GetWatchFilterHeader(ctx, tx)
		if err != nil {
			return notFound(err)
		}
		return read(h, &watchFilterReader{ctx: ctx, db: tx, size: h.Size})
	}
	if b, ok := q.db.(interface {
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	}); ok {
		return pgx.BeginTxFunc(ctx, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return run(tx) })
	}
	return run(q.db) // already in the caller's transaction
}

// watchFilterReader reads the saved filter's bytes in chunks.
type watchFilterReader struct {
	ctx        context.Context //nolint:containedctx // Read takes no context: the reads run under ReadWatchFilter's
	db         DBTX
	size, next int64
	buf        []byte
}

func (r *watchFilterReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		if r.next >= r.size {
			return 0, io.EOF
		}
		chunk, err := sqlc.WatchFilterChunk(r.ctx, r.db, dbsqlc.WatchFilterChunkParams{
			FromByte: int32(r.next + 1), Length: int32(min(watchFilterChunk, r.size-r.next))}) //nolint:gosec // bytea is at most 1 GB
		if err != nil {
			return 0, notFound(err)
		}
		if len(chunk) == 0 {
			return 0, errors.New("store: the saved watch filter is shorter than its header says")
		}
		r.buf, r.next = chunk, r.next+int64(len(chunk))
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
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
