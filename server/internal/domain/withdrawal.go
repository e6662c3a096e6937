package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// WithdrawalStatus is a withdrawal's status (the spec's names). The withdrawal package's
// transition table (withdrawal/transitions.go) says which changes are allowed.
type WithdrawalStatus string

// The spec's seven statuses.
const (
	WithdrawalPending          WithdrawalStatus = "PENDING"
	WithdrawalProcessing       WithdrawalStatus = "PROCESSING"
	WithdrawalAwaitingApproval WithdrawalStatus = "AWAITING_APPROVAL"
	WithdrawalCompleted        WithdrawalStatus = "COMPLETED"
	WithdrawalRejected         WithdrawalStatus = "REJECTED"
	WithdrawalCancelled        WithdrawalStatus = "CANCELLED"
	WithdrawalExpired          WithdrawalStatus = "EXPIRED"
)

// WithdrawalStatuses lists every withdrawal status. It is a new slice each call: a caller may not change the set.
func WithdrawalStatuses() []WithdrawalStatus {
	return []WithdrawalStatus{WithdrawalPending, WithdrawalProcessing, WithdrawalAwaitingApproval,
		WithdrawalCompleted, WithdrawalRejected, WithdrawalCancelled, WithdrawalExpired}
}

// Final reports whether nothing can change the status any more.
func (s WithdrawalStatus) Final() bool {
	switch s {
	case WithdrawalCompleted, WithdrawalRejected, WithdrawalCancelled, WithdrawalExpired:
		return true
	case WithdrawalPending, WithdrawalProcessing, WithdrawalAwaitingApproval:
		return false
	}
	return false
}

// Withdrawal is one withdrawal request of a WITHDRAW session.
type Withdrawal struct {
	ID, OperatorID, SessionID, ExternalUserID string
	Type                                      string
	ApprovalMode                              ApprovalMode
	Status                                    WithdrawalStatus
	ChainID                                   int64
	Currency, ContractAddress                 string // ContractAddress empty for the native currency
	Decimals                                  int32
	Address, FiatCurrency                     string
	FiatAmount                                decimal.Decimal
	CryptoAmount                              decimal.Decimal // smallest unit
	AmountInUSD                               decimal.NullDecimal
	// CapAmount is the fiat amount in the operator's platform currency (what caps count), in
	// CapCurrency: that currency when the withdrawal was submitted ("" before it was recorded).
	CapAmount        decimal.NullDecimal
	CapCurrency      string
	SettlementTxHash string
	// PayoutQueuedAt is set once the payout is queued: the withdrawal is then paying.
	PayoutQueuedAt                  *time.Time
	HeldReason, AdminNote           string
	OfframpProvider, OfframpRef     string
	CreatedAt, UpdatedAt, ExpiresAt time.Time
	CompletedAt                     *time.Time
	SessionRef                      string // the owning session's handle (read only)
	// OperatorReference is the owning session's operatorReference, "" for none (read only).
	OperatorReference string
}

// Paying reports whether the withdrawal's payout is queued and not confirmed yet.
func (w Withdrawal) Paying() bool {
	return w.PayoutQueuedAt != nil && w.Status != WithdrawalCompleted
}

// WithdrawalTransition is one row of a withdrawal's audit trail.
type WithdrawalTransition struct {
	From, To WithdrawalStatus
	Action   string
	Actor    Actor
	Note     string
	At       time.Time
}

// WithdrawalFilter selects withdrawals, newest first.
type WithdrawalFilter struct {
	OperatorIDs    []string // nil: every operator
	Statuses       []WithdrawalStatus
	ExternalUserID string
	ChainID        int64 // 0: every chain
	CreatedAfter   *time.Time
	CreatedBefore  *time.Time
	// Paging: rows strictly older than (BeforeTime, BeforeID), newest first.
	BeforeTime *time.Time
	BeforeID   string
	Limit      int
}
