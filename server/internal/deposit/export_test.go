package deposit

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/store"
)

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

// RestartWatch gives s a new, empty watched set, as a worker has when it starts, saving its
// filter after every address read (saveAfter 1).
func RestartWatch(s *Service) {
	w := newWatchSet()
	w.saveAfter = 1
	s.watched = w
}

// SaveWatchAfterEach has s save its filter after every address read.
func SaveWatchAfterEach(s *Service) {
	s.watched.mu.Lock()
	defer s.watched.mu.Unlock()
	s.watched.saveAfter = 1
}

// LoadWatch loads or refreshes s's watched set and saves it when due, as a scan does; it says
// where the set was loaded from ("" for a refresh) and why a saved filter was not used.
func LoadWatch(ctx context.Context, s *Service) (from, rejected string, err error) {
	q := store.New(s.pool)
	if from, err = s.watched.refresh(ctx, q); err != nil {
		return "", "", err
	}
	_, err = s.watched.saveIfDue(ctx, q)
	return from, s.watched.rejectedReason(), err
}

// StepBatchStored is the crash step between storing a batch and broadcasting it.
const StepBatchStored = stepBatchStored

// StepBatchPlanned names the step before a planned batch is stored.
const StepBatchPlanned = stepBatchPlanned

// StepBatchSettled is the crash step between recording a batch's outcome and crediting it.
const StepBatchSettled = stepBatchSettled

// StepSweepCrediting is the step between a mined sweep's checks and its credit's transaction.
const StepSweepCrediting = stepSweepCrediting

// StepWrittenOffCheck names the step before a waiting sweep's deposits written off again are
// checked against its address's balance.
const StepWrittenOffCheck = stepWrittenOffCheck

// StepForkFound is the step between a scan pass finding a reorg and its rollback.
const StepForkFound = stepForkFound

// StepBlocksRead is the step between a scan pass reading its blocks and recording them.
const StepBlocksRead = stepBlocksRead

// SetCrash makes the service call crash at its batch steps and before a sweep's credit (nil: never).
func SetCrash(s *Service, crash func(step string)) { s.crash = crash }

// FundSweep is fund as a sweep's step calls it: address must hold need, its own transactions
// with pendingNonces being still pending as far as the caller saw. It returns whether the
// address holds enough.
func FundSweep(ctx context.Context, s *Service, chainID int64, address string, sweepID int64, need *big.Int,
	pendingNonces ...uint64) (bool, error) {
	n, c, err := s.chains.Lookup(chainID)
	if err != nil {
		return false, err
	}
	return s.fund(ctx, n, c, address, sweepID, need, new(big.Int), fmt.Sprintf("sweep:%d", sweepID), pendingNonces...)
}
