package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
)

const withdrawalColumns = `id::text, operator_id::text, session_id::text, external_user_id, type, approval_mode, status,
	chain_id, currency, coalesce(contract_address, ''), decimals, address, fiat_currency, fiat_amount, crypto_amount,
	amount_in_usd, cap_amount, coalesce(settlement_tx_hash, ''), payout_queued_at, coalesce(held_reason, ''), admin_note,
	coalesce(offramp_provider, ''), coalesce(offramp_ref, ''), created_at, updated_at, expires_at, completed_at,
	(SELECT session_ref FROM sessions WHERE sessions.id = withdrawals.session_id),
	(SELECT coalesce(operator_reference, '') FROM sessions WHERE sessions.id = withdrawals.session_id)`

func scanWithdrawal(row pgx.Row) (domain.Withdrawal, error) {
	var w domain.Withdrawal
	err := row.Scan(&w.ID, &w.OperatorID, &w.SessionID, &w.ExternalUserID, &w.Type, &w.ApprovalMode, &w.Status,
		&w.ChainID, &w.Currency, &w.ContractAddress, &w.Decimals, &w.Address, &w.FiatCurrency, &w.FiatAmount,
		&w.CryptoAmount, &w.AmountInUSD, &w.CapAmount, &w.SettlementTxHash, &w.PayoutQueuedAt, &w.HeldReason, &w.AdminNote,
		&w.OfframpProvider, &w.OfframpRef, &w.CreatedAt, &w.UpdatedAt, &w.ExpiresAt, &w.CompletedAt, &w.SessionRef,
		&w.OperatorReference)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, ErrNotFound
	}
	return w, err
}

// InsertWithdrawal records an accepted withdrawal in its first status.
func (q *Queries) InsertWithdrawal(ctx context.Context, w domain.Withdrawal) (domain.Withdrawal, error) {
	return scanWithdrawal(q.db.QueryRow(ctx, `
		INSERT INTO withdrawals (id, operator_id, session_id, external_user_id, type, approval_mode, status, chain_id,
			currency, contract_address, decimals, address, fiat_currency, fiat_amount, crypto_amount, expires_at,
			amount_in_usd, cap_amount, offramp_provider, offramp_ref)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''), $11, $12, $13, $14, $15, $16, $17, $18,
			NULLIF($19, ''), NULLIF($20, ''))
		RETURNING `+withdrawalColumns,
		w.ID, w.OperatorID, w.SessionID, w.ExternalUserID, w.Type, w.ApprovalMode, w.Status, w.ChainID,
		w.Currency, w.ContractAddress, w.Decimals, w.Address, w.FiatCurrency, w.FiatAmount, w.CryptoAmount, w.ExpiresAt,
		w.AmountInUSD, w.CapAmount, w.OfframpProvider, w.OfframpRef))
}

