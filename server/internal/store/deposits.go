package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// DepositAddress is a depositor's address, a depositor's token-deposit address, or an
// operator's treasury address, and its derivation index (one index space for all three).
type DepositAddress struct {
	OperatorID     string
	ExternalUserID string // "" for a treasury address
	Index          uint32
	Address        string
	// Treasury: payments to the address fund the operator's payouts (no DEPOSIT webhook).
	Treasury bool
	// Token: a token-deposit address (m/44'/60'/0'/1/Index, where token deposits go on
	// EIP-7702 chains); otherwise the address is at m/44'/60'/0'/0/Index.
	Token bool
}

// depositRow is what every deposit query returns: the deposits row and the values joined to
// it. Each query has its own generated row type of this shape; depositRows lets one mapper
// read them all (a query whose shape drifts no longer compiles).
type depositRow struct {
	Deposit           dbsqlc.Deposit
	SweepTxHash       string
	SessionRef        string
	OperatorReference string
}

type depositRows interface {
	~struct {
		Deposit           dbsqlc.Deposit
		SweepTxHash       string
		SessionRef        string
		OperatorReference string
	}
}

// depositOf maps a deposits row to the domain.
func depositOf[R depositRows](row R) (domain.Deposit, error) {
	x := depositRow(row)
	r := x.Deposit
	d := domain.Deposit{ID: r.ID, OperatorID: r.OperatorID, ExternalUserID: r.ExternalUserID, SessionID: deref(r.SessionID),
		ChainID: r.ChainID, TxHash: r.TxHash, LogIndex: int64(r.LogIndex), BlockNumber: chainUint(r.BlockNumber),
		BlockHash: r.BlockHash, Address: r.Address, AddressIndex: addressIndex(r.AddressIndex), Currency: r.Currency,
		ContractAddress: deref(r.ContractAddress), Decimals: r.Decimals, GrossAmount: r.GrossAmount.BigInt(),
		Status: r.Status, Manual: r.Manual, IdempotencyKey: r.IdempotencyKey, USDPrice: r.UsdPrice,
		FiatCurrency: deref(r.FiatCurrency), FiatPerUSD: r.FiatPerUsd, AmountInDollar: r.AmountInDollar,
		AmountInLocal: r.AmountInLocal, FeeInDollar: r.FeeInDollar, DetectedAt: r.DetectedAt, ConfirmedAt: r.ConfirmedAt,
		CreditedAt: r.CreditedAt, SweepID: r.SweepID.Int64, Treasury: r.Treasury, Unpriced: r.Unpriced,
		ReplayedBy:  domain.Actor(deref(r.ReplayedBy)),
		SweepTxHash: x.SweepTxHash, SessionRef: x.SessionRef, OperatorReference: x.OperatorReference}
	if r.SignedFee.Valid {
		d.SignedFee = r.SignedFee.Decimal.BigInt()
	}
	// Fee and amount are set together, when the deposit is credited.
	if r.FeeAmount.Valid {
		d.FeeAmount, d.Amount = r.FeeAmount.Decimal.BigInt(), r.Amount.Decimal.BigInt()
	}
	return d, nil
}

// oneDeposit maps a single-row deposit query's result.
func oneDeposit[R depositRows](r R, err error) (domain.Deposit, error) {
	return one(r, err, depositOf[R])
}

// manyDeposits maps a deposit list query's result.
func manyDeposits[R depositRows](rows []R, err error) ([]domain.Deposit, error) {
	return many(rows, err, depositOf[R])
}

// deref reads a nullable text column, NULL as "".
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ids returns the ids of a query, none as an empty list.
func ids(rows []int64, err error) ([]int64, error) {
	if rows == nil && err == nil {
		rows = []int64{}
	}
	return rows, err
}

