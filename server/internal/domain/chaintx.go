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
	// ChainTxCancelled: the service team's cancel (a 0-value self-send at the same nonce) was
	// mined instead of the transaction: it never pays.
	ChainTxCancelled ChainTxState = "cancelled"
	// ChainTxFailed: marked failed by the service team once it could never be mined (reverted,
	// or its nonce used by another transaction).
	ChainTxFailed ChainTxState = "failed"
)

// ChainTxStates lists every state. It is a new slice each call: a caller may not change the set.
func ChainTxStates() []ChainTxState {
	return []ChainTxState{ChainTxPending, ChainTxMined, ChainTxReverted, ChainTxCancelled, ChainTxFailed}
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
	// RequestedAction is a service-team request the worker has not carried out yet: TxResend
	// or TxCancel ("" for none).
	RequestedAction TxAction
	// Authorizations is the EIP-7702 authorization list every attempt but a cancel carries
	// (chaintx.Request.Authorizations), in go-ethereum's JSON form; nil for none.
	Authorizations []byte
}

// TxAction is a service-team action on a transaction (chain_tx_actions.action).
type TxAction string

// The actions.
const (
	// TxResend: replace the newest attempt at once with higher fees (same nonce and payload).
	TxResend TxAction = "resend"
	// TxCancel: replace it with a 0-value self-send at the same nonce and higher fees.
	TxCancel TxAction = "cancel"
	// TxFail: mark a transaction that can never be mined failed (a payout's funds are released).
	TxFail TxAction = "fail"
)

// TxActions lists every action. It is a new slice each call: a caller may not change the set.
func TxActions() []TxAction { return []TxAction{TxResend, TxCancel, TxFail} }

// TxActionRecord is one entry of a transaction's ops audit trail.
type TxActionRecord struct {
	Action    TxAction
	Actor     Actor
	Reason    string
	CreatedAt time.Time
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
	// Cancel: a 0-value self-send at the transaction's nonce (the service team's cancel).
	Cancel bool
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
	// Batched: the sweep goes in an EIP-7702 batch (a token-deposit address on an eip7702
	// chain) instead of transactions of the address's own; BatchID is the batch it is in (0
	// while it waits for one); Skips counts the batches that skipped it.
	Batched bool
	BatchID int64
	Skips   int32
}

// SweepBatchStatus is where an EIP-7702 batch sweep is (sweep_batches.status); the deposit
// package's batch table says which changes are allowed.
type SweepBatchStatus string

// The batch statuses.
const (
	// BatchSending: the gas tank's batch transaction is stored and on its way.
	BatchSending SweepBatchStatus = "SENDING"
	// BatchDone: its receipt was read; each of its sweeps is swept or waits for the next batch.
	BatchDone SweepBatchStatus = "DONE"
)

// SweepBatchStatuses lists every batch status. It is a new slice each call.
func SweepBatchStatuses() []SweepBatchStatus { return []SweepBatchStatus{BatchSending, BatchDone} }

// SweepBatch is one gas-tank transaction that sweeps several deposit addresses.
type SweepBatch struct {
	ID        int64
	ChainID   int64
	Status    SweepBatchStatus
	CreatedAt time.Time
	DoneAt    *time.Time // when its outcome was recorded (nil while SENDING)
}
