package domain

import (
	"math/big"
	"time"

	"github.com/shopspring/decimal"
)

// DepositStatus is where a detected deposit is in its life (deposits.status). The deposit
// package's transition table (deposit/transitions.go) says which changes are allowed.
type DepositStatus string

// The deposit statuses.
const (
	// DepositConfirming: seen in a block, waiting for the confirmation depth.
	DepositConfirming DepositStatus = "CONFIRMING"
	// DepositSweeping: confirmed; its sweep to the bankroll is on its way.
	DepositSweeping DepositStatus = "SWEEPING"
	// DepositBelowMinimum: confirmed, but worth less than sweeping it costs; it waits for more
	// funds at the same address.
	DepositBelowMinimum DepositStatus = "BELOW_MINIMUM"
	// DepositCredited: swept and credited to the operator (final unless a reorg reverses it).
	DepositCredited DepositStatus = "CREDITED"
	// DepositOrphaned: its block left the chain before the depth; it comes back to CONFIRMING
	// if the same transfer is mined again.
	DepositOrphaned DepositStatus = "ORPHANED"
	// DepositUnsweepable: confirmed, but it can never be swept (a token that refuses the
	// transfer); an engineer looks at it.
	DepositUnsweepable DepositStatus = "UNSWEEPABLE"
	// DepositReorged: its block left the chain after the depth, when it was already sweeping,
	// below the minimum or credited; an engineer resolves it (deposit/reorg.go).
	DepositReorged DepositStatus = "REORGED"
)

// DepositStatuses lists every deposit status. It is a new slice each call: a caller may not change the set.
func DepositStatuses() []DepositStatus {
	return []DepositStatus{DepositConfirming, DepositSweeping, DepositBelowMinimum, DepositCredited,
		DepositOrphaned, DepositUnsweepable, DepositReorged}
}

// Deposit is one incoming transfer to a deposit or treasury address.
type Deposit struct {
	ID              int64
	OperatorID      string
	ExternalUserID  string
	SessionID       string
	ChainID         int64
	TxHash          string
	LogIndex        int64
	BlockNumber     uint64
	BlockHash       string
	Address         string
	AddressIndex    uint32
	Currency        string
	ContractAddress string
	Decimals        int32
	GrossAmount     *big.Int
	FeeAmount       *big.Int
	Amount          *big.Int
	// SignedFee is the operator's deposit fee on it as fixed when the first transaction sweeping
	// it was signed (the fee the chain moves to the fee address); nil before. It is what the
	// credit charges, whatever the operator's fee is by then.
	SignedFee *big.Int
	Status    DepositStatus
	Manual    bool
	// ReplayedBy is who entered it as a missed-deposit replay ("" for a deposit the scanner
	// found, and for replays recorded before it was kept).
	ReplayedBy     Actor
	IdempotencyKey string
	USDPrice       decimal.NullDecimal
	FiatCurrency   string
	FiatPerUSD     decimal.NullDecimal
	AmountInDollar decimal.NullDecimal
	AmountInLocal  decimal.NullDecimal
	FeeInDollar    decimal.NullDecimal
	DetectedAt     time.Time
	ConfirmedAt    *time.Time
	CreditedAt     *time.Time
	// SweepID is the sweep that moves (or moved) it to the bankroll, once there is one.
	SweepID int64
	// Treasury: a payment to the operator's treasury address (funds, no DEPOSIT webhook).
	Treasury bool
	// Unpriced: credited without a rate (the rate source stayed down past the wait).
	Unpriced bool
	// SweepTxHash is the mined sweep transaction, once there is one.
	SweepTxHash string
	// SessionRef is the session's handle ("" without a session).
	SessionRef string
	// OperatorReference is the session's operator reference ("" without one).
	OperatorReference string
}

// DepositFilter selects deposits, newest first.
type DepositFilter struct {
	OperatorIDs    []string // nil: every operator
	ExternalUserID string
	Statuses       []DepositStatus
	ChainID        int64      // 0: every chain
	DetectedAfter  *time.Time // detected at or after
	DetectedBefore *time.Time // detected before
	BeforeID       int64      // paging: ids below this (0: from the newest)
	Limit          int
}
