package pagetoken

import (
	"errors"
	"slices"
	"testing"

	"github.com/cofferhq/coffer/server/internal/fault"
)

// TestList pages through 1..7 newest first, three at a time: each page starts after the
// previous one's last row, and the last page (short of the limit) has no next token.
func TestList(t *testing.T) {
	t.Parallel()
	rows := []int64{7, 6, 5, 4, 3, 2, 1}
	fetch := func(after *Seq, limit int) ([]int64, error) {
		out := []int64{}
		for _, r := range rows {
			if (after == nil || r < int64(*after)) && len(out) < limit {
				out = append(out, r)
			}
		}
		return out, nil
	}
	cursor := func(r int64) Seq { return Seq(r) }
	var got [][]int64
	token := ""
	for range 4 {
		page, next, err := List("numbers", token, 3, fetch, cursor)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page)
		if token = next; token == "" {
			break
		}
	}
	if want := [][]int64{{7, 6, 5}, {4, 3, 2}, {1}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("pages = %v; want %v", got, want)
	}

	var asked int
	if _, _, err := List("numbers", "", 0, func(_ *Seq, limit int) ([]int64, error) { asked = limit; return nil, nil }, cursor); err != nil || asked != DefaultLimit {
		t.Errorf("limit 0 asked for %d rows (%v); want %d", asked, err, DefaultLimit)
	}
	if _, _, err := List("numbers", Encode("other", Seq(3)), 3, fetch, cursor); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("another list's token: %v; want Invalid", err)
	}
	boom := errors.New("boom")
	if _, _, err := List("numbers", "", 3, func(*Seq, int) ([]int64, error) { return nil, boom }, cursor); !errors.Is(err, boom) {
		t.Errorf("fetch error: %v; want %v", err, boom)
	}
}
