package batchsweep

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/contracts"
)

// Result is what a mined batch did to one of its accounts.
type Result struct {
	Address common.Address
	// Swept: the account's sweep ran to the end; Moved holds what it paid the bankroll and
	// Fees what it paid the fee address, per token (the zero address for the native currency).
	Swept bool
	Moved map[common.Address]*big.Int
	Fees  map[common.Address]*big.Int
	// Delegated, for a skipped account: it was delegated to the Sweeper but its sweep reverted
	// (e.g. a balance short of an exact amount); false: it was not delegated (cleared or
	// replaced), and the next Build re-authorizes it.
	Delegated bool
}

// transferTopic is the topic of ERC20 Transfer(address,address,uint256).
func transferTopic() common.Hash {
	return crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
}

// Results reads a mined batch's receipt: which accounts were swept, what each paid bankroll
// and feeAddress, which were skipped. Crediting must use these, never the transaction's
// success alone: a batch succeeds even when it skips accounts. Only logs of the Sweeper, of
// the plan's tokens and of its accounts count. An account swept with an exact amount that does
// not show those transfers (amount less fee to the bankroll, fee to the fee address) is an
// error (the chain did not do what the plan says).
func Results(p Plan, bankroll, feeAddress common.Address, r *types.Receipt) ([]Result, error) {
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, errors.New("batchsweep: the batch reverted: nothing was swept")
	}
	sw := contracts.NewSweeper()
	events := sw.GetABI().Events
	transferID := transferTopic()
	skippedID, nativeID := events[contracts.SweeperSkippedEventName].ID, events[contracts.SweeperNativeSweptEventName].ID
	byAddr := make(map[common.Address]*Result, len(p.Accounts))
	tokens := map[common.Address]bool{}
	out := make([]Result, len(p.Accounts))
	for i, a := range p.Accounts {
		out[i] = Result{Address: a.Address, Swept: true, Moved: map[common.Address]*big.Int{}, Fees: map[common.Address]*big.Int{}}
		byAddr[a.Address] = &out[i]
		for _, as := range a.Assets {
			tokens[as.Token] = true
		}
	}
	add := func(m map[common.Address]*big.Int, token common.Address, v *big.Int) {
		if m[token] == nil {
			m[token] = new(big.Int)
		}
		m[token].Add(m[token], v)
	}
	for _, l := range r.Logs {
		if len(l.Topics) == 0 {
			continue
		}
		switch {
		case l.Address == p.Sweeper && l.Topics[0] == skippedID:
			ev, err := sw.UnpackSkippedEvent(l)
			if err != nil {
				return nil, fmt.Errorf("batchsweep: Skipped event: %w", err)
			}
			if res := byAddr[ev.Account]; res != nil {
				res.Swept, res.Delegated = false, ev.Delegated
			}
		case l.Topics[0] == nativeID && byAddr[l.Address] != nil:
			ev, err := sw.UnpackNativeSweptEvent(l)
			if err != nil {
				return nil, fmt.Errorf("batchsweep: NativeSwept event: %w", err)
			}
			if ev.Amount.Sign() > 0 {
				add(byAddr[l.Address].Moved, common.Address{}, ev.Amount)
			}
			if ev.Fee.Sign() > 0 {
				add(byAddr[l.Address].Fees, common.Address{}, ev.Fee)
			}
		case l.Topics[0] == transferID && tokens[l.Address] && len(l.Topics) == 3 && len(l.Data) == 32:
			from, to := common.BytesToAddress(l.Topics[1].Bytes()), common.BytesToAddress(l.Topics[2].Bytes())
			res := byAddr[from]
			switch {
			case res == nil:
			case to == bankroll:
				add(res.Moved, l.Address, new(big.Int).SetBytes(l.Data))
			case to == feeAddress && feeAddress != (common.Address{}):
				add(res.Fees, l.Address, new(big.Int).SetBytes(l.Data))
			}
		}
	}
	if err := checkPlanned(p, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkPlanned checks each account's results against the plan: a skipped account moved
// nothing, and a swept one moved each exact amount, split between the bankroll and the fee
// address (the split is the plan's when it was signed; a plan rebuilt later may compute
// another fee, so only the total is checked).
func checkPlanned(p Plan, out []Result) error {
	for i, a := range p.Accounts {
		res := &out[i]
		if !res.Swept {
			if len(res.Moved) > 0 || len(res.Fees) > 0 {
				return fmt.Errorf("batchsweep: %s was skipped but paid the bankroll or the fee address", a.Address.Hex())
			}
			continue
		}
		for _, as := range a.Assets {
			if as.Amount == nil {
				continue
			}
			moved := new(big.Int).Add(orZero(res.Moved[as.Token]), orZero(res.Fees[as.Token]))
			if moved.Cmp(as.Amount) != 0 {
				return fmt.Errorf("batchsweep: %s swept %v (fee %v) of %s, the plan says %v in all", a.Address.Hex(),
					res.Moved[as.Token], res.Fees[as.Token], as.Token.Hex(), as.Amount)
			}
		}
	}
	return nil
}

// orZero is a transferred total, 0 for nothing.
func orZero(v *big.Int) *big.Int {
	if v == nil {
		return new(big.Int)
	}
	return v
}
