package domain

import (
	"math/big"
	"time"
)

// ReorgResolution is how a deep reorg of a deposit ended (deposit_reorgs.resolution); ""
// while it waits. The deposit package's reorg table (deposit/transitions.go) says which
// resolutions are allowed.
type ReorgResolution string

// The resolutions (migration 0011).
const (
	ReorgOpen       ReorgResolution = ""
	ReorgReinstate  ReorgResolution = "REINSTATE"
	ReorgWriteOff   ReorgResolution = "WRITE_OFF"
	ReorgReincluded ReorgResolution = "REINCLUDED"
)

// ReorgResolutions lists every resolution, ReorgOpen first. It is a new slice each call: a caller may not change the set.
func ReorgResolutions() []ReorgResolution {
	return []ReorgResolution{ReorgOpen, ReorgReinstate, ReorgWriteOff, ReorgReincluded}
}

// ReorgDetected is the audit action that opens a reorg (deposit_reorg_actions.action); the
// others are the resolutions' names.
const ReorgDetected = "DETECTED"

// Reorg is one time a deposit's block left the chain after the deposit's confirmation depth.
type Reorg struct {
	ID          int64
	DepositID   int64
	ChainID     int64
	ForkBlock   uint64
	BlockNumber uint64
	BlockHash   string
	// PriorStatus is what the deposit was: SWEEPING, BELOW_MINIMUM or CREDITED.
	PriorStatus DepositStatus
	// Reversed is what was taken out of the operator's available funds (a credited deposit's
	// net amount; 0 otherwise).
	Reversed   *big.Int
	DetectedAt time.Time
	// ReincludedBlock is the block that mined the same transfer again (0: none yet).
	ReincludedBlock uint64
	ReincludedHash  string
	// Resolution is ReorgOpen while the reorg waits for an engineer (or for its re-inclusion
	// to confirm).
	Resolution ReorgResolution
	ResolvedBy Actor
	Note       string
	ResolvedAt *time.Time
	// OperatorID, from the deposit.
	OperatorID string
}

// ReorgAction is one entry of a reorg's audit trail.
type ReorgAction struct {
	ID        int64
	ReorgID   int64
	DepositID int64
	Action    string
	Actor     Actor
	Note      string
	CreatedAt time.Time
}

// ReorgFilter selects reorgs, newest first.
type ReorgFilter struct {
	OperatorIDs     []string // nil: every operator
	IncludeResolved bool
	BeforeID        int64 // paging: ids below this (0: from the newest)
	Limit           int
}
