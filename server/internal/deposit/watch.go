package deposit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime/debug"
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

// A worker saves its filter in PostgreSQL (watch_filter) so the next worker starts from it and
// reads only the addresses assigned since: after every (re)build, once watchSaveAfter
// addresses were read since the last save, or once watchSaveEvery has passed with any. A save
// writes the whole filter (1.5 bytes per address of capacity: 22 MB at ten million), so not on
// every pass. A saved filter is trusted only when its format and checksum match and every
// address of a sample of watchSampleSize random indexes tests positive in it.
const (
	watchSaveAfter  = 100_000
	watchSaveEvery  = time.Hour
	watchSampleSize = 256
)

// Where a load came from, for its log line.
const (
	loadedFromDatabase = "database"
	loadedFromSaved    = "saved filter"
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

	saving     sync.Mutex // one save at a time
	savedIndex int64      // lastIndex of the filter saved (or restored) last, -1 for none
	savedAt    time.Time
	rejected   string // why the saved filter was not used, for the load's log line
	unsaved    bool   // (re)built since the last save: save at once
	builds     int    // (re)builds so far: a save clears unsaved only for the build it saved

	minCapacity uint          // the smallest filter built (tests force a tiny one)
	bitsPer     uint          // filter bits per address of capacity
	saveAfter   int64         // watchSaveAfter (tests save at every address)
	saveEvery   time.Duration // watchSaveEvery
}

func newWatchSet() *watchSet {
	return &watchSet{lastIndex: -1, savedIndex: -1, minCapacity: watchMinCapacity, bitsPer: watchBitsPer,
		saveAfter: watchSaveAfter, saveEvery: watchSaveEvery}
}

