package store

import (
	"context"

	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// The counts the metrics collector (metrics.DBCollector) reads at scrape time. Ages are in
// seconds, as PostgreSQL computed them, since the gauges export seconds.

// DepositCount is the number of deposits with one status, on one chain, in one currency.
type DepositCount = dbsqlc.CountDepositsRow

// CountOpenDeposits counts the open deposits (CONFIRMING, SWEEPING) by status, chain and
// currency, from their partial index.
func (q *Queries) CountOpenDeposits(ctx context.Context) ([]DepositCount, error) {
	rows, err := sqlc.CountOpenDeposits(ctx, q.db)
	return many(rows, err, func(r dbsqlc.CountOpenDepositsRow) (DepositCount, error) { return DepositCount(r), nil })
}

// CountDeposits counts every deposit by status, chain and currency; it reads the whole table.
func (q *Queries) CountDeposits(ctx context.Context) ([]DepositCount, error) {
	return sqlc.CountDeposits(ctx, q.db)
}

// ChainCursorLag is where a chain's scanner stands: the head it last saw, the last block it
// read, and the seconds since it recorded them.
type ChainCursorLag = dbsqlc.ChainCursorLagsRow

// ChainCursorLags lists every chain's scanner position.
func (q *Queries) ChainCursorLags(ctx context.Context) ([]ChainCursorLag, error) {
	return sqlc.ChainCursorLags(ctx, q.db)
}

// PendingChainTxs is the number of signed transactions one address sent on one chain that are
// not mined yet, and the age of the oldest.
type PendingChainTxs = dbsqlc.PendingChainTxsBySenderRow

// PendingChainTxsBySender counts the pending chain transactions per chain and sender.
func (q *Queries) PendingChainTxsBySender(ctx context.Context) ([]PendingChainTxs, error) {
	return sqlc.PendingChainTxsBySender(ctx, q.db)
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
type RiverJobCount = dbsqlc.RiverJobCountsRow

// RiverJobCounts counts the River jobs not finished (available, scheduled, retryable,
// running) by kind and state.
func (q *Queries) RiverJobCounts(ctx context.Context) ([]RiverJobCount, error) {
	return sqlc.RiverJobCounts(ctx, q.db)
}