// LockWithdrawal returns a withdrawal whose operator is in scope (nil: any), holding its row
// until the transaction ends: status changes of one withdrawal happen one at a time.
func (q *Queries) LockWithdrawal(ctx context.Context, scope []string, id string) (domain.Withdrawal, error) {
	return scanWithdrawal(q.db.QueryRow(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals
		WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2)) FOR UPDATE`, id, scope))
}

// WithdrawalChange is what a transition writes besides the status.
type WithdrawalChange struct {
	// SettlementTxHash is set with COMPLETED.
	SettlementTxHash string
	// QueuePayout marks the withdrawal paying.
	QueuePayout bool
	// StopPayout marks it not paying any more, held with HeldReason.
	StopPayout bool
	HeldReason string
	// AdminNote replaces the last admin note when set.
	AdminNote string
}

// SetWithdrawalStatus moves a locked withdrawal to its status t.To (which may be its current
// one, when the action only queued the payout) and records who did it. The update only
// applies while the withdrawal is still in t.From.
func (q *Queries) SetWithdrawalStatus(ctx context.Context, id string, t domain.WithdrawalTransition, c WithdrawalChange) error {
	_, err := q.db.Exec(ctx, `
		WITH w AS (
			UPDATE withdrawals SET status = $3, updated_at = now(),
				settlement_tx_hash = coalesce(NULLIF($7, ''), settlement_tx_hash),
				completed_at = CASE WHEN $3 = 'COMPLETED' THEN now() ELSE completed_at END,
				payout_queued_at = CASE WHEN $8 THEN now() WHEN $10 THEN NULL ELSE payout_queued_at END,
				held_reason = CASE WHEN $8 THEN NULL WHEN $10 THEN NULLIF($11, '') ELSE held_reason END,
				admin_note = coalesce(NULLIF($9, ''), admin_note)
			WHERE id = $1 AND status = $2
			RETURNING id
		)
		INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
		SELECT id, $2, $3, $4, $5, $6 FROM w`, id, t.From, t.To, t.Action, t.Actor, t.Note, c.SettlementTxHash,
		c.QueuePayout, c.AdminNote, c.StopPayout, c.HeldReason)
	return err
}

// HoldWithdrawal records why an APPROVE could not settle (the status does not change).
func (q *Queries) HoldWithdrawal(ctx context.Context, id string, t domain.WithdrawalTransition, reason string) error {
	_, err := q.db.Exec(ctx, `
		WITH w AS (UPDATE withdrawals SET held_reason = $7, updated_at = now() WHERE id = $1 RETURNING id)
		INSERT INTO withdrawal_transitions (withdrawal_id, from_status, to_status, action, actor, note)
		SELECT id, $2, $3, $4, $5, $6 FROM w`, id, t.From, t.To, t.Action, t.Actor, t.Note, reason)
	return err
}

// GetWithdrawal returns a withdrawal whose operator is in scope (nil: any).
func (q *Queries) GetWithdrawal(ctx context.Context, scope []string, id string) (domain.Withdrawal, error) {
	return scanWithdrawal(q.db.QueryRow(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals
		WHERE id = $1 AND ($2::uuid[] IS NULL OR operator_id = ANY($2))`, id, scope))
}

// LockOperatorCaps holds the operator's row until the transaction ends: approvals of one
// operator are checked against its caps one at a time, so concurrent ones cannot together
// pass a cap. NO KEY UPDATE, not UPDATE: it must not block the key-share locks that inserts
// referencing the operator take (fund entries, webhook events), or an approval holding this
// lock and waiting for the operator's funds row deadlocks with a payout completion holding
// that row and inserting its fund entry.
func (q *Queries) LockOperatorCaps(ctx context.Context, operatorID string) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE id = $1 FOR NO KEY UPDATE`, operatorID))
}

// LockOperatorShare reads an operator and keeps its row from changing until the transaction ends.
func (q *Queries) LockOperatorShare(ctx context.Context, operatorID string) (domain.Operator, error) {
	return scanOperator(q.db.QueryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE id = $1 FOR SHARE`, operatorID))
}

// PaidSince is the cap amount of an operator's withdrawals paid or paying since a moment.
func (q *Queries) PaidSince(ctx context.Context, operatorID string, since time.Time) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := q.db.QueryRow(ctx, `SELECT coalesce(sum(cap_amount), 0) FROM withdrawals
		WHERE operator_id = $1 AND payout_queued_at IS NOT NULL AND payout_queued_at > $2`, operatorID, since).Scan(&sum)
	return sum, err
}

