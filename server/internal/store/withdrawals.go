package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// Withdrawal is a withdrawals row.
type Withdrawal struct {
	ID, OperatorID, SessionID, ExternalUserID string
	Type, ApprovalMode, Status                string
	ChainID                                   int64
	Currency, ContractAddress                 string // ContractAddress empty for the native currency
	Decimals                                  int32
	Address, FiatCurrency                     string
	FiatAmount                                decimal.Decimal
	CryptoAmount                              decimal.Decimal // smallest unit
	SettlementTxHash                          string
	CreatedAt, UpdatedAt, ExpiresAt           time.Time
}

const withdrawalColumns = `id::text, operator_id::text, session_id::text, external_user_id, type, approval_mode, status,
	chain_id, currency, coalesce(contract_address, ''), decimals, address, fiat_currency, fiat_amount, crypto_amount,
	coalesce(settlement_tx_hash, ''), created_at, updated_at, expires_at`

func scanWithdrawal(row pgx.Row) (Withdrawal, error) {
	var w Withdrawal
	err := row.Scan(&w.ID, &w.OperatorID, &w.SessionID, &w.ExternalUserID, &w.Type, &w.ApprovalMode, &w.Status,
		&w.ChainID, &w.Currency, &w.ContractAddress, &w.Decimals, &w.Address, &w.FiatCurrency, &w.FiatAmount,
		&w.CryptoAmount, &w.SettlementTxHash, &w.CreatedAt, &w.UpdatedAt, &w.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	return w, err
}

// InsertWithdrawal records an accepted withdrawal in its first status.
func (q *Queries) InsertWithdrawal(ctx context.Context, w Withdrawal) (Withdrawal, error) {
	return scanWithdrawal(q.db.QueryRow(ctx, `
		INSERT INTO withdrawals (id, operator_id, session_id, external_user_id, type, approval_mode, status, chain_id,
			currency, contract_address, decimals, address, fiat_currency, fiat_amount, crypto_amount, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), $11, $12, $13, $14, $15, $16)
		RETURNING `+withdrawalColumns,
		w.ID, w.OperatorID, w.SessionID, w.ExternalUserID, w.Type, w.ApprovalMode, w.Status, w.ChainID,
		w.Currency, w.ContractAddress, w.Decimals, w.Address, w.FiatCurrency, w.FiatAmount, w.CryptoAmount, w.ExpiresAt))
}

// LockWithdrawal returns a withdrawal whose operator is in scope (nil: any), holding its row
// until the transaction ends: status changes of one withdrawal happen one at a time.
func (q *Queries) LockWithdrawal(ctx context.Context, scope []string, id string) (Withdrawal, error) {
	return scanWithdrawal(q.db.QueryRow(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals
		WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2)) FOR UPDATE`, id, scope))
}

// WithdrawalTransition is one audit row.
type WithdrawalTransition struct {
	From, To, Action, Actor, Note string
	At                            time.Time
}

// SetWithdrawalStatus moves a locked withdrawal to its new status and records who did it.
// settlementTxHash is set with COMPLETED.
func (q *Queries) SetWithdrawalStatus(ctx context.Context, id string, t WithdrawalTransition, settlementTxHash string) error {
	_, err := q.db.Exec(ctx, `
		WITH w AS (
			UPDATE withdrawals SET status = $3, updated_at = now(),
				settlement_tx_hash = coalesce(NULLIF($7, ''), settlement_tx_hash)
			WHERE id = $1 AND status = $2
			RETURNING id
		)
		INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
		SELECT id, $2, $3, $4, $5, $6 FROM w`, id, t.From, t.To, t.Action, t.Actor, t.Note, settlementTxHash)
	return err
}

// RecordWithdrawalAction records an action that did not change the status (an admin's
// COMPLETED that queued the payout, an approval), for the audit trail.
func (q *Queries) RecordWithdrawalAction(ctx context.Context, id string, t WithdrawalTransition) error {
	_, err := q.db.Exec(ctx, `INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, t.From, t.To, t.Action, t.Actor, t.Note)
	return err
}

// WithdrawalTransitions is a withdrawal's audit trail, oldest first.
func (q *Queries) WithdrawalTransitions(ctx context.Context, id string) ([]WithdrawalTransition, error) {
	rows, err := q.db.Query(ctx, `SELECT from_status, to_status, action, actor, note, at FROM withdrawal_transitions
		WHERE withdrawal_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (WithdrawalTransition, error) {
		var t WithdrawalTransition
		err := r.Scan(&t.From, &t.To, &t.Action, &t.Actor, &t.Note, &t.At)
		return t, err
	})
}
