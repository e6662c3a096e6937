package deposit

import (
	"context"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/store"
)

// watchBitsPer and watchHashes size the filter: 12 bits per address and 3 hash functions give
// ~1.1% false positives at capacity (14 MB for ten million addresses at capacity, 22 MB for
// the 15M it is sized for). A false positive costs one more element in the exact check's
// array. Three hashes rather than the optimal eight for this size: each is a cache miss, and
// the adds dominate loading ten million addresses.
const (
	watchBitsPer = 12
	watchHashes  = 3
)

// watchMinCapacity is the smallest filter built (78 KB).
const watchMinCapacity = 1 << 16

// watchGapWindow bounds the skipped indexes noted at once (below each one read), and
// watchGapTTL is how long a skipped index is looked for: an assignment's transaction lasts
// milliseconds, so one still missing after this was rolled back.
const (
	watchGapWindow = 10000
	watchGapTTL    = 10 * time.Minute
)

// watchSet is the set of watched addresses (depositors' and treasuries'): a Bloom filter in
// memory answers "maybe" or "no", and PostgreSQL answers exactly for the maybes (owners), so
// memory stays ~1.5 bytes per address (2.25 with the headroom) and a scan pays one indexed
// query per pass, whatever the number of users. The filter grows from the database by derivation index (refresh) and is
// rebuilt, larger, once it holds more addresses than it was sized for.
type watchSet struct {
	loading sync.Mutex // one load or refresh at a time

	mu         sync.RWMutex
	filter     *bloom.BloomFilter // nil until the first load
	capacity   uint               // addresses the filter is sized for
	count      uint               // addresses read from the database into it
	lastIndex  int64
	gaps       map[int64]time.Time // indexes below lastIndex not read yet, since when
	rebuilding bool
	pending    []common.Address // added during a rebuild, replayed into the new filter

	minCapacity uint // the smallest filter built (tests force a tiny one)
	bitsPer     uint // filter bits per address of capacity
}

func newWatchSet() *watchSet {
	return &watchSet{lastIndex: -1, minCapacity: watchMinCapacity, bitsPer: watchBitsPer}
}

// has answers whether a may be watched: false means it is not; true needs owners to confirm.
func (w *watchSet) has(a common.Address) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.filter != nil && w.filter.Test(a.Bytes())
}

// add watches an address this process just assigned, before the next refresh reads it.
func (w *watchSet) add(a common.Address) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rebuilding {
		w.pending = append(w.pending, a)
	}
	if w.filter != nil {
		w.filter.Add(a.Bytes())
	}
	// Before the first load (and always in the API role, which never scans) there is nothing
	// to add to: the load reads the address from the database.
}

// stats returns the number of addresses read into the filter and what it is sized for.
func (w *watchSet) stats() (count, capacity uint) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.count, w.capacity
}

// refresh loads the addresses assigned since the last refresh, building the filter on the
// first call and rebuilding it once it is over capacity. It reports whether it (re)built.
//
// Indexes are taken from a sequence inside the assigning transaction, so they commit out of
// order: reading index 6 before index 5 commits skips 5. A skipped index (a gap) is looked
// for again on every refresh until it appears or watchGapTTL passes (rolled back).
func (w *watchSet) refresh(ctx context.Context, q *store.Queries) (rebuilt bool, err error) {
	w.loading.Lock()
	defer w.loading.Unlock()
	w.mu.RLock()
	after, built, full := w.lastIndex, w.filter != nil, w.count > w.capacity
	w.mu.RUnlock()
	if !built || full {
		return true, w.rebuild(ctx, q)
	}
	if err := w.fillGaps(ctx, q); err != nil {
		return false, err
	}
	// In index order and in batches: the plan stays an index scan of the newest addresses
	// whatever the table's size (a streamed "index > $1" may get a generic plan that scans it all).
	for {
		batch, err := q.DepositAddressesAfter(ctx, after, 10000)
		if err != nil || len(batch) == 0 {
			return false, err
		}
		now := time.Now()
		w.mu.Lock()
		for _, a := range batch {
			index := int64(a.Index)
			for skipped := max(after+1, index-watchGapWindow); skipped < index; skipped++ {
				w.gaps[skipped] = now
			}
			w.filter.Add(common.HexToAddress(a.Address).Bytes())
			w.count++
			w.lastIndex, after = max(w.lastIndex, index), max(after, index)
		}
		full := w.count > w.capacity
		w.mu.Unlock()
		if full { // many addresses at once (a bulk import): one streamed rebuild reads the rest
			return true, w.rebuild(ctx, q)
		}
	}
}

