package store

import (
	"context"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// sweepOf maps a sweeps row to the domain.
func sweepOf(r dbsqlc.Sweep) domain.Sweep {
	return domain.Sweep{ID: r.ID, ChainID: r.ChainID, Address: r.Address, Status: r.Status, CreatedAt: r.CreatedAt, MinedAt: r.MinedAt,
		Batched: r.Batched, BatchID: r.BatchID.Int64, Skips: r.Skips}
}

// oneSweep maps a single-row sweep query's result.
func oneSweep(r dbsqlc.Sweep, err error) (domain.Sweep, error) {
	if err != nil {
		return domain.Sweep{}, notFound(err)
	}
	return sweepOf(r), nil
}

// LockAddress serialises the sweep planning of one deposit address until the transaction ends.
func (q *Queries) LockAddress(ctx context.Context, chainID int64, address string) error {
	return sqlc.LockAddress(ctx, q.db, dbsqlc.LockAddressParams{ChainID: chainID, Address: address})
}

// OpenSweep returns the address's sweep that is not done (ErrNotFound: none).
func (q *Queries) OpenSweep(ctx context.Context, chainID int64, address string) (domain.Sweep, error) {
	return oneSweep(sqlc.OpenSweep(ctx, q.db, dbsqlc.OpenSweepParams{ChainID: chainID, Address: address}))
}

// AddressBatched reports whether an address has had a batched sweep.
func (q *Queries) AddressBatched(ctx context.Context, chainID int64, address string) (bool, error) {
	return sqlc.AddressBatched(ctx, q.db, dbsqlc.AddressBatchedParams{ChainID: chainID, Address: address})
}

// LockSweep loads a sweep and holds its row until the transaction ends.
func (q *Queries) LockSweep(ctx context.Context, id int64) (domain.Sweep, error) {
	return oneSweep(sqlc.LockSweep(ctx, q.db, id))
}

// InsertSweep opens a sweep of an address and attaches the deposits to it. batched: the sweep
// goes in an EIP-7702 batch rather than transactions of the address's own.
func (q *Queries) InsertSweep(ctx context.Context, chainID int64, address string, batched bool, depositIDs []int64) (domain.Sweep, error) {
	sw, err := oneSweep(sqlc.InsertSweep(ctx, q.db, dbsqlc.InsertSweepParams{ChainID: chainID, Address: address, Batched: batched}))
	if err != nil {
		return sw, err
	}
	return sw, sqlc.AttachSweepDeposits(ctx, q.db, dbsqlc.AttachSweepDepositsParams{SweepID: sw.ID, DepositIds: depositIDs})
}

// SetSweepStatus moves a sweep on: SENDING once its transactions are stored, DONE once its
// deposits are credited.
func (q *Queries) SetSweepStatus(ctx context.Context, id int64, status domain.SweepStatus) error {
	return sqlc.SetSweepStatus(ctx, q.db, dbsqlc.SetSweepStatusParams{ID: id, Status: status})
}

// MarkSweepMined records when every transaction of a sweep was first seen mined (the rate wait
// of its credit counts from then).
func (q *Queries) MarkSweepMined(ctx context.Context, id int64) (time.Time, error) {
	at, err := sqlc.MarkSweepMined(ctx, q.db, id)
	if at == nil { // only with err: the statement sets it
		return time.Time{}, err
	}
	return *at, err
}

// FixDepositFees fixes each deposit's fee (fees[id]) the first time a transaction sweeping it
// is signed, in that transaction; a fee fixed before is kept (domain.Deposit.SignedFee).
func (q *Queries) FixDepositFees(ctx context.Context, fees map[int64]*big.Int) error {
	p := dbsqlc.FixDepositFeesParams{Ids: make([]int64, 0, len(fees)), Fees: make([]decimal.Decimal, 0, len(fees))}
	for id, fee := range fees {
		p.Ids, p.Fees = append(p.Ids, id), append(p.Fees, Uint256(fee))
	}
	return sqlc.FixDepositFees(ctx, q.db, p)
}

// DueDeposits lists the address's confirmed deposits no sweep has taken yet (SWEEPING without a
// sweep, and BELOW_MINIMUM), oldest first: UnsweptDeposits without the CONFIRMING ones.
func (q *Queries) DueDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	unswept, err := q.UnsweptDeposits(ctx, chainID, address)
	return slices.DeleteFunc(unswept, func(d domain.Deposit) bool { return d.Status == domain.DepositConfirming }), err
}

