package chain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/gethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// CallFrame is one call of a transaction as the node's callTracer reports it (go-ethereum's
// own decoding of the tracer's JSON: type, from, to, value, error, nested calls).
type CallFrame = gethclient.CallFrame

// TxTrace is the call trace of one transaction of a traced block.
type TxTrace struct {
	TxHash common.Hash
	Root   *CallFrame
}

// callTracer asks for go-ethereum's native call tracer (every node with the debug API has it).
func callTracer() map[string]any { return map[string]any{"tracer": "callTracer"} }

// TraceBlock runs the callTracer over every transaction of the block with this hash
// (debug_traceBlockByHash: by hash, so the trace is of exactly the block that was read, even
// if the chain reorganises meanwhile). The traces come in block order.
func (c *Client) TraceBlock(ctx context.Context, hash common.Hash) ([]TxTrace, error) {
	var raw []struct {
		TxHash common.Hash `json:"txHash"`
		Result *CallFrame  `json:"result"`
		Error  string      `json:"error"`
	}
	err := c.call(ctx, "debug_traceBlockByHash", func(ctx context.Context, ec *ethclient.Client) error {
		return ec.Client().CallContext(ctx, &raw, "debug_traceBlockByHash", hash, callTracer())
	})
	if err != nil {
		return nil, traceError(err)
	}
	out := make([]TxTrace, len(raw))
	for i, r := range raw {
		// A transaction the tracer gave up on (timeout) could hide a transfer: fail the whole
		// block rather than skip it.
		if r.Error != "" || r.Result == nil {
			return nil, fmt.Errorf("chain: trace of transaction %d (%s) in block %s failed: %s", i, r.TxHash.Hex(), hash.Hex(), r.Error)
		}
		out[i] = TxTrace{TxHash: r.TxHash, Root: r.Result}
	}
	return out, nil
}

// TraceTransaction runs the callTracer over one transaction (debug_traceTransaction).
func (c *Client) TraceTransaction(ctx context.Context, hash common.Hash) (*CallFrame, error) {
	var root *CallFrame
	err := c.call(ctx, "debug_traceTransaction", func(ctx context.Context, ec *ethclient.Client) (err error) {
		root, err = gethclient.New(ec.Client()).TraceTransactionWithCallTracer(ctx, hash, nil)
		return err
	})
	if err != nil {
		return nil, traceError(err)
	}
	return root, nil
}

// traceError names the likely cause when the node has no trace API.
func traceError(err error) error {
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) && rpcErr.ErrorCode() == -32601 {
		return fmt.Errorf("%w (traceInternalTransfers needs RPC endpoints that serve the debug namespace)", err)
	}
	return err
}

// InternalTransfer is native currency moved by a contract inside a transaction: a CALL with
// value, or the balance a SELFDESTRUCT hands to its beneficiary, below the top-level call.
type InternalTransfer struct {
	// Ordinal numbers the transaction's internal transfers from 0 in depth-first order. Every
	// one counts, reverted or not and whatever its recipient, so the number depends only on
	// the execution, not on which addresses a caller is interested in.
	Ordinal int
	From    common.Address
	To      common.Address
	Value   *big.Int
	// Reverted is true when the frame or one of its callers failed (the transaction included):
	// the value never moved.
	Reverted bool
}

// InternalTransfers lists the internal transfers of a transaction's call trace. DELEGATECALL
// and CALLCODE frames are not transfers (a DELEGATECALL's value is its caller's msg.value; a
// CALLCODE pays the caller itself), nor are CREATEs (a new contract is never a deposit
// address).
func InternalTransfers(root *CallFrame) []InternalTransfer {
	var out []InternalTransfer
	var walk func(calls []CallFrame, reverted bool)
	walk = func(calls []CallFrame, reverted bool) {
		for i := range calls {
			f := &calls[i]
			failed := reverted || f.Error != ""
			moves := strings.EqualFold(f.Type, "CALL") || strings.EqualFold(f.Type, "SELFDESTRUCT")
			if moves && f.To != nil && f.Value != nil && f.Value.Sign() > 0 {
				out = append(out, InternalTransfer{Ordinal: len(out), From: f.From, To: *f.To, Value: new(big.Int).Set(f.Value), Reverted: failed})
			}
			walk(f.Calls, failed)
		}
	}
	if root != nil {
		walk(root.Calls, root.Error != "")
	}
	return out
}
