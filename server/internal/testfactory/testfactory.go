// Package testfactory inserts valid records for tests, straight through the store, with
// defaults for every field a test does not care about — as River's rivershared/testfactory
// does. A test names only what it asserts on; everything else is a valid, unique default, so a
// new NOT NULL column is added here once rather than in every test that builds a row.
package testfactory

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// seq is process-wide on purpose: every test in the binary shares one database, so names
// must differ across all of them, not per test.
var seq atomic.Int64 //nolint:gochecknoglobals // see above: uniqueness is per process

// unique returns a short string no other call in this process returns.
func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

// OperatorOpts are the operator fields a test sets; the zero value is an active SYNC operator.
type OperatorOpts struct {
	Name         string
	ApprovalMode domain.ApprovalMode
	ParentID     string
	WebhookURL   string
}

// Operator inserts an operator.
func Operator(ctx context.Context, tb testing.TB, db store.DBTX, opts *OperatorOpts) domain.Operator {
	tb.Helper()
	if opts == nil {
		opts = &OperatorOpts{}
	}
	s := domain.OperatorSettings{Name: new(or(opts.Name, unique("operator"))),
		WebhookURL: new(or(opts.WebhookURL, "https://operator.example/webhook"))}
	if opts.ApprovalMode != "" {
		s.ApprovalMode = &opts.ApprovalMode
	}
	if opts.ParentID != "" {
		s.ParentID = &opts.ParentID
	}
	op, err := store.New(db).InsertOperator(ctx, uuid.NewString(), s)
	if err != nil {
		tb.Fatalf("testfactory: operator: %v", err)
	}
	return op
}

// SessionOpts are the session fields a test sets; the zero value is an open 10 USD deposit
// session of a new user.
type SessionOpts struct {
	Kind              domain.SessionKind
	SessionRef        string
	ExternalUserID    string
	Amount            string
	OperatorReference string
	TTL               time.Duration
}

// Session inserts a session of the operator.
func Session(ctx context.Context, tb testing.TB, db store.DBTX, operatorID string, opts *SessionOpts) domain.Session {
	tb.Helper()
	if opts == nil {
		opts = &SessionOpts{}
	}
	s := domain.Session{
		ID: uuid.NewString(), OperatorID: operatorID, Kind: or(opts.Kind, domain.SessionDeposit),
		SessionRef: or(opts.SessionRef, unique("sr_test")), ExternalUserID: or(opts.ExternalUserID, unique("user")), Lang: "en",
		FiatCurrency: "USD", UserBalance: decimal.NewFromInt(100), Amount: decimal.RequireFromString(or(opts.Amount, "10.00")),
		OperatorReference: opts.OperatorReference,
	}
	sess, err := store.New(db).InsertSession(ctx, s, or(opts.TTL, 30*time.Minute))
	if err != nil {
		tb.Fatalf("testfactory: session: %v", err)
	}
	return sess
}

// WithdrawalOpts are the withdrawal fields a test sets; the zero value is a PENDING (mode A)
// 25 USD withdrawal of 25 USDT on chain 1337. An AWAITING_APPROVAL status makes it mode B.
type WithdrawalOpts struct {
	ID      string
	Status  domain.WithdrawalStatus
	Amount  string
	Address string // the payee; a fixed test address when empty
	// Paying marks its payout queued (payout_queued_at set), with no job queued: as a crash
	// after the decision leaves it, for the periodic sweep to pay.
	Paying bool
}

// Withdrawal inserts a withdrawal in a WITHDRAW session.
func Withdrawal(ctx context.Context, tb testing.TB, db store.DBTX, sess domain.Session, opts *WithdrawalOpts) domain.Withdrawal {
	tb.Helper()
	if opts == nil {
		opts = &WithdrawalOpts{}
	}
	status := or(opts.Status, domain.WithdrawalPending)
	mode := domain.ApprovalSync
	if status == domain.WithdrawalAwaitingApproval {
		mode = domain.ApprovalExternal
	}
	amount := decimal.RequireFromString(or(opts.Amount, "25.00"))
	w, err := store.New(db).InsertWithdrawal(ctx, domain.Withdrawal{
		ID: or(opts.ID, uuid.NewString()), OperatorID: sess.OperatorID, SessionID: sess.ID, ExternalUserID: sess.ExternalUserID,
		Type: "DIRECT_TRANSFER", ApprovalMode: mode, Status: status, ChainID: 1337, Currency: "USDT",
		ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6,
		Address: or(opts.Address, "0x52908400098527886E0F7030069857D2E4169EE7"), FiatCurrency: "USD", FiatAmount: amount,
		CryptoAmount: amount.Shift(6), ExpiresAt: time.Now().Add(24 * time.Hour),
		AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount),
	})
	if err != nil {
		tb.Fatalf("testfactory: withdrawal: %v", err)
	}
	if opts.Paying {
		if err := db.QueryRow(ctx, `UPDATE withdrawals SET payout_queued_at = now() WHERE id = $1 RETURNING payout_queued_at`, w.ID).
			Scan(&w.PayoutQueuedAt); err != nil {
			tb.Fatalf("testfactory: withdrawal paying: %v", err)
		}
	}
	return w
}

// or is v, or def when v is the zero value.
func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Column runs a query of one column and returns its values in order; an error fails the test.
func Column[T any](ctx context.Context, tb testing.TB, db store.DBTX, query string, args ...any) []T {
	tb.Helper()
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		tb.Fatal(err)
	}
	values, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		tb.Fatal(err)
	}
	return values
}