// UnsweptDeposits lists the address's deposits no sweep has taken yet, confirming ones too.
func (q *Queries) UnsweptDeposits(ctx context.Context, chainID int64, address string) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.UnsweptDeposits(ctx, q.db, dbsqlc.UnsweptDepositsParams{ChainID: chainID, Address: address}))
}

// SweepDeposits lists the deposits of a sweep, oldest first.
func (q *Queries) SweepDeposits(ctx context.Context, sweepID int64) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.SweepDeposits(ctx, q.db, sweepID))
}

// MarkBelowMinimum parks confirmed deposits that are too small to sweep alone.
func (q *Queries) MarkBelowMinimum(ctx context.Context, ids []int64) error {
	return sqlc.MarkBelowMinimum(ctx, q.db, ids)
}

// UnsweptNative is the native currency at an address that belongs to deposits no mined sweep
// has moved yet, other than those of sweep except (0: none): confirming, waiting or parked
// deposits. A sweep's gas must leave it there.
func (q *Queries) UnsweptNative(ctx context.Context, chainID int64, address string, except int64) (*big.Int, error) {
	sum, err := sqlc.UnsweptNative(ctx, q.db, dbsqlc.UnsweptNativeParams{ChainID: chainID, Address: address, ExceptSweep: except})
	return sum.BigInt(), err
}

// Parked is the deposits of one address and asset parked below the minimum.
type Parked struct {
	Address, Currency string
	Native            bool
	// FirstID is the oldest of them.
	FirstID int64
	Total   *big.Int
}

// ParkedTotals lists, per address and asset, the deposits of a chain parked below the minimum.
func (q *Queries) ParkedTotals(ctx context.Context, chainID int64) ([]Parked, error) {
	rows, err := sqlc.ParkedTotals(ctx, q.db, chainID)
	return many(rows, err, func(r dbsqlc.ParkedTotalsRow) (Parked, error) {
		return Parked{Address: r.Address, Currency: r.Currency, Native: r.Native, FirstID: r.FirstID, Total: r.Total.BigInt()}, nil
	})
}

// SweepingWithoutJob lists a chain's SWEEPING deposits whose settle job will not run again.
func (q *Queries) SweepingWithoutJob(ctx context.Context, chainID int64) ([]int64, error) {
	return sqlc.SweepingWithoutJob(ctx, q.db, chainID)
}

// PendingTopUps lists the gas top-ups to an address that are not mined yet.
func (q *Queries) PendingTopUps(ctx context.Context, chainID int64, address, purpose string) ([]int64, error) {
	return ids(sqlc.PendingTopUps(ctx, q.db, dbsqlc.PendingTopUpsParams{ChainID: chainID, ToAddress: address, Purpose: purpose}))
}

// LastTopUpID is the id of the newest gas top-up to an address in any state, 0 when none.
func (q *Queries) LastTopUpID(ctx context.Context, chainID int64, address, purpose string) (int64, error) {
	return sqlc.LastTopUpID(ctx, q.db, dbsqlc.LastTopUpIDParams{ChainID: chainID, ToAddress: address, Purpose: purpose})
}

// MinedTopUps lists the newest mined gas top-ups to an address (at most limit), newest first.
func (q *Queries) MinedTopUps(ctx context.Context, chainID int64, address, purpose string, limit int32) ([]domain.ChainTx, error) {
	list, err := ids(sqlc.MinedTopUpIDs(ctx, q.db, dbsqlc.MinedTopUpIDsParams{ChainID: chainID, ToAddress: address, Purpose: purpose,
		MaxRows: limit}))
	if err != nil {
		return nil, err
	}
	return q.chainTxs(ctx, list)
}

// CountChainTxs counts the transactions of a purpose whose ref starts with prefix.
func (q *Queries) CountChainTxs(ctx context.Context, purpose, prefix string) (int, error) {
	n, err := sqlc.CountChainTxs(ctx, q.db, dbsqlc.CountChainTxsParams{Purpose: purpose, Prefix: prefix})
	return int(n), err
}