// LockDepositor registers the depositor if needed and locks its row for the caller's
// transaction; index is nil until an address is assigned.
func (q *Queries) LockDepositor(ctx context.Context, operatorID, externalUserID string) (index *int64, address string, err error) {
	if err = sqlc.RegisterDepositor(ctx, q.db, dbsqlc.RegisterDepositorParams{OperatorID: operatorID, ExternalUserID: externalUserID}); err != nil {
		return nil, "", err
	}
	r, err := sqlc.LockDepositorAddress(ctx, q.db, dbsqlc.LockDepositorAddressParams{OperatorID: operatorID, ExternalUserID: externalUserID})
	if r.AddressIndex.Valid {
		index = &r.AddressIndex.Int64
	}
	return index, deref(r.Address), err
}

// NextAddressIndex takes the next derivation index.
func (q *Queries) NextAddressIndex(ctx context.Context) (int64, error) {
	return sqlc.NextAddressIndex(ctx, q.db)
}

// AssignAddress records a depositor's address.
func (q *Queries) AssignAddress(ctx context.Context, operatorID, externalUserID string, index int64, address string) error {
	return sqlc.AssignAddress(ctx, q.db, dbsqlc.AssignAddressParams{OperatorID: operatorID, ExternalUserID: externalUserID,
		AddressIndex: index, Address: address})
}

// depositAddressRow is what the watched-address queries return: each has a generated row type
// of this shape, which depositAddressOf reads (a query whose shape drifts no longer compiles).
type depositAddressRow = struct {
	OperatorID     string
	ExternalUserID string
	AddressIndex   int64
	Address        string
	Treasury       bool
	Token          bool
}

func depositAddressOf[R ~depositAddressRow](row R) (DepositAddress, error) {
	r := depositAddressRow(row)
	return DepositAddress{OperatorID: r.OperatorID, ExternalUserID: r.ExternalUserID, Index: addressIndex(r.AddressIndex),
		Address: r.Address, Treasury: r.Treasury, Token: r.Token}, nil
}

// DepositAddressesAfter lists watched addresses (depositors', treasuries', token-deposit) with an index
// above after, in index order (the scanner's watched set grows by these).
func (q *Queries) DepositAddressesAfter(ctx context.Context, after int64, limit int) ([]DepositAddress, error) {
	rows, err := sqlc.DepositAddressesAfter(ctx, customPlan{q.db}, dbsqlc.DepositAddressesAfterParams{After: after, Lim: rowLimit(limit)})
	return many(rows, err, depositAddressOf[dbsqlc.DepositAddressesAfterRow])
}

// customPlan runs queries as unnamed statements, planned for their arguments each time. The
// generic plan a cached statement gets after five runs takes "address_index > $1" to match a
// third of the table and scans all of it (a second at 10M addresses), where the index finds
// the few new rows.
type customPlan struct{ DBTX }

func (c customPlan) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return c.DBTX.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
}

// DepositAddressesIn returns the owners of those of addresses (EIP-55 form) that are watched,
// in one statement.
func (q *Queries) DepositAddressesIn(ctx context.Context, addresses []string) ([]DepositAddress, error) {
	rows, err := sqlc.DepositAddressesIn(ctx, q.db, addresses)
	return many(rows, err, depositAddressOf[dbsqlc.DepositAddressesInRow])
}

// DepositAddressesAt returns the watched addresses with these derivation indexes.
func (q *Queries) DepositAddressesAt(ctx context.Context, indexes []int64) ([]DepositAddress, error) {
	rows, err := sqlc.DepositAddressesAt(ctx, q.db, indexes)
	return many(rows, err, depositAddressOf[dbsqlc.DepositAddressesAtRow])
}

// MaxAddressIndex is the highest derivation index assigned, -1 before the first: one more
// bounds the number of watched addresses.
func (q *Queries) MaxAddressIndex(ctx context.Context) (int64, error) {
	return sqlc.MaxAddressIndex(ctx, q.db)
}