// format names the filter's encoding, sizing and hashing (where the library's hash puts a fixed
// input): a filter saved by a build that hashes or sizes otherwise is never read.
func (w *watchSet) format() string {
	return fmt.Sprintf("bits-and-blooms/bloom/v3 bits=%d hashes=%d probe=%x", w.bitsPer, watchHashes,
		bloom.Locations([]byte("coffer watched set"), watchHashes))
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

// refresh loads the addresses assigned since the last refresh, starting on the first call from
// the saved filter (or, without a usable one, building it from every address) and rebuilding
// it once it is over capacity. It says where it loaded the set from, or "" when it only
// refreshed it.
//
// Indexes are taken from a sequence inside the assigning transaction, so they commit out of
// order: reading index 6 before index 5 commits skips 5. A skipped index (a gap) is looked
// for again on every refresh until it appears or watchGapTTL passes (rolled back).
func (w *watchSet) refresh(ctx context.Context, q *store.Queries) (loaded string, err error) {
	w.loading.Lock()
	defer w.loading.Unlock()
	w.mu.RLock()
	built, full := w.filter != nil, w.count > w.capacity
	w.mu.RUnlock()
	switch {
	case !built:
		restored, err := w.restore(ctx, q)
		if err != nil {
			return "", err
		}
		if !restored {
			return loadedFromDatabase, w.rebuild(ctx, q)
		}
		loaded = loadedFromSaved // and read what was assigned since it was saved, below
	case full:
		return loadedFromDatabase, w.rebuild(ctx, q)
	}
	if err := w.fillGaps(ctx, q); err != nil {
		return loaded, err
	}
	w.mu.RLock()
	after := w.lastIndex
	w.mu.RUnlock()
	// In index order and in batches: the plan stays an index scan of the newest addresses
	// whatever the table's size (a streamed "index > $1" may get a generic plan that scans it all).
	for {
		batch, err := q.DepositAddressesAfter(ctx, after, 10000)
		if err != nil || len(batch) == 0 {
			return loaded, err
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
			return loadedFromDatabase, w.rebuild(ctx, q)
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
	w.unsaved, w.builds = true, w.builds+1
	return nil
}

// restore starts the set from the saved filter, if there is one it can trust; refresh then
// reads what was assigned after it was saved. It reports whether it did.
func (w *watchSet) restore(ctx context.Context, q *store.Queries) (bool, error) {
	var saved store.WatchFilterHeader
	var filter *bloom.BloomFilter
	var why string
	err := q.ReadWatchFilter(ctx, func(h store.WatchFilterHeader, r io.Reader) error {
		var err error
		saved = h
		filter, why, err = w.decode(h, r)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if why == "" {
		if why, err = w.sample(ctx, q, saved, filter); err != nil {
			return false, err
		}
	}
	if why != "" {
		// Gone, so the filter rebuilt now replaces it (a save keeps a saved filter that has read as far).
		if err := q.DeleteWatchFilter(ctx, saved.Checksum); err != nil {
			return false, err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rejected = why; why != "" {
		return false, nil
	}
	// A gap noted before the save may have committed since: each is looked for again now.
	now, gaps := time.Now(), make(map[int64]time.Time, len(saved.Gaps))
	for _, i := range saved.Gaps {
		gaps[i] = now
	}
	w.filter, w.capacity, w.count, w.lastIndex, w.gaps = filter, uint(saved.Capacity), uint(saved.AddressCount), saved.LastIndex, gaps //nolint:gosec // checked >= 0 by the table
	w.savedIndex, w.savedAt = saved.LastIndex, saved.SavedAt
	return true, nil
}

// decode checks a saved filter's format and size, reads it from r and checks its checksum; a
// non-empty reason says why it cannot be used. The sizes are checked before anything is
// allocated: the filter's own header says how much to allocate.
func (w *watchSet) decode(saved store.WatchFilterHeader, r io.Reader) (*bloom.BloomFilter, string, error) {
	if saved.Format != w.format() {
		return nil, fmt.Sprintf("saved in another format (%q)", saved.Format), nil
	}
	bits := uint64(max(uint(saved.Capacity)*w.bitsPer, 1))                                       //nolint:gosec // checked > 0 by the table
	const headerSize = 3 * 8                                                                     // bits, hashes, the bit set's length
	if saved.AddressCount > saved.Capacity || saved.Size != int64(headerSize+8*((bits+63)/64)) { //nolint:gosec // a filter's size
		return nil, fmt.Sprintf("its size does not match (%d bytes for %d addresses)", saved.Size, saved.Capacity), nil
	}
	sum := sha256.New()
	r = io.TeeReader(r, sum)
	header := make([]byte, headerSize)
	if _, err := io.ReadFull(r, header); err != nil {
		return nil, "", err
	}
	if m, k, n := binary.BigEndian.Uint64(header), binary.BigEndian.Uint64(header[8:]), binary.BigEndian.Uint64(header[16:]); m != bits || k != watchHashes || n != bits {
		return nil, fmt.Sprintf("its size does not match (%d bits, %d hashes for %d addresses)", m, k, saved.Capacity), nil
	}
	filter := &bloom.BloomFilter{}
	if _, err := filter.ReadFrom(io.MultiReader(bytes.NewReader(header), r)); err != nil {
		return nil, "", err
	}
	if !bytes.Equal(sum.Sum(nil), saved.Checksum) {
		return nil, "its checksum does not match", nil
	}
	return filter, "", nil
}

// sample reads the addresses of watchSampleSize random indexes the saved filter says it holds
// and checks each tests positive: a filter that misses one would miss deposits.
func (w *watchSet) sample(ctx context.Context, q *store.Queries, saved store.WatchFilterHeader, filter *bloom.BloomFilter) (string, error) {
	if saved.LastIndex < 0 {
		return "", nil
	}
	indexes := make([]int64, 0, watchSampleSize+1)
	for range watchSampleSize {
		indexes = append(indexes, rand.Int64N(saved.LastIndex+1)) //nolint:gosec // a sample, not a secret
	}
	indexes = append(indexes, saved.LastIndex)
	found, err := q.DepositAddressesAt(ctx, indexes)
	if err != nil {
		return "", err
	}
	gaps := map[int64]bool{}
	for _, i := range saved.Gaps {
		gaps[i] = true
	}
	for _, a := range found {
		if i := int64(a.Index); i <= saved.LastIndex && !gaps[i] && !filter.Test(common.HexToAddress(a.Address).Bytes()) {
			return fmt.Sprintf("it misses the watched address %s (index %d)", a.Address, i), nil
		}
	}
	return "", nil
}

// saveIfDue saves the filter for the next worker's start when it was (re)built since the last
// save or has read enough since (watchSaveAfter, watchSaveEvery). A save another worker is
// making, or a better filter already saved, is left alone.
func (w *watchSet) saveIfDue(ctx context.Context, q *store.Queries) (saved bool, err error) {
	if !w.saving.TryLock() {
		return false, nil
	}
	defer w.saving.Unlock()
	w.mu.RLock()
	due := w.filter != nil && !w.rebuilding && (w.unsaved || w.lastIndex >= w.savedIndex+w.saveAfter ||
		(w.lastIndex > w.savedIndex && time.Since(w.savedAt) >= w.saveEvery))
	if !due {
		w.mu.RUnlock()
		return false, nil
	}
	data, err := w.filter.MarshalBinary()
	snapshot := store.WatchFilter{Format: w.format(), Capacity: int64(w.capacity), AddressCount: int64(w.count), //nolint:gosec // sizes of memory
		LastIndex: w.lastIndex, Gaps: make([]int64, 0, len(w.gaps))}
	for i := range w.gaps {
		snapshot.Gaps = append(snapshot.Gaps, i)
	}
	build := w.builds
	w.mu.RUnlock()
	if err != nil {
		return false, err
	}
	sum := sha256.Sum256(data)
	snapshot.Filter, snapshot.Checksum = data, sum[:]
	if _, err := q.SaveWatchFilter(ctx, snapshot); err != nil {
		return false, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.savedIndex, w.savedAt = snapshot.LastIndex, time.Now()
	w.unsaved = w.unsaved && w.builds != build // rebuilt again meanwhile
	return true, nil
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

// refreshWatched refreshes the watched set, logging when it was loaded, and saves its filter
// when that is due (a failed save is logged: the next one tries again).
func (s *Service) refreshWatched(ctx context.Context, q *store.Queries) error {
	loaded, err := s.watched.refresh(ctx, q)
	if err != nil {
		return err
	}
	if loaded != "" {
		s.logLoaded(ctx, loaded, 0)
	}
	s.saveWatched(ctx, q)
	return nil
}

// Load builds the watched set now, so the first scan of a worker does not wait for it, and
// logs its size, where it came from and how long it took.
func (s *Service) Load(ctx context.Context) error {
	t0 := time.Now()
	q := store.New(s.pool)
	loaded, err := s.watched.refresh(ctx, q)
	if err != nil {
		return err
	}
	s.logLoaded(ctx, loaded, time.Since(t0))
	s.saveWatched(ctx, q)
	return nil
}

func (s *Service) logLoaded(ctx context.Context, from string, took time.Duration) {
	count, capacity := s.watched.stats()
	attrs := []any{"addresses", count, "capacity", capacity, "from", from}
	if took > 0 {
		attrs = append(attrs, "took", took.Round(time.Millisecond))
	}
	if why := s.watched.rejectedReason(); why != "" {
		attrs = append(attrs, "saved_filter_rejected", why)
	}
	s.log.InfoContext(ctx, "watched addresses loaded", attrs...)
}

func (s *Service) saveWatched(ctx context.Context, q *store.Queries) {
	t0 := time.Now()
	saved, err := s.watched.saveIfDue(ctx, q)
	if err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "save the watched set's filter (the next save tries again)", "error", err)
	}
	if saved {
		count, capacity := s.watched.stats()
		s.log.InfoContext(ctx, "watched set's filter saved", "addresses", count, "capacity", capacity, "took", time.Since(t0).Round(time.Millisecond))
		// A save copies the filter (encoded, then into pgx's message: 45 MB at ten million) in a
		// process that otherwise holds little; give it back now rather than after minutes of
		// the runtime's background scavenging.
		debug.FreeOSMemory()
	}
}

// rejectedReason says why the saved filter was not used at the last load ("" when it was, or
// there was none).
func (w *watchSet) rejectedReason() string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.rejected
}