// batchOf maps a sweep_batches row to the domain.
func batchOf(r dbsqlc.SweepBatch, err error) (domain.SweepBatch, error) {
	if err != nil {
		return domain.SweepBatch{}, notFound(err)
	}
	return domain.SweepBatch{ID: r.ID, ChainID: r.ChainID, Status: r.Status, CreatedAt: r.CreatedAt, DoneAt: r.DoneAt}, nil
}

// LockBatchChain serialises the forming of a chain's batches until the transaction ends.
func (q *Queries) LockBatchChain(ctx context.Context, chainID int64) error {
	return sqlc.LockBatchChain(ctx, q.db, chainID)
}

// OpenSweepBatches lists the chain's batches in flight, oldest first.
func (q *Queries) OpenSweepBatches(ctx context.Context, chainID int64) ([]domain.SweepBatch, error) {
	rows, err := sqlc.OpenSweepBatches(ctx, q.db, chainID)
	if err != nil {
		return nil, err
	}
	out := make([]domain.SweepBatch, len(rows))
	for i, r := range rows {
		out[i], _ = batchOf(r, nil)
	}
	return out, nil
}

// LockSweepBatch loads a batch and holds its row until the transaction ends.
func (q *Queries) LockSweepBatch(ctx context.Context, id int64) (domain.SweepBatch, error) {
	return batchOf(sqlc.LockSweepBatch(ctx, q.db, id))
}

// InsertSweepBatch opens a batch on a chain (SENDING).
func (q *Queries) InsertSweepBatch(ctx context.Context, chainID int64) (domain.SweepBatch, error) {
	return batchOf(sqlc.InsertSweepBatch(ctx, q.db, chainID))
}

// SetSweepBatchStatus moves a batch on.
func (q *Queries) SetSweepBatchStatus(ctx context.Context, id int64, status domain.SweepBatchStatus) error {
	return sqlc.SetSweepBatchStatus(ctx, q.db, dbsqlc.SetSweepBatchStatusParams{ID: id, Status: status})
}

// DueBatchSweeps lists up to limit of a chain's batched sweeps that wait for a batch, oldest
// first, leaving out those a reorg holds.
func (q *Queries) DueBatchSweeps(ctx context.Context, chainID int64, limit int) ([]domain.Sweep, error) {
	rows, err := sqlc.DueBatchSweeps(ctx, q.db, dbsqlc.DueBatchSweepsParams{ChainID: chainID, Lim: int32(min(limit, math.MaxInt32))}) //nolint:gosec // bounded
	return mapSweeps(rows, err)
}

// BatchSweeps lists the sweeps of a batch.
func (q *Queries) BatchSweeps(ctx context.Context, batchID int64) ([]domain.Sweep, error) {
	return mapSweeps(sqlc.BatchSweeps(ctx, q.db, batchID))
}

func mapSweeps(rows []dbsqlc.Sweep, err error) ([]domain.Sweep, error) {
	if err != nil {
		return nil, err
	}
	out := make([]domain.Sweep, len(rows))
	for i, r := range rows {
		out[i] = sweepOf(r)
	}
	return out, nil
}

// JoinBatch puts a waiting sweep in a batch (FUNDING → SENDING); false: it no longer waits.
func (q *Queries) JoinBatch(ctx context.Context, sweepID, batchID int64) (bool, error) {
	n, err := sqlc.JoinBatch(ctx, q.db, dbsqlc.JoinBatchParams{ID: sweepID, BatchID: batchID})
	return n == 1, err
}

// LeaveBatch sends a sweep the batch did not sweep back to wait for the next one
// (SENDING → FUNDING), counting the skip.
func (q *Queries) LeaveBatch(ctx context.Context, sweepID, batchID int64) error {
	return sqlc.LeaveBatch(ctx, q.db, dbsqlc.LeaveBatchParams{ID: sweepID, BatchID: batchID})
}

// DueTokenAddresses lists up to limit of a chain's token-deposit addresses that hold confirmed
// deposits no sweep has taken yet.
func (q *Queries) DueTokenAddresses(ctx context.Context, chainID int64, limit int) ([]string, error) {
	return sqlc.DueTokenAddresses(ctx, q.db, dbsqlc.DueTokenAddressesParams{ChainID: chainID, Lim: int32(min(limit, math.MaxInt32))}) //nolint:gosec // bounded
}