// LockPayoutLiquidity serialises the liquidity checks of one chain's hot wallet until the
// transaction ends.
func (q *Queries) LockPayoutLiquidity(ctx context.Context, chainID int64) error {
	_, err := q.db.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('coffer payout liquidity'), $1::int)`, int32(chainID))
	return err
}

// UnminedPayouts is the amount (smallest unit) of a chain's payouts in one currency that are
// queued but whose transaction is not mined yet: the hot wallet still holds it, but it is spoken
// for.
func (q *Queries) UnminedPayouts(ctx context.Context, chainID int64, currency, purpose string) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := q.db.QueryRow(ctx, `SELECT coalesce(sum(w.crypto_amount), 0) FROM withdrawals w
		WHERE w.chain_id = $1 AND w.currency = $2 AND w.payout_queued_at IS NOT NULL AND w.status <> 'COMPLETED'
		  AND NOT EXISTS (SELECT 1 FROM chain_txs t WHERE t.purpose = $3 AND t.ref = 'withdrawal:' || w.id::text
		                  AND t.state <> 'pending')`, chainID, currency, purpose).Scan(&sum)
	return sum, err
}

// OpenWithdrawalsOfSession lists a session's withdrawals nobody has acted on yet.
func (q *Queries) OpenWithdrawalsOfSession(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := q.db.Query(ctx, `SELECT id::text FROM withdrawals WHERE session_id = $1
		AND status IN ('PENDING', 'AWAITING_APPROVAL') AND payout_queued_at IS NULL ORDER BY created_at`, sessionID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DueWithdrawals lists unactioned withdrawals past their deadline, and those of cancelled
// sessions.
func (q *Queries) DueWithdrawals(ctx context.Context, now time.Time, limit int) (expired, cancelled []string, err error) {
	rows, err := q.db.Query(ctx, `SELECT w.id::text, w.expires_at <= $1 FROM withdrawals w JOIN sessions s ON s.id = w.session_id
		WHERE w.status IN ('PENDING', 'AWAITING_APPROVAL') AND w.payout_queued_at IS NULL
		  AND (w.expires_at <= $1 OR s.cancelled_at IS NOT NULL)
		ORDER BY w.expires_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var due bool
		if err := rows.Scan(&id, &due); err != nil {
			return nil, nil, err
		}
		if due {
			expired = append(expired, id)
		} else {
			cancelled = append(cancelled, id)
		}
	}
	return expired, cancelled, rows.Err()
}

// PayingWithdrawals lists the withdrawals whose payout is queued and not yet confirmed.
func (q *Queries) PayingWithdrawals(ctx context.Context) ([]string, error) {
	rows, err := q.db.Query(ctx, `SELECT id::text FROM withdrawals WHERE payout_queued_at IS NOT NULL AND status <> 'COMPLETED'
		ORDER BY payout_queued_at`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ListWithdrawals lists withdrawals, newest first.
func (q *Queries) ListWithdrawals(ctx context.Context, f domain.WithdrawalFilter) ([]domain.Withdrawal, error) {
	rows, err := q.db.Query(ctx, `SELECT `+withdrawalColumns+` FROM withdrawals
		WHERE ($1::uuid[] IS NULL OR operator_id = ANY($1::uuid[]))
		  AND (coalesce(cardinality($2::text[]), 0) = 0 OR status = ANY($2::text[]))
		  AND ($3 = '' OR external_user_id = $3)
		  AND ($4::timestamptz IS NULL OR created_at >= $4)
		  AND ($5::timestamptz IS NULL OR created_at < $5)
		  AND ($6::timestamptz IS NULL OR (created_at, id) < ($6, $7::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $8`,
		f.OperatorIDs, f.Statuses, f.ExternalUserID, f.CreatedAfter, f.CreatedBefore, f.BeforeTime, nullUUID(f.BeforeID), f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Withdrawal, error) { return scanWithdrawal(r) })
}

func nullUUID(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// LockSession holds a session's row until the transaction ends: submissions of one session
// happen one at a time (the newest supersedes the open earlier ones).
func (q *Queries) LockSession(ctx context.Context, sid string) error {
	_, err := q.db.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, sid)
	return err
}

// WithdrawalTransitions is a withdrawal's audit trail, oldest first.
func (q *Queries) WithdrawalTransitions(ctx context.Context, id string) ([]domain.WithdrawalTransition, error) {
	rows, err := q.db.Query(ctx, `SELECT from_status, to_status, action, actor, note, at FROM withdrawal_transitions
		WHERE withdrawal_id = $1 ORDER BY id`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.WithdrawalTransition, error) {
		var t domain.WithdrawalTransition
		err := r.Scan(&t.From, &t.To, &t.Action, &t.Actor, &t.Note, &t.At)
		return t, err
	})
}