// EachWatchedAddress streams every watched address (depositors', treasuries', token-deposit), in no
// particular order, calling fn with each one's index and 20 bytes; fn must
// not keep the slice. Ten million rows stream in a few seconds without being held.
//
// The rows are read as a stream (sqlc's :many would collect every row into a slice), raw (the
// index as binary int8, the address as its text) to allocate nothing per row.
func (q *Queries) EachWatchedAddress(ctx context.Context, fn func(index int64, address []byte) error) error {
	rows, err := sqlc.AllWatchedAddressesRows(ctx, q.db)
	if err != nil {
		return err
	}
	defer rows.Close()
	var addr [20]byte
	for rows.Next() {
		raw := rows.RawValues()
		binaryIndex := rows.FieldDescriptions()[0].Format == pgtype.BinaryFormatCode
		if len(raw) != 2 || len(raw[1]) != 42 || raw[1][0] != '0' || (raw[1][1] != 'x' && raw[1][1] != 'X') {
			return fmt.Errorf("store: unexpected watched address row %q", raw)
		}
		if _, err := hex.Decode(addr[:], raw[1][2:]); err != nil {
			return fmt.Errorf("store: watched address %q: %w", raw[1], err)
		}
		var index int64
		if binaryIndex && len(raw[0]) == 8 {
			index = int64(binary.BigEndian.Uint64(raw[0])) //nolint:gosec // int8 bits, as PostgreSQL sent them
		} else if index, err = strconv.ParseInt(string(raw[0]), 10, 64); err != nil {
			return fmt.Errorf("store: watched address index %q: %w", raw[0], err)
		}
		if err := fn(index, addr[:]); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DepositAddressByAddress finds the depositor or treasury owning an address (EIP-55 form).
// Token says the address is a depositor's token-deposit address.
func (q *Queries) DepositAddressByAddress(ctx context.Context, address string) (DepositAddress, error) {
	r, err := sqlc.DepositAddressByAddress(ctx, q.db, address)
	if err != nil {
		return DepositAddress{}, notFound(err)
	}
	return depositAddressOf(r)
}

// Treasury returns an operator's treasury address (ErrNotFound before one is assigned).
func (q *Queries) Treasury(ctx context.Context, operatorID string) (DepositAddress, error) {
	r, err := sqlc.GetTreasury(ctx, q.db, operatorID)
	if err != nil {
		return DepositAddress{}, notFound(err)
	}
	return DepositAddress{OperatorID: r.OperatorID, Index: addressIndex(r.AddressIndex), Address: r.Address, Treasury: true}, nil
}

// LockTreasuries serialises treasury assignments until the transaction ends.
func (q *Queries) LockTreasuries(ctx context.Context) error {
	return sqlc.LockTreasuries(ctx, q.db)
}

// InsertTreasury records an operator's treasury address.
func (q *Queries) InsertTreasury(ctx context.Context, operatorID string, index int64, address string) error {
	return sqlc.InsertTreasury(ctx, q.db, dbsqlc.InsertTreasuryParams{OperatorID: operatorID, AddressIndex: index, Address: address})
}

// LockTokenAddress registers the depositor if needed, locks its row for the caller's
// transaction (which serialises the assignment of its token-deposit address, as LockDepositor
// does its address) and returns its token-deposit address; index is nil until one is assigned.
func (q *Queries) LockTokenAddress(ctx context.Context, operatorID, externalUserID string) (index *int64, address string, err error) {
	if _, _, err = q.LockDepositor(ctx, operatorID, externalUserID); err != nil {
		return nil, "", err
	}
	r, err := sqlc.GetTokenAddress(ctx, q.db, dbsqlc.GetTokenAddressParams{OperatorID: operatorID, ExternalUserID: externalUserID})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return &r.AddressIndex, r.Address, nil
}

// InsertTokenAddress records a depositor's token-deposit address.
func (q *Queries) InsertTokenAddress(ctx context.Context, operatorID, externalUserID string, index int64, address string) error {
	return sqlc.InsertTokenAddress(ctx, q.db, dbsqlc.InsertTokenAddressParams{OperatorID: operatorID, ExternalUserID: externalUserID,
		AddressIndex: index, Address: address})
}

// DepositAddressOf returns the address of an operator's depositor, if one is assigned.
func (q *Queries) DepositAddressOf(ctx context.Context, operatorID, externalUserID string) (string, error) {
	addr, err := sqlc.DepositAddressOf(ctx, q.db, dbsqlc.DepositAddressOfParams{OperatorID: operatorID, ExternalUserID: externalUserID})
	if err != nil {
		return "", notFound(err)
	}
	return deref(addr), nil
}

// Cursor is a chain's scanning position.
type Cursor struct {
	ChainID     int64
	GenesisHash string
	NextBlock   uint64
	HeadBlock   uint64
}

// GetCursor loads a chain's cursor, locking it for the caller's transaction (one scanner at a time).
func (q *Queries) GetCursor(ctx context.Context, chainID int64) (Cursor, error) {
	r, err := sqlc.GetCursor(ctx, q.db, chainID)
	return Cursor{ChainID: r.ChainID, GenesisHash: r.GenesisHash, NextBlock: chainUint(r.NextBlock), HeadBlock: chainUint(r.HeadBlock)},
		notFound(err)
}

// PutCursor stores a chain's cursor.
func (q *Queries) PutCursor(ctx context.Context, c Cursor) error {
	return sqlc.PutCursor(ctx, q.db, dbsqlc.PutCursorParams{ChainID: c.ChainID, GenesisHash: c.GenesisHash,
		NextBlock: bigint(c.NextBlock), HeadBlock: bigint(c.HeadBlock)})
}

// ChainHead is the latest head a chain's scanner saw (0 before the first scan).
func (q *Queries) ChainHead(ctx context.Context, chainID int64) (uint64, error) {
	head, err := sqlc.ChainHead(ctx, q.db, chainID)
	return chainUint(head), err
}

// BlockHash returns the stored hash of a scanned block ("" when not stored).
func (q *Queries) BlockHash(ctx context.Context, chainID int64, number uint64) (string, error) {
	h, err := sqlc.BlockHash(ctx, q.db, dbsqlc.BlockHashParams{ChainID: chainID, Number: bigint(number)})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return h, err
}

// BlockRef is a scanned block.
type BlockRef struct {
	Number     uint64
	Hash       string
	ParentHash string
}

// PutBlocks stores scanned blocks and forgets those older than keepFrom.
func (q *Queries) PutBlocks(ctx context.Context, chainID int64, blocks []BlockRef, keepFrom uint64) error {
	numbers := make([]int64, len(blocks))
	hashes := make([]string, len(blocks))
	parents := make([]string, len(blocks))
	for i, b := range blocks {
		numbers[i], hashes[i], parents[i] = bigint(b.Number), b.Hash, b.ParentHash
	}
	return sqlc.PutBlocks(ctx, q.db, dbsqlc.PutBlocksParams{ChainID: chainID, Numbers: numbers, Hashes: hashes, Parents: parents,
		KeepFrom: bigint(keepFrom)})
}

// DeleteBlocksFrom forgets scanned blocks from a number on (a reorg rolled them back).
func (q *Queries) DeleteBlocksFrom(ctx context.Context, chainID int64, from uint64) error {
	return sqlc.DeleteBlocksFrom(ctx, q.db, dbsqlc.DeleteBlocksFromParams{ChainID: chainID, FromNumber: bigint(from)})
}

// UpsertDeposit records a detected deposit, or moves a known one to the block it is now in (a
// reorg re-mined it). inserted is true for a new deposit.
func (q *Queries) UpsertDeposit(ctx context.Context, d domain.Deposit) (domain.Deposit, bool, error) {
	r, err := sqlc.UpsertDeposit(ctx, q.db, dbsqlc.UpsertDepositParams{OperatorID: d.OperatorID, ExternalUserID: d.ExternalUserID,
		SessionID: d.SessionID, ChainID: d.ChainID, TxHash: d.TxHash, LogIndex: int4(d.LogIndex), BlockNumber: bigint(d.BlockNumber),
		BlockHash: d.BlockHash, Address: d.Address, AddressIndex: int64(d.AddressIndex), Currency: d.Currency,
		ContractAddress: d.ContractAddress, Decimals: d.Decimals, GrossAmount: Uint256(d.GrossAmount), Status: d.Status,
		Manual: d.Manual, IdempotencyKey: d.IdempotencyKey, Treasury: d.Treasury, ReplayedBy: string(d.ReplayedBy)})
	out, err := oneDeposit(depositRow{r.Deposit, r.SweepTxHash, r.SessionRef, r.OperatorReference}, err)
	return out, r.Inserted, err
}

// GetDeposit loads a deposit.
func (q *Queries) GetDeposit(ctx context.Context, id int64) (domain.Deposit, error) {
	return oneDeposit(sqlc.GetDeposit(ctx, q.db, id))
}

// LockDeposit loads a deposit and locks it for the caller's transaction.
func (q *Queries) LockDeposit(ctx context.Context, id int64) (domain.Deposit, error) {
	return oneDeposit(sqlc.LockDeposit(ctx, q.db, id))
}

// DepositByTransfer finds the deposit of a transfer.
func (q *Queries) DepositByTransfer(ctx context.Context, chainID int64, txHash string, logIndex int64) (domain.Deposit, error) {
	return oneDeposit(sqlc.DepositByTransfer(ctx, q.db, dbsqlc.DepositByTransferParams{ChainID: chainID, TxHash: txHash,
		LogIndex: int4(logIndex)}))
}

// OrphanDepositsFrom marks unconfirmed deposits in blocks from a number on as orphaned (a reorg
// removed those blocks) and returns how many.
func (q *Queries) OrphanDepositsFrom(ctx context.Context, chainID int64, from uint64) (int64, error) {
	return sqlc.OrphanDepositsFrom(ctx, q.db, dbsqlc.OrphanDepositsFromParams{ChainID: chainID, FromBlock: bigint(from)})
}

// OrphanDeposits marks the unconfirmed (CONFIRMING) deposits among ids orphaned: their block
// left the chain before their confirmation depth.
func (q *Queries) OrphanDeposits(ctx context.Context, ids []int64) (int64, error) {
	return sqlc.OrphanDeposits(ctx, q.db, ids)
}

// OrphanChainDeposits marks every unconfirmed deposit of a chain orphaned (the chain was reset).
func (q *Queries) OrphanChainDeposits(ctx context.Context, chainID int64) (int64, error) {
	return sqlc.OrphanChainDeposits(ctx, q.db, chainID)
}

// ConfirmDeposits moves deposits in blocks up to maxBlock from CONFIRMING to SWEEPING and
// returns their ids.
func (q *Queries) ConfirmDeposits(ctx context.Context, chainID int64, maxBlock uint64) ([]int64, error) {
	return ids(sqlc.ConfirmDeposits(ctx, q.db, dbsqlc.ConfirmDepositsParams{ChainID: chainID, MaxBlock: bigint(maxBlock)}))
}

// LockDepositStatus returns a deposit's status and holds its row until the transaction ends.
func (q *Queries) LockDepositStatus(ctx context.Context, id int64) (domain.DepositStatus, error) {
	status, err := sqlc.LockDepositStatus(ctx, q.db, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	return status, err
}

// ConfirmDeposit moves one deposit from CONFIRMING to SWEEPING (a replay verified its depth).
func (q *Queries) ConfirmDeposit(ctx context.Context, id int64) error {
	return sqlc.ConfirmDeposit(ctx, q.db, id)
}

// Credit records a deposit's settlement. The price fields are invalid (NULL) when the rate
// could not be read: Unpriced is then set.
type Credit struct {
	FeeAmount, Amount                          *big.Int
	USDPrice, FiatPerUSD                       decimal.NullDecimal
	FiatCurrency                               string
	AmountInDollar, AmountInLocal, FeeInDollar decimal.NullDecimal
	Unpriced                                   bool
}

// CreditDeposit marks a sweeping deposit credited with its amounts and rate snapshot.
func (q *Queries) CreditDeposit(ctx context.Context, id int64, c Credit) (domain.Deposit, error) {
	return oneDeposit(sqlc.CreditDeposit(ctx, q.db, dbsqlc.CreditDepositParams{ID: id,
		FeeAmount: decimal.NewNullDecimal(Uint256(c.FeeAmount)), Amount: decimal.NewNullDecimal(Uint256(c.Amount)),
		UsdPrice: c.USDPrice, FiatPerUsd: c.FiatPerUSD, FiatCurrency: &c.FiatCurrency, AmountInDollar: c.AmountInDollar,
		AmountInLocal: c.AmountInLocal, FeeInDollar: c.FeeInDollar, Unpriced: c.Unpriced}))
}

// SessionDeposits lists a session's deposits, oldest first.
func (q *Queries) SessionDeposits(ctx context.Context, sessionID string) ([]domain.Deposit, error) {
	return manyDeposits(sqlc.SessionDeposits(ctx, q.db, sessionID))
}

// ListDeposits lists deposits, newest first.
func (q *Queries) ListDeposits(ctx context.Context, f domain.DepositFilter) ([]domain.Deposit, error) {
	var statuses []string // nil stays NULL, as the filter's nil did
	if f.Statuses != nil {
		statuses = make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			statuses[i] = string(s)
		}
	}
	return manyDeposits(sqlc.ListDeposits(ctx, q.db, dbsqlc.ListDepositsParams{OperatorIDs: f.OperatorIDs,
		ExternalUserID: f.ExternalUserID, Statuses: statuses, ChainID: f.ChainID, DetectedAfter: f.DetectedAfter,
		DetectedBefore: f.DetectedBefore, BeforeID: f.BeforeID, Lim: rowLimit(f.Limit)}))
}

// RecordHandout records, in a transaction of its own, that a deposit session showed its user's
// address for a chain and currency: the session's run of handouts goes on when no other session
// of the user showed it since, else a new run starts (AttributedSession reads them). The user's
// row lock orders concurrent handouts, so runs never overlap.
func RecordHandout(ctx context.Context, pool *pgxpool.Pool, sessionID string, chainID int64, currency string) error {
	return InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := sqlc.LockHandouts(ctx, tx, sessionID); err != nil {
			return err
		}
		extended, err := sqlc.ExtendHandoutRun(ctx, tx, dbsqlc.ExtendHandoutRunParams{SessionID: sessionID, ChainID: chainID, Currency: currency})
		if err != nil {
			return err
		}
		if extended == 0 {
			err := sqlc.StartHandoutRun(ctx, tx, dbsqlc.StartHandoutRunParams{SessionID: sessionID, ChainID: chainID, Currency: currency})
			if err != nil {
				return err
			}
		}
		return sqlc.RecordHandout(ctx, tx, dbsqlc.RecordHandoutParams{SessionID: sessionID, ChainID: chainID, Currency: currency})
	})
}

// HandoutSlack absorbs the difference between the database clock and block timestamps (whole
// seconds, set by the block producer) when a payment follows its address within seconds.
const HandoutSlack = 10 * time.Second

// interval converts a duration for an interval parameter.
func interval(d time.Duration) pgtype.Interval {
	return pgtype.Interval{Microseconds: d.Microseconds(), Valid: true}
}

// AttributedSession is the deposit session a payment made at a moment belongs to: among the
// user's deposit sessions live at that moment, the one that most recently handed out the
// address for the payment's chain and currency. ErrNotFound: none (a direct send).
func (q *Queries) AttributedSession(ctx context.Context, operatorID, externalUserID string, chainID int64, currency string,
	at time.Time) (domain.Session, error) {
	r, err := sqlc.AttributedSession(ctx, q.db, dbsqlc.AttributedSessionParams{OperatorID: operatorID, ExternalUserID: externalUserID,
		ChainID: chainID, Currency: currency, PaidAt: at, Slack: interval(HandoutSlack)})
	if err != nil {
		return domain.Session{}, notFound(err)
	}
	return sessionOf(r)
}