// BatchWithTx is a batch with its transaction (State, MinedHash, MinedBlock, Data and
// Authorizations set), as the ops listing shows it.
type BatchWithTx struct {
	Batch domain.SweepBatch
	Tx    domain.ChainTx
}

// ListSweepBatches lists up to limit batches newest first, of one chain (0: every chain), only
// those still SENDING when open.
func (q *Queries) ListSweepBatches(ctx context.Context, chainID int64, open bool, limit int) ([]BatchWithTx, error) {
	rows, err := sqlc.ListSweepBatches(ctx, q.db, dbsqlc.ListSweepBatchesParams{ChainID: chainID, Open: open,
		Lim: int32(min(limit, math.MaxInt32))}) //nolint:gosec // bounded
	if err != nil {
		return nil, err
	}
	out := make([]BatchWithTx, len(rows))
	for i, r := range rows {
		out[i] = BatchWithTx{
			Batch: domain.SweepBatch{ID: r.ID, ChainID: r.ChainID, Status: r.Status, CreatedAt: r.CreatedAt, DoneAt: r.DoneAt},
			Tx: domain.ChainTx{ID: r.TxID, ChainID: r.ChainID, Purpose: "sweep-batch", State: r.TxState, MinedHash: r.TxMinedHash,
				MinedBlock: uint64(max(r.TxMinedBlock, 0)), Data: r.TxData, Authorizations: r.TxAuthorizations},
		}
	}
	return out, nil
}

// SweepsInBatches lists the sweeps the batches hold now (a sweep a batch skipped left it).
func (q *Queries) SweepsInBatches(ctx context.Context, batchIDs []int64) ([]domain.Sweep, error) {
	return mapSweeps(sqlc.SweepsInBatches(ctx, q.db, batchIDs))
}

// SkippedSweepsOfAddresses lists every sweep a batch skipped of the addresses on a chain, oldest
// first.
func (q *Queries) SkippedSweepsOfAddresses(ctx context.Context, chainID int64, addresses []string) ([]domain.Sweep, error) {
	return mapSweeps(sqlc.SkippedSweepsOfAddresses(ctx, q.db, dbsqlc.SkippedSweepsOfAddressesParams{ChainID: chainID, Addresses: addresses}))
}

// DepositIDsOfSweeps maps each sweep to its deposits' ids, ascending.
func (q *Queries) DepositIDsOfSweeps(ctx context.Context, sweepIDs []int64) (map[int64][]int64, error) {
	rows, err := sqlc.DepositIDsOfSweeps(ctx, q.db, sweepIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64][]int64, len(sweepIDs))
	for _, r := range rows {
		out[r.SweepID.Int64] = append(out[r.SweepID.Int64], r.ID)
	}
	return out, nil
}

// DetachSweepDeposits takes a retired sweep's deposits out of it (none is credited: a retired
// sweep moved nothing), and says how many.
func (q *Queries) DetachSweepDeposits(ctx context.Context, sweepID int64) (int64, error) {
	return sqlc.DetachSweepDeposits(ctx, q.db, sweepID)
}

// LeaveCancelledSweep takes a reorged deposit out of its sweep, whose transfers were
// cancelled, and says whether it was in it.
func (q *Queries) LeaveCancelledSweep(ctx context.Context, depositID, sweepID int64) (bool, error) {
	n, err := sqlc.LeaveCancelledSweep(ctx, q.db, dbsqlc.LeaveCancelledSweepParams{ID: depositID, SweepID: sweepID})
	return n > 0, err
}

// DetachSweepCurrencies takes a sweep's deposits of the given currencies out of it (their
// transfers moved nothing), and says how many.
func (q *Queries) DetachSweepCurrencies(ctx context.Context, sweepID int64, currencies []string) (int64, error) {
	return sqlc.DetachSweepCurrencies(ctx, q.db, dbsqlc.DetachSweepCurrenciesParams{SweepID: sweepID, Currencies: currencies})
}

// DetachWrittenOff takes the written-off deposits out of a waiting (FUNDING) sweep, and says
// how many.
func (q *Queries) DetachWrittenOff(ctx context.Context, sweepID int64) (int64, error) {
	return sqlc.DetachWrittenOff(ctx, q.db, sweepID)
}
