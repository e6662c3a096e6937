package store

import (
	"context"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// The counts the metrics collector (metrics.DBCollector) reads at scrape time. Ages are in
// seconds, as PostgreSQL computed them, since the gauges export seconds.

// DepositCount is the number of deposits with one status, on one chain, in one currency.
type DepositCount struct {
	Status   domain.DepositStatus
	ChainID  int64
	Currency string
	N        int64
}

// CountOpenDeposits counts the open deposits (CONFIRMING, SWEEPING) by status, chain and
// currency, from their partial index.
func (q *Queries) CountOpenDeposits(ctx context.Context) ([]DepositCount, error) {
	rows, err := sqlc.CountOpenDeposits(ctx, q.db)
	return many(rows, err, func(r dbsqlc.CountOpenDepositsRow) (DepositCount, error) { return DepositCount(r), nil })
}

// CountDeposits counts every deposit by status, chain and currency; it reads the whole table.
func (q *Queries) CountDeposits(ctx context.Context) ([]DepositCount, error) {
	rows, err := sqlc.CountDeposits(ctx, q.db)
	return many(rows, err, func(r dbsqlc.CountDepositsRow) (DepositCount, error) { return DepositCount(r), nil })
}

// ChainCursorLag is where a chain's scanner stands: the head it last saw, the last block it
// read, and the seconds since it recorded them.
type ChainCursorLag struct {
	ChainID      int64
	HeadBlock    int64
	ScannedBlock int64
	AgeSeconds   float64
}

// ChainCursorLags lists every chain's scanner position.
func (q *Queries) ChainCursorLags(ctx context.Context) ([]ChainCursorLag, error) {
	rows, err := sqlc.ChainCursorLags(ctx, q.db)
	return many(rows, err, func(r dbsqlc.ChainCursorLagsRow) (ChainCursorLag, error) { return ChainCursorLag(r), nil })
}

// PendingChainTxs is the number of signed transactions one address sent on one chain that are
// not mined yet, and the age of the oldest.
type PendingChainTxs struct {
	ChainID          int64
	FromAddress      string
	N                int64
	OldestAgeSeconds float64
}

// PendingChainTxsBySender counts the pending chain transactions per chain and sender.
func (q *Queries) PendingChainTxsBySender(ctx context.Context) ([]PendingChainTxs, error) {
	rows, err := sqlc.PendingChainTxsBySender(ctx, q.db)
	return many(rows, err, func(r dbsqlc.PendingChainTxsBySenderRow) (PendingChainTxs, error) { return PendingChainTxs(r), nil })
}

// CountDeadWebhooks counts the dead-lettered webhook events.
func (q *Queries) CountDeadWebhooks(ctx context.Context) (int64, error) {
	return sqlc.CountDeadWebhooks(ctx, q.db)
}

// DueWebhookBacklog counts the outbox webhooks due now and how long the oldest has waited past
// its due time (0 when none is due).
func (q *Queries) DueWebhookBacklog(ctx context.Context) (n int64, oldestAgeSeconds float64, err error) {
	r, err := sqlc.DueWebhookBacklog(ctx, q.db)
	return r.N, r.OldestAgeSeconds, err
}

// RiverJobCount is the number of unfinished River jobs of one kind in one state, and for
// available jobs how long the oldest has waited past its scheduled time (else 0).
type RiverJobCount struct {
	Kind                      string
	State                     string
	N                         int64
	OldestAvailableAgeSeconds float64
}

// RiverJobCounts counts the River jobs not finished (available, scheduled, retryable,
// running) by kind and state.
func (q *Queries) RiverJobCounts(ctx context.Context) ([]RiverJobCount, error) {
	rows, err := sqlc.RiverJobCounts(ctx, q.db)
	return many(rows, err, func(r dbsqlc.RiverJobCountsRow) (RiverJobCount, error) { return RiverJobCount(r), nil })
}
