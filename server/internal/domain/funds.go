package domain

import (
	"math/big"
	"time"
)

// FundKind is what moved an operator's funds (fund_entries.kind).
type FundKind string

// The fund entry kinds (migrations 0007 and 0011).
const (
	FundDeposit    FundKind = "DEPOSIT"
	FundTreasury   FundKind = "TREASURY"
	FundReserve    FundKind = "RESERVE"
	FundSettle     FundKind = "SETTLE"
	FundRelease    FundKind = "RELEASE"
	FundAdjustment FundKind = "ADJUSTMENT"
	// FundReorg takes a credited deposit back out when its block left the chain.
	FundReorg FundKind = "REORG"
	// FundReinstate gives a reorged deposit's credit back.
	FundReinstate FundKind = "REINSTATE"
)

// Funds is what an operator holds in one asset of one chain, in the asset's smallest unit.
type Funds struct {
	OperatorID string
	ChainID    int64
	Currency   string
	Available  *big.Int
	Reserved   *big.Int
	UpdatedAt  time.Time
}

// FundEntry is one movement of an operator's funds.
type FundEntry struct {
	ID             int64
	OperatorID     string
	ChainID        int64
	Currency       string
	Kind           FundKind
	AvailableDelta *big.Int
	ReservedDelta  *big.Int
	Ref            string
	Actor          Actor
	Note           string
	CreatedAt      time.Time
	// Overdraw lets the entry take available below zero (a reorg reversal of funds already
	// used); every other debit is refused when it would.
	Overdraw bool
}
