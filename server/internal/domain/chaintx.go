package domain

import (
	"math/big"
	"time"
)

// ChainTxState is where a transaction Coffer signs is (chain_txs.state). The chaintx
// package's transition table (chaintx/transitions.go) says which changes are allowed.
type ChainTxState string

// The chain transaction states.
const (
	// ChainTxPending: stored (and maybe broadcast), not mined yet, or mined in a block a reorg
	// may still take away.
	ChainTxPending ChainTxState = "pending"
	// ChainTxMined: one of its attempts is mined and succeeded at the chain's depth.
	ChainTxMined ChainTxState = "mined"
	// ChainTxReverted: one of its attempts is mined at the depth and reverted.
	ChainTxReverted ChainTxState = "reverted"
)

// ChainTxStates lists every state. It is a new slice each call: a caller may not change the set.
func ChainTxStates() []ChainTxState {
	return []ChainTxState{ChainTxPending, ChainTxMined, ChainTxReverted}
}

// ChainTx is one transaction Coffer signs: a nonce of one of its addresses, with every
// attempt (replacement) made for it.
type ChainTx struct {
	ID       int64
	ChainID  int64
	From     string
	Nonce    uint64
	To       string
	Value    *big.Int
	Data     []byte
	GasLimit uint64
	Purpose  string
	Ref      string
	// PaysOwnGas: the gas is paid out of Value (a native sweep); a replacement with higher fees
	// lowers the value by as much, so the transaction never costs more than Value + GasLimit ×
	// the first attempt's fee cap. Value is the value of the mined attempt once there is one.
	PaysOwnGas        bool
	State             ChainTxState
	MinedHash         string
	MinedBlock        uint64
	GasUsed           uint64
	EffectiveGasPrice *big.Int
	CreatedAt         time.Time
	MinedAt           *time.Time
	Attempts          []TxAttempt // oldest first
}

// Latest is the newest attempt.
func (t ChainTx) Latest() TxAttempt { return t.Attempts[len(t.Attempts)-1] }

// MaxCost is the most the newest attempt can take from its sender: value plus gas at its fee cap.
func (t ChainTx) MaxCost() *big.Int {
	a := t.Latest()
	cost := new(big.Int).Mul(new(big.Int).SetUint64(t.GasLimit), a.FeeCap)
	return cost.Add(cost, a.Value)
}

// TxAttempt is one signed version of a ChainTx (the first, or a fee replacement).
type TxAttempt struct {
	ID          int64
	Hash        string
	Raw         []byte
	Value       *big.Int
	TipCap      *big.Int
	FeeCap      *big.Int
	CreatedAt   time.Time
	BroadcastAt *time.Time
}

// SweepStatus is where a sweep of a deposit address to the bankroll is (sweeps.status). The
// deposit package's sweep table (deposit/transitions.go) says which changes are allowed.
type SweepStatus string

// The sweep statuses.
const (
	// SweepFunding: the gas tank's top-up of the address is on its way (token sweeps).
	SweepFunding SweepStatus = "FUNDING"
	// SweepSending: the transfer to the bankroll is on its way.
	SweepSending SweepStatus = "SENDING"
	// SweepDone: the transfer is mined at the depth.
	SweepDone SweepStatus = "DONE"
)

// SweepStatuses lists every sweep status. It is a new slice each call: a caller may not change the set.
func SweepStatuses() []SweepStatus {
	return []SweepStatus{SweepFunding, SweepSending, SweepDone}
}

// Sweep moves what one deposit address holds of a currency to the bankroll.
type Sweep struct {
	ID        int64
	ChainID   int64
	Address   string
	Status    SweepStatus
	CreatedAt time.Time
	MinedAt   *time.Time
}
