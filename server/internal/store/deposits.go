package store

import (
	"context"
	"errors"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

// DepositAddress is a depositor's address, or an operator's treasury address, and its
// derivation index.
type DepositAddress struct {
	OperatorID     string
	ExternalUserID string // "" for a treasury address
	Index          uint32
	Address        string
	// Treasury: payments to the address fund the operator's payouts (no DEPOSIT webhook).
	Treasury bool
}

// watchedAddresses is every address the scanner watches: depositors' and treasuries'.
const watchedAddresses = `(SELECT operator_id, external_user_id, address_index, address, false AS treasury FROM depositors
		WHERE address_index IS NOT NULL
	UNION ALL
	SELECT operator_id, '', address_index, address, true FROM treasuries) AS watched`

// LockDepositor registers the depositor if needed and locks its row for the caller's
// transaction; index is nil until an address is assigned.
func (q *Queries) LockDepositor(ctx context.Context, operatorID, externalUserID string) (index *int64, address string, err error) {
	if _, err = q.db.Exec(ctx, `INSERT INTO depositors (operator_id, external_user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		operatorID, externalUserID); err != nil {
		return nil, "", err
	}
	var addr *string
	err = q.db.QueryRow(ctx, `SELECT address_index, address FROM depositors WHERE operator_id = $1 AND external_user_id = $2 FOR UPDATE`,
		operatorID, externalUserID).Scan(&index, &addr)
	if addr != nil {
		address = *addr
	}
	return index, address, err
}

// NextAddressIndex takes the next derivation index.
func (q *Queries) NextAddressIndex(ctx context.Context) (int64, error) {
	var i int64
	err := q.db.QueryRow(ctx, `SELECT nextval('deposit_address_index')`).Scan(&i)
	return i, err
}

// AssignAddress records a depositor's address.
func (q *Queries) AssignAddress(ctx context.Context, operatorID, externalUserID string, index int64, address string) error {
	_, err := q.db.Exec(ctx, `UPDATE depositors SET address_index = $3, address = $4, updated_at = now()
		WHERE operator_id = $1 AND external_user_id = $2`, operatorID, externalUserID, index, address)
	return err
}

func scanDepositAddress(row interface{ Scan(...any) error }) (DepositAddress, error) {
	var a DepositAddress
	var i int64
	err := row.Scan(&a.OperatorID, &a.ExternalUserID, &i, &a.Address, &a.Treasury)
	a.Index = uint32(i)
	return a, notFound(err)
}

// DepositAddressesAfter lists watched addresses (depositors' and treasuries') with an index
// above after, in index order (the scanner's watched set grows by these).
func (q *Queries) DepositAddressesAfter(ctx context.Context, after int64, limit int) ([]DepositAddress, error) {
	rows, err := q.db.Query(ctx, `SELECT operator_id::text, external_user_id, address_index, address, treasury FROM `+
		watchedAddresses+` WHERE address_index > $1 ORDER BY address_index LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (DepositAddress, error) { return scanDepositAddress(r) })
}

// DepositAddressByAddress finds the depositor or treasury owning an address (EIP-55 form).
func (q *Queries) DepositAddressByAddress(ctx context.Context, address string) (DepositAddress, error) {
	return scanDepositAddress(q.db.QueryRow(ctx, `SELECT operator_id::text, external_user_id, address_index, address, treasury
		FROM `+watchedAddresses+` WHERE address = $1`, address))
}

// Treasury returns an operator's treasury address (ErrNotFound before one is assigned).
func (q *Queries) Treasury(ctx context.Context, operatorID string) (DepositAddress, error) {
	return scanDepositAddress(q.db.QueryRow(ctx, `SELECT operator_id::text, '', address_index, address, true
		FROM treasuries WHERE operator_id = $1`, operatorID))
}

// LockTreasuries serialises treasury assignments until the transaction ends.
func (q *Queries) LockTreasuries(ctx context.Context) error {
	_, err := q.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('coffer treasuries'))`)
	return err
}

// InsertTreasury records an operator's treasury address.
func (q *Queries) InsertTreasury(ctx context.Context, operatorID string, index int64, address string) error {
	_, err := q.db.Exec(ctx, `INSERT INTO treasuries (operator_id, address_index, address) VALUES ($1, $2, $3)`,
		operatorID, index, address)
	return err
}

// DepositAddressOf returns the address of an operator's depositor, if one is assigned.
func (q *Queries) DepositAddressOf(ctx context.Context, operatorID, externalUserID string) (string, error) {
	var addr *string
	err := q.db.QueryRow(ctx, `SELECT address FROM depositors WHERE operator_id = $1 AND external_user_id = $2`,
		operatorID, externalUserID).Scan(&addr)
	if err != nil {
		return "", notFound(err)
	}
	if addr == nil {
		return "", nil
	}
	return *addr, nil
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
	var c Cursor
	var next, head int64
	err := q.db.QueryRow(ctx, `SELECT chain_id, genesis_hash, next_block, head_block FROM chain_cursors WHERE chain_id = $1 FOR UPDATE`,
		chainID).Scan(&c.ChainID, &c.GenesisHash, &next, &head)
	c.NextBlock, c.HeadBlock = uint64(next), uint64(head)
	return c, notFound(err)
}

// PutCursor stores a chain's cursor.
func (q *Queries) PutCursor(ctx context.Context, c Cursor) error {
	_, err := q.db.Exec(ctx, `INSERT INTO chain_cursors (chain_id, genesis_hash, next_block, head_block) VALUES ($1, $2, $3, $4)
		ON CONFLICT (chain_id) DO UPDATE SET genesis_hash = $2, next_block = $3, head_block = $4, updated_at = now()`,
		c.ChainID, c.GenesisHash, int64(c.NextBlock), int64(c.HeadBlock))
	return err
}

// ChainHead is the latest head a chain's scanner saw (0 before the first scan).
func (q *Queries) ChainHead(ctx context.Context, chainID int64) (uint64, error) {
	var head int64
	err := q.db.QueryRow(ctx, `SELECT COALESCE((SELECT head_block FROM chain_cursors WHERE chain_id = $1), 0)`, chainID).Scan(&head)
	return uint64(head), err
}

// BlockHash returns the stored hash of a scanned block ("" when not stored).
func (q *Queries) BlockHash(ctx context.Context, chainID int64, number uint64) (string, error) {
	var h string
	err := q.db.QueryRow(ctx, `SELECT hash FROM chain_blocks WHERE chain_id = $1 AND number = $2`, chainID, int64(number)).Scan(&h)
	if err == pgx.ErrNoRows {
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
		numbers[i], hashes[i], parents[i] = int64(b.Number), b.Hash, b.ParentHash
	}
	_, err := q.db.Exec(ctx, `
		WITH put AS (
			INSERT INTO chain_blocks (chain_id, number, hash, parent_hash)
			SELECT $1, n, h, p FROM unnest($2::bigint[], $3::text[], $4::text[]) AS b (n, h, p)
			ON CONFLICT (chain_id, number) DO UPDATE SET hash = EXCLUDED.hash, parent_hash = EXCLUDED.parent_hash
		) DELETE FROM chain_blocks WHERE chain_id = $1 AND number < $5`,
		chainID, numbers, hashes, parents, int64(keepFrom))
	return err
}

// DeleteBlocksFrom forgets scanned blocks from a number on (a reorg rolled them back).
func (q *Queries) DeleteBlocksFrom(ctx context.Context, chainID int64, from uint64) error {
	_, err := q.db.Exec(ctx, `DELETE FROM chain_blocks WHERE chain_id = $1 AND number >= $2`, chainID, int64(from))
	return err
}

const depositColumns = `id, operator_id::text, external_user_id, COALESCE(session_id::text, ''), chain_id, tx_hash, log_index,
	block_number, block_hash, address, address_index, currency, COALESCE(contract_address, ''), decimals, gross_amount,
	fee_amount, amount, status, manual, idempotency_key, usd_price, COALESCE(fiat_currency, ''), fiat_per_usd,
	amount_in_dollar, amount_in_local, fee_in_dollar, detected_at, confirmed_at, credited_at,
	COALESCE(sweep_id, 0), treasury, unpriced,
	COALESCE((SELECT mined_hash FROM chain_txs WHERE purpose = 'sweep'
		AND ref IN ('deposit:' || deposits.id, 'sweep:' || deposits.sweep_id || ':' || deposits.currency)), ''),
	COALESCE((SELECT session_ref FROM sessions WHERE id = deposits.session_id), ''),
	COALESCE((SELECT operator_reference FROM sessions WHERE id = deposits.session_id), '')`

// scanDeposit reads depositColumns, then any extra columns into extra.
func scanDeposit(row interface{ Scan(...any) error }, extra ...any) (domain.Deposit, error) {
	var d domain.Deposit
	var block, index int64
	var gross decimal.Decimal
	var fee, amount decimal.NullDecimal
	err := row.Scan(append([]any{&d.ID, &d.OperatorID, &d.ExternalUserID, &d.SessionID, &d.ChainID, &d.TxHash, &d.LogIndex,
		&block, &d.BlockHash, &d.Address, &index, &d.Currency, &d.ContractAddress, &d.Decimals, &gross,
		&fee, &amount, &d.Status, &d.Manual, &d.IdempotencyKey, &d.USDPrice, &d.FiatCurrency, &d.FiatPerUSD,
		&d.AmountInDollar, &d.AmountInLocal, &d.FeeInDollar, &d.DetectedAt, &d.ConfirmedAt, &d.CreditedAt,
		&d.SweepID, &d.Treasury, &d.Unpriced, &d.SweepTxHash, &d.SessionRef, &d.OperatorReference}, extra...)...)
	if err != nil {
		return d, notFound(err)
	}
	d.BlockNumber, d.AddressIndex, d.GrossAmount = uint64(block), uint32(index), gross.BigInt()
	if fee.Valid {
		d.FeeAmount, d.Amount = fee.Decimal.BigInt(), amount.Decimal.BigInt()
	}
	return d, nil
}

// UpsertDeposit records a detected deposit, or moves a known one to the block it is now in (a
// reorg re-mined it). inserted is true for a new deposit.
func (q *Queries) UpsertDeposit(ctx context.Context, d domain.Deposit) (domain.Deposit, bool, error) {
	var inserted bool
	row := q.db.QueryRow(ctx, `
		INSERT INTO deposits (operator_id, external_user_id, session_id, chain_id, tx_hash, log_index, block_number, block_hash,
			address, address_index, currency, contract_address, decimals, gross_amount, status, manual, idempotency_key, treasury)
		VALUES ($1, $2, NULLIF($3, '')::uuid, $4, $5, $6, $7, $8, $9, $10, $11, NULLIF($12, ''), $13, $14, $15, $16, $17, $18)
		ON CONFLICT (chain_id, tx_hash, log_index) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash,
			status = CASE WHEN deposits.status = 'ORPHANED' THEN 'CONFIRMING' ELSE deposits.status END
		RETURNING `+depositColumns+`, xmax = 0`,
		d.OperatorID, d.ExternalUserID, d.SessionID, d.ChainID, d.TxHash, d.LogIndex, int64(d.BlockNumber), d.BlockHash,
		d.Address, int64(d.AddressIndex), d.Currency, d.ContractAddress, d.Decimals, Uint256(d.GrossAmount), d.Status, d.Manual,
		d.IdempotencyKey, d.Treasury)
	out, err := scanDeposit(row, &inserted)
	return out, inserted, err
}

// GetDeposit loads a deposit.
func (q *Queries) GetDeposit(ctx context.Context, id int64) (domain.Deposit, error) {
	return scanDeposit(q.db.QueryRow(ctx, `SELECT `+depositColumns+` FROM deposits WHERE id = $1`, id))
}

// LockDeposit loads a deposit and locks it for the caller's transaction.
func (q *Queries) LockDeposit(ctx context.Context, id int64) (domain.Deposit, error) {
	return scanDeposit(q.db.QueryRow(ctx, `SELECT `+depositColumns+` FROM deposits WHERE id = $1 FOR UPDATE`, id))
}

// DepositByTransfer finds the deposit of a transfer.
func (q *Queries) DepositByTransfer(ctx context.Context, chainID int64, txHash string, logIndex int64) (domain.Deposit, error) {
	return scanDeposit(q.db.QueryRow(ctx, `SELECT `+depositColumns+` FROM deposits WHERE chain_id = $1 AND tx_hash = $2 AND log_index = $3`,
		chainID, txHash, logIndex))
}

// OrphanDepositsFrom marks unconfirmed deposits in blocks from a number on as orphaned (a reorg
// removed those blocks) and returns how many.
func (q *Queries) OrphanDepositsFrom(ctx context.Context, chainID int64, from uint64) (int64, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deposits SET status = 'ORPHANED' WHERE chain_id = $1 AND block_number >= $2 AND status = 'CONFIRMING'`,
		chainID, int64(from))
	return tag.RowsAffected(), err
}