// fillGaps looks for the skipped indexes again, adds those now assigned, and forgets those
// skipped for longer than watchGapTTL.
func (w *watchSet) fillGaps(ctx context.Context, q *store.Queries) error {
	w.mu.Lock()
	indexes := make([]int64, 0, len(w.gaps))
	for i, since := range w.gaps {
		if time.Since(since) > watchGapTTL {
			delete(w.gaps, i)
		} else {
			indexes = append(indexes, i)
		}
	}
	w.mu.Unlock()
	if len(indexes) == 0 {
		return nil
	}
	found, err := q.DepositAddressesAt(ctx, indexes)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range found {
		w.filter.Add(common.HexToAddress(a.Address).Bytes())
		w.count++
		delete(w.gaps, int64(a.Index))
	}
	return nil
}

// rebuild streams every watched address into a new filter sized for half as many again as
// there are (the highest index bounds the count), without holding them, and swaps it in;
// matching goes on with the old filter meanwhile.
func (w *watchSet) rebuild(ctx context.Context, q *store.Queries) error {
	maxIndex, err := q.MaxAddressIndex(ctx)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.rebuilding, w.pending = true, nil
	n := max(uint(maxIndex+1), w.count) //nolint:gosec // maxIndex >= -1
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.rebuilding, w.pending = false, nil
		w.mu.Unlock()
	}()
	capacity := max(n+n/2, w.minCapacity)
	filter := bloom.New(max(capacity*w.bitsPer, 1), watchHashes)
	count, last, recent, err := streamInto(ctx, q, filter, maxIndex-watchGapWindow)
	if err != nil {
		return err
	}
	now, gaps := time.Now(), map[int64]time.Time{}
	for i := max(0, maxIndex-watchGapWindow+1); i < last; i++ {
		if !recent[i] {
			gaps[i] = now
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range w.pending {
		filter.Add(a.Bytes())
	}
	w.filter, w.capacity, w.count, w.lastIndex, w.gaps = filter, capacity, count, last, gaps
	return nil
}

// streamInto adds every watched address to filter and returns how many there were, the highest
// index, and the indexes above recentFrom (to find the skipped ones). Reading (PostgreSQL's
// rows, parsed) and adding (a cache miss per hash) overlap on two goroutines.
func streamInto(ctx context.Context, q *store.Queries, filter *bloom.BloomFilter, recentFrom int64) (count uint, last int64, recent map[int64]bool, err error) {
	const batchSize = 4096
	full, free := make(chan [][20]byte, 4), make(chan [][20]byte, 4)
	for range cap(free) {
		free <- make([][20]byte, 0, batchSize)
	}
	added := make(chan struct{})
	go func() {
		defer close(added)
		for batch := range full {
			for i := range batch {
				filter.Add(batch[i][:])
			}
			free <- batch[:0]
		}
	}()
	last, recent = -1, map[int64]bool{}
	batch := <-free
	err = q.EachWatchedAddress(ctx, func(index int64, addr []byte) error {
		batch = append(batch, [20]byte(addr))
		if len(batch) == batchSize {
			full <- batch
			batch = <-free
		}
		count++
		last = max(last, index)
		if index > recentFrom {
			recent[index] = true
		}
		return nil
	})
	full <- batch
	close(full)
	<-added
	return count, last, recent, err
}

// owners is the exact check of the addresses the filter let through: their owners, from one
// query. Addresses the filter rules out are not asked about.
func (w *watchSet) owners(ctx context.Context, q *store.Queries, addrs []common.Address) (map[common.Address]store.DepositAddress, error) {
	var maybe []string
	seen := map[common.Address]bool{}
	for _, a := range addrs {
		if !seen[a] && w.has(a) {
			seen[a] = true
			maybe = append(maybe, a.Hex())
		}
	}
	if len(maybe) == 0 {
		return map[common.Address]store.DepositAddress{}, nil
	}
	found, err := q.DepositAddressesIn(ctx, maybe)
	if err != nil {
		return nil, err
	}
	out := make(map[common.Address]store.DepositAddress, len(found))
	for _, o := range found {
		out[common.HexToAddress(o.Address)] = o
	}
	return out, nil
}

// refreshWatched refreshes the watched set, logging when it was (re)built.
func (s *Service) refreshWatched(ctx context.Context, q *store.Queries) error {
	rebuilt, err := s.watched.refresh(ctx, q)
	if err == nil && rebuilt {
		count, capacity := s.watched.stats()
		s.log.InfoContext(ctx, "watched addresses loaded", "addresses", count, "capacity", capacity)
	}
	return err
}

// Load builds the watched set now, so the first scan of a worker does not wait for it, and
// logs its size and how long it took.
func (s *Service) Load(ctx context.Context) error {
	t0 := time.Now()
	if _, err := s.watched.refresh(ctx, store.New(s.pool)); err != nil {
		return err
	}
	count, capacity := s.watched.stats()
	s.log.InfoContext(ctx, "watched addresses loaded", "addresses", count, "capacity", capacity, "took", time.Since(t0).Round(time.Millisecond))
	return nil
}
