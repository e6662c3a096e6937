package batchsweep

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/contracts"
)

// ErrNotABatch: the data is not a call of the Sweeper's batch.
var ErrNotABatch = errors.New("batchsweep: not a batch call")

// Accounts reads back the accounts, exact amounts and fees a batch call carries (Plan.Data,
// stored with the batch's transaction): what an engineer sees of a batch, read from what was
// signed.
func Accounts(data []byte) ([]Account, error) {
	a, err := contracts.SweeperMetaData.ParseABI()
	if err != nil {
		return nil, err
	}
	m := a.Methods["batch"]
	if len(data) < 4 || !bytes.Equal(data[:4], m.ID) {
		return nil, ErrNotABatch
	}
	args, err := m.Inputs.Unpack(data[4:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotABatch, err)
	}
	addrs, ok1 := args[0].([]common.Address)
	tokens, ok2 := args[1].([][]common.Address)
	amounts, ok3 := args[2].([][]*big.Int)
	fees, ok4 := args[3].([][]*big.Int)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(tokens) != len(addrs) || len(amounts) != len(addrs) || len(fees) != len(addrs) {
		return nil, fmt.Errorf("%w: unexpected arguments", ErrNotABatch)
	}
	out := make([]Account, len(addrs))
	for i, addr := range addrs {
		if len(tokens[i]) != len(amounts[i]) || len(tokens[i]) != len(fees[i]) {
			return nil, fmt.Errorf("%w: account %s has %d tokens, %d amounts and %d fees", ErrNotABatch, addr,
				len(tokens[i]), len(amounts[i]), len(fees[i]))
		}
		out[i].Address = addr
		for j, t := range tokens[i] {
			out[i].Assets = append(out[i].Assets, Asset{Token: t, Amount: amounts[i][j], Fee: fees[i][j]})
		}
	}
	return out, nil
}