// OrphanChainDeposits marks every unconfirmed deposit of a chain orphaned (the chain was reset).
func (q *Queries) OrphanChainDeposits(ctx context.Context, chainID int64) (int64, error) {
	tag, err := q.db.Exec(ctx, `UPDATE deposits SET status = 'ORPHANED' WHERE chain_id = $1 AND status = 'CONFIRMING'`, chainID)
	return tag.RowsAffected(), err
}

// ConfirmDeposits moves deposits in blocks up to maxBlock from CONFIRMING to SWEEPING and
// returns their ids.
func (q *Queries) ConfirmDeposits(ctx context.Context, chainID int64, maxBlock uint64) ([]int64, error) {
	rows, err := q.db.Query(ctx, `UPDATE deposits SET status = 'SWEEPING', confirmed_at = now()
		WHERE chain_id = $1 AND status = 'CONFIRMING' AND block_number <= $2 RETURNING id`, chainID, int64(maxBlock))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// LockDepositStatus returns a deposit's status and holds its row until the transaction ends.
func (q *Queries) LockDepositStatus(ctx context.Context, id int64) (domain.DepositStatus, error) {
	var status domain.DepositStatus
	err := q.db.QueryRow(ctx, `SELECT status FROM deposits WHERE id = $1 FOR UPDATE`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNotFound
	}
	return status, err
}

// ConfirmDeposit moves one deposit from CONFIRMING to SWEEPING (a replay verified its depth).
func (q *Queries) ConfirmDeposit(ctx context.Context, id int64) error {
	_, err := q.db.Exec(ctx, `UPDATE deposits SET status = 'SWEEPING', confirmed_at = now() WHERE id = $1 AND status = 'CONFIRMING'`, id)
	return err
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
	return scanDeposit(q.db.QueryRow(ctx, `UPDATE deposits SET status = 'CREDITED', credited_at = now(), fee_amount = $2, amount = $3,
		usd_price = $4, fiat_per_usd = $5, fiat_currency = $6, amount_in_dollar = $7, amount_in_local = $8, fee_in_dollar = $9,
		unpriced = $10
		WHERE id = $1 AND status = 'SWEEPING' RETURNING `+depositColumns,
		id, Uint256(c.FeeAmount), Uint256(c.Amount), c.USDPrice, c.FiatPerUSD, c.FiatCurrency, c.AmountInDollar, c.AmountInLocal,
		c.FeeInDollar, c.Unpriced))
}

// SessionDeposits lists a session's deposits, oldest first.
func (q *Queries) SessionDeposits(ctx context.Context, sessionID string) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits WHERE session_id = $1 AND status <> 'ORPHANED' ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// ListDeposits lists deposits, newest first.
func (q *Queries) ListDeposits(ctx context.Context, f domain.DepositFilter) ([]domain.Deposit, error) {
	rows, err := q.db.Query(ctx, `SELECT `+depositColumns+` FROM deposits
		WHERE ($1::uuid[] IS NULL OR operator_id = ANY($1::uuid[]))
		  AND ($2 = '' OR external_user_id = $2)
		  AND (cardinality($3::text[]) = 0 OR status = ANY($3::text[]))
		  AND ($4 = 0 OR id < $4)
		ORDER BY id DESC LIMIT $5`, f.OperatorIDs, f.ExternalUserID, f.Statuses, f.BeforeID, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Deposit, error) { return scanDeposit(r) })
}

