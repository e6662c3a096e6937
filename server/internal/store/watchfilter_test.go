package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"testing"

	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestWatchFilterSavedAndReadInChunks: a filter of several megabytes is read back byte for
// byte through the chunked reader; a save that has read less keeps the saved one; a filter
// deleted by its checksum is gone, and one with another checksum is not deleted.
func TestWatchFilterSavedAndReadInChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := store.New(testdb.New(t))
	read := func() (store.WatchFilterHeader, []byte, error) {
		var h store.WatchFilterHeader
		var data []byte
		err := q.ReadWatchFilter(ctx, func(got store.WatchFilterHeader, r io.Reader) error {
			h = got
			var err error
			data, err = io.ReadAll(r)
			return err
		})
		return h, data, err
	}
	if _, _, err := read(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read before any save: %v; want ErrNotFound", err)
	}
	data := make([]byte, 2<<20+12345) // two whole chunks and a part
	rand.Read(data)
	f := store.WatchFilter{Format: "f", Capacity: 100, AddressCount: 10, LastIndex: 41, Gaps: []int64{7, 9}, Filter: data, Checksum: []byte("sum")}
	if replaced, err := q.SaveWatchFilter(ctx, f); err != nil || !replaced {
		t.Fatalf("first save: %v, %v", replaced, err)
	}
	h, got, err := read()
	if err != nil || !bytes.Equal(got, data) || h.Size != int64(len(data)) || h.LastIndex != 41 || len(h.Gaps) != 2 || h.Format != "f" {
		t.Fatalf("read back %d bytes (equal %v, size %d, last %d, gaps %v, err %v)", len(got), bytes.Equal(got, data), h.Size, h.LastIndex, h.Gaps, err)
	}
	older := f
	older.LastIndex, older.Filter = 40, []byte("older")
	if replaced, err := q.SaveWatchFilter(ctx, older); err != nil || replaced {
		t.Fatalf("a filter that read less replaced the saved one (%v, %v)", replaced, err)
	}
	if err := q.DeleteWatchFilter(ctx, []byte("another")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(); err != nil {
		t.Fatalf("deleting another checksum removed the saved filter: %v", err)
	}
	if err := q.DeleteWatchFilter(ctx, []byte("sum")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := read(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("read after delete: %v; want ErrNotFound", err)
	}
}
