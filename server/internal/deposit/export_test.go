package deposit

import "github.com/ethereum/go-ethereum/common"

// TinyWatchFilter sizes the watched set's filter down to a single bit, so every address is a
// false positive, and has the next scan rebuild it.
func TinyWatchFilter(s *Service) {
	w := s.watched
	w.mu.Lock()
	defer w.mu.Unlock()
	w.minCapacity, w.bitsPer, w.filter = 1, 0, nil
}

// WatchMaybe is the filter's answer for a.
func WatchMaybe(s *Service, a common.Address) bool { return s.watched.has(a) }

// WatchStats returns the addresses read into the filter and what it is sized for.
func WatchStats(s *Service) (count, capacity uint) { return s.watched.stats() }
