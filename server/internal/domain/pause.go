package domain

import (
	"strconv"
	"time"
)

// PauseScope is what a payout pause covers (payout_pauses.scope).
type PauseScope string

// The scopes.
const (
	// PauseGlobal covers every payout.
	PauseGlobal PauseScope = "global"
	// PauseChain covers the payouts on one chain.
	PauseChain PauseScope = "chain"
	// PauseOperator covers one operator's payouts (not its sub-operators').
	PauseOperator PauseScope = "operator"
)

// PauseScopes lists every scope. It is a new slice each call: a caller may not change the set.
func PauseScopes() []PauseScope { return []PauseScope{PauseGlobal, PauseChain, PauseOperator} }

// PayoutPause is one pause of payouts and, once lifted, its resume: the audit trail of both.
type PayoutPause struct {
	ID         int64
	Scope      PauseScope
	ChainID    int64  // PauseChain only
	OperatorID string // PauseOperator only
	Reason     string
	PausedBy   Actor
	PausedAt   time.Time
	// Set once resumed.
	ResumedBy    Actor
	ResumeReason string
	ResumedAt    *time.Time
}

// Active reports whether the pause still holds payouts.
func (p PayoutPause) Active() bool { return p.ResumedAt == nil }

// Describe names the pause for an error or a log line: what it covers, who paused and why.
func (p PayoutPause) Describe() string {
	what := "all payouts are paused"
	switch p.Scope {
	case PauseChain:
		what = "payouts on chain " + strconv.FormatInt(p.ChainID, 10) + " are paused"
	case PauseOperator:
		what = "payouts of operator " + p.OperatorID + " are paused"
	case PauseGlobal:
	}
	return what + " (by " + string(p.PausedBy) + ": " + p.Reason + ")"
}
