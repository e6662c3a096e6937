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
	// Swept: the account's sweep ran to the end; Moved holds what it paid the bankroll, per
	// token (the zero address for the native currency).
	Swept bool
	Moved map[common.Address]*big.Int
	// Delegated, for a skipped account: it was delegated to the Sweeper but its sweep reverted
	// (e.g. a balance short of an exact amount); false: it was not delegated (cleared or
	// replaced), and the next Build re-authorizes it.
	Delegated bool
}

// transferTopic is the topic of ERC20 Transfer(address,address,uint256).
func transferTopic() common.Hash {
	return crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
}

// Results reads a mined batch's receipt: which accounts were swept, what each paid bankroll,
// which were skipped. Crediting must use these, never the transaction's success alone: a
// batch succeeds even when it skips accounts. Only logs of the Sweeper, of the plan's tokens
// and of its accounts count. An account swept with an exact amount that does not show that
// transfer is an error (the chain did not do what the plan says).
func Results(p Plan, bankroll common.Address, r *types.Receipt) ([]Result, error) {
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
		out[i] = Result{Address: a.Address, Swept: true, Moved: map[common.Address]*big.Int{}}
		byAddr[a.Address] = &out[i]
		for _, as := range a.Assets {
			tokens[as.Token] = true
		}
	}
	add := func(res *Result, token common.Address, v *big.Int) {
		if res.Moved[token] == nil {
			res.Moved[token] = new(big.Int)
		}
		res.Moved[token].Add(res.Moved[token], v)
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
			add(byAddr[l.Address], common.Address{}, ev.Amount)
		case l.Topics[0] == transferID && tokens[l.Address] && len(l.Topics) == 3 && len(l.Data) == 32:
			from, to := common.BytesToAddress(l.Topics[1].Bytes()), common.BytesToAddress(l.Topics[2].Bytes())
			if res := byAddr[from]; res != nil && to == bankroll {
				add(res, l.Address, new(big.Int).SetBytes(l.Data))
			}
		}
	}
	for i, a := range p.Accounts {
		res := &out[i]
		if !res.Swept {
			if len(res.Moved) > 0 {
				return nil, fmt.Errorf("batchsweep: %s was skipped but paid the bankroll", a.Address.Hex())
			}
			continue
		}
		for _, as := range a.Assets {
			if as.Amount != nil && (res.Moved[as.Token] == nil || res.Moved[as.Token].Cmp(as.Amount) != 0) {
				return nil, fmt.Errorf("batchsweep: %s swept %v of %s, the plan says %v", a.Address.Hex(), res.Moved[as.Token], as.Token.Hex(), as.Amount)
			}
		}
	}
	return out, nil
}
