package deposit_test

import (
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/store"
)

// checkPaymentsFound pays 0.1 ETH to each address and scans; the watched ones, and only
// they, must have made deposits.
func (e *env) checkPaymentsFound(watched []common.Address, outsiders ...common.Address) {
	e.t.Helper()
	payer := e.newUser()
	var want []string
	var nonce uint64
	for _, to := range append(slices.Clone(watched), outsiders...) {
		e.mine(e.send(payer, nonce, to, milli(100), nil, 2))
		nonce++
	}
	for _, to := range watched {
		want = append(want, to.Hex()+" ETH")
	}
	slices.Sort(want)
	e.scan()
	if got := e.foundDeposits(); !slices.Equal(got, want) {
		e.t.Fatalf("deposits found:\n%v\nwant:\n%v", got, want)
	}
}

// loadSavedFilter loads the watched set as a restarted worker does; it must start from the
// saved filter, rejecting none.
func (e *env) loadSavedFilter() {
	e.t.Helper()
	if from, rejected, err := deposit.LoadWatch(e.ctx, e.svc); err != nil || from != "saved filter" || rejected != "" {
		e.t.Fatalf("restart loaded from %q (rejected: %q, err %v); want the saved filter", from, rejected, err)
	}
}

// savedFilter is the watch_filter row's last index and gaps (-2 when there is none).
func (e *env) savedFilter() (lastIndex int64, gaps []int64) {
	e.t.Helper()
	f, err := store.New(e.pool).WatchFilter(e.ctx)
	if err != nil {
		return -2, nil
	}
	return f.LastIndex, f.Gaps
}

// TestWatchedSetStartsFromSavedFilter: a worker saves its filter; the next worker starts from
// it, reads only what was assigned after it was saved, and still finds every watched deposit
// and no other.
func TestWatchedSetStartsFromSavedFilter(t *testing.T) {
	t.Parallel()
	e := setup(t, 0) // its first scan built the set from the database and saved the filter
	if last, _ := e.savedFilter(); last != -2 && last != -1 {
		t.Fatalf("saved filter at index %d before any address", last)
	}
	deposit.SaveWatchAfterEach(e.svc)
	here, _ := e.svc.AddressFor(e.ctx, e.op.ID, "here")
	elsewhere := e.assignElsewhere("elsewhere")
	e.scan()
	savedAt, _ := e.savedFilter()
	if savedAt < 1 {
		t.Fatalf("saved filter at index %d; want both addresses (indexes 0 and 1) in it", savedAt)
	}

	deposit.RestartWatch(e.svc)
	afterSave := e.assignElsewhere("after-save")
	e.loadSavedFilter()
	if count, _ := deposit.WatchStats(e.svc); count != 3 {
		t.Fatalf("restarted set holds %d addresses; want 3", count)
	}
	e.checkPaymentsFound([]common.Address{here, elsewhere, afterSave}, randomAddress(), randomAddress())
	if last, _ := e.savedFilter(); last <= savedAt {
		t.Fatalf("saved filter still at index %d after the restarted worker read index %d", last, savedAt+1)
	}

	// A worker that has read less never replaces the saved filter.
	stale, err := store.New(e.pool).WatchFilter(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale.LastIndex--
	if replaced, err := store.New(e.pool).SaveWatchFilter(e.ctx, stale); err != nil || replaced {
		t.Fatalf("a filter that read less replaced the saved one (%v, %v)", replaced, err)
	}
}

// TestWatchedSetRestoreLooksForSavedGaps: the filter is saved while an assignment that took a
// lower index has not committed (a gap); it commits after the save. The next worker starts
// from the saved filter and watches it.
func TestWatchedSetRestoreLooksForSavedGaps(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	deposit.SaveWatchAfterEach(e.svc)
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx) //nolint:errcheck // committed below
	var slowIndex int64
	slow := randomAddress()
	if err := tx.QueryRow(e.ctx, `INSERT INTO depositors (operator_id, external_user_id, address_index, address)
		VALUES ($1, 'slow', nextval('deposit_address_index'), $2) RETURNING address_index`, e.op.ID, slow.Hex()).Scan(&slowIndex); err != nil {
		t.Fatal(err)
	}
	fast := e.assignElsewhere("fast")
	e.scan() // reads fast, notes slow's index as a gap, saves
	if last, gaps := e.savedFilter(); last != slowIndex+1 || !slices.Contains(gaps, slowIndex) {
		t.Fatalf("saved filter at index %d with gaps %v; want %d with gap %d", last, gaps, slowIndex+1, slowIndex)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}

	deposit.RestartWatch(e.svc)
	e.loadSavedFilter()
	e.checkPaymentsFound([]common.Address{slow, fast}, randomAddress())
}

// TestWatchedSetDistrustsSavedFilter: a saved filter whose checksum, format or bits are wrong
// (a bad write, another build's hashing) is not used: the worker builds the set from the
// database and finds every watched deposit.
func TestWatchedSetDistrustsSavedFilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		spoil  string // SQL run on the saved row
		empty  bool   // replace the filter's bits with none set (checksum kept right)
		reason string
	}{
		{name: "checksum", spoil: `UPDATE watch_filter SET checksum = '\x00'`, reason: "checksum"},
		{name: "format", spoil: `UPDATE watch_filter SET format = 'bits-and-blooms/bloom/v3 bits=12 hashes=3 probe=other'`, reason: "another format"},
		{name: "size", spoil: `UPDATE watch_filter SET capacity = capacity * 2`, reason: "size"},
		{name: "bits", empty: true, reason: "misses the watched address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			deposit.SaveWatchAfterEach(e.svc)
			var watched []common.Address
			for _, user := range []string{"a", "b", "c"} {
				watched = append(watched, e.assignElsewhere(user))
			}
			e.scan()
			if tc.spoil != "" {
				if _, err := e.pool.Exec(e.ctx, tc.spoil); err != nil {
					t.Fatal(err)
				}
			}
			if tc.empty {
				saved, err := store.New(e.pool).WatchFilter(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				var f bloom.BloomFilter
				if err := f.UnmarshalBinary(saved.Filter); err != nil {
					t.Fatal(err)
				}
				data, _ := f.ClearAll().MarshalBinary()
				sum := sha256.Sum256(data)
				if _, err := e.pool.Exec(e.ctx, `UPDATE watch_filter SET filter = $1, checksum = $2`, data, sum[:]); err != nil {
					t.Fatal(err)
				}
			}
			deposit.RestartWatch(e.svc)
			from, rejected, err := deposit.LoadWatch(e.ctx, e.svc)
			if err != nil || from != "database" || !strings.Contains(rejected, tc.reason) {
				t.Fatalf("loaded from %q, saved filter rejected as %q (err %v); want from the database, rejected for %q", from, rejected, err, tc.reason)
			}
			e.checkPaymentsFound(watched, randomAddress())
			// The rebuilt filter replaced the spoiled one: the next worker trusts it.
			deposit.RestartWatch(e.svc)
			e.loadSavedFilter()
		})
	}
}