// RecordHandout records that a deposit session showed its user's address for a chain and
// currency (again: the time moves on).
func (q *Queries) RecordHandout(ctx context.Context, sessionID string, chainID int64, currency string) error {
	_, err := q.db.Exec(ctx, `INSERT INTO address_handouts (session_id, chain_id, currency) VALUES ($1, $2, $3)
		ON CONFLICT (session_id, chain_id, currency) DO UPDATE SET handed_at = now()`, sessionID, chainID, currency)
	return err
}

// HandoutSlack absorbs the difference between the database clock and block timestamps (whole
// seconds, set by the block producer) when a payment follows its address within seconds.
const HandoutSlack = 10 * time.Second

// AttributedSession is the deposit session a payment made at a moment belongs to: among the
// user's deposit sessions live at that moment, the one that most recently handed out the
// address for the payment's chain and currency. ErrNotFound: none (a direct send).
func (q *Queries) AttributedSession(ctx context.Context, operatorID, externalUserID string, chainID int64, currency string,
	at time.Time) (domain.Session, error) {
	return scanSession(q.db.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s
		JOIN address_handouts h ON h.session_id = s.id AND h.chain_id = $3 AND h.currency = $4
		WHERE s.operator_id = $1 AND s.external_user_id = $2 AND s.kind = 'DEPOSIT'
		  AND s.created_at <= $5::timestamptz + $6::interval AND h.handed_at <= $5::timestamptz + $6::interval
		  AND s.expires_at > $5 AND (s.cancelled_at IS NULL OR s.cancelled_at > $5)
		ORDER BY h.handed_at DESC LIMIT 1`, operatorID, externalUserID, chainID, currency, at, HandoutSlack))
}
