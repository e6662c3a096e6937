package store_test

import (
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/store"
)

func TestSlidingHits(t *testing.T) {
	t.Parallel()
	const w = 15 * time.Minute
	for _, c := range []struct {
		name              string
		current, previous int
		elapsed           time.Duration
		want              int
	}{
		{"no previous window", 3, 0, 5 * time.Minute, 3},
		{"window just began: all of the previous one", 1, 10, 0, 11},
		{"a third in: two thirds of it, rounded up", 1, 10, 5 * time.Minute, 8},
		{"almost over: still one", 2, 10, w - time.Second, 3},
		{"exactly a share", 0, 4, w / 4, 3},
	} {
		if got := (store.SlidingHit{Current: c.current, Previous: c.previous, Elapsed: c.elapsed}).Hits(w); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// RetryAfter is when the refused attempt would pass: not a second earlier, and then it does.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	const w = 15 * time.Minute
	const limit = 10
	// at estimates the sliding hits of an attempt made d after h (nothing else counted meanwhile).
	at := func(h store.SlidingHit, d time.Duration) int {
		e := h.Elapsed + d
		current, previous := h.Current-1, h.Previous // the refused hit is given back
		if e >= w {
			current, previous, e = 0, current, e-w
		}
		if e >= w {
			previous, e = 0, e-w
		}
		return store.SlidingHit{Current: current + 1, Previous: previous, Elapsed: e}.Hits(w)
	}
	for _, h := range []store.SlidingHit{
		{Current: 11, Previous: 0, Elapsed: time.Minute},       // ten failures in this window
		{Current: 11, Previous: 7, Elapsed: 14 * time.Minute},  // and some before
		{Current: 4, Previous: 10, Elapsed: 2 * time.Minute},   // mostly the previous window
		{Current: 1, Previous: 10, Elapsed: 0},                 // all of it the previous window
		{Current: 10, Previous: 10, Elapsed: 14 * time.Minute}, // the previous one's tail
		{Current: 10, Previous: 3, Elapsed: 30 * time.Second},  // the current one's, mostly
		{Current: 11, Previous: 10, Elapsed: 10 * time.Second}, // in flight beyond the limit
	} {
		if h.Hits(w) <= limit {
			t.Fatalf("%+v is not refused", h)
		}
		d := h.RetryAfter(w, limit)
		if d <= 0 || d > 2*w {
			t.Errorf("%+v: retry after %s", h, d)
			continue
		}
		if got := at(h, d+time.Millisecond); got > limit {
			t.Errorf("%+v: after %s the estimate is %d, over %d", h, d, got, limit)
		}
		if got := at(h, d-time.Second); got <= limit {
			t.Errorf("%+v: %s is too long: a second earlier the estimate is %d", h, d, got)
		}
	}
}
