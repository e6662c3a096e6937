package chain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/cofferhq/coffer/server/internal/metrics"
)

// CallTimeout bounds every RPC call.
const CallTimeout = 10 * time.Second

// Client talks to one network through its RPC URLs. A call goes to the first healthy
// endpoint; transport failures, HTTP 429/5xx and node rate-limit errors mark the endpoint
// down for an exponentially growing pause (1 s up to 1 min) and the call moves on to the
// next one. Answers from the node (reverts, "not found", "nonce too low") are returned as is.
type Client struct {
	Network   Network
	log       *slog.Logger
	endpoints []*endpoint
	now       func() time.Time
}

type endpoint struct {
	url   string
	label string // the host, for metrics (never the path or query, where API keys live)

	mu        sync.Mutex
	client    *ethclient.Client
	failures  int
	downUntil time.Time
}

// Dial prepares a client for the network; connections open on first use.
func Dial(n Network, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{Network: n, log: log.With("chain", n.ChainID), now: time.Now}
	for _, u := range n.RPCURLs {
		c.endpoints = append(c.endpoints, &endpoint{url: u, label: metrics.EndpointLabel(u)})
	}
	return c
}

// Close closes the open connections.
func (c *Client) Close() {
	for _, e := range c.endpoints {
		e.mu.Lock()
		if e.client != nil {
			e.client.Close()
			e.client = nil
		}
		e.mu.Unlock()
	}
}

//nolint:gochecknoglobals // one client, so every chain.Client shares one connection pool
var rpcHTTPClient = &http.Client{Transport: &http.Transport{
	Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
	DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
}}

// get returns the endpoint's connection, opening it on first use. A new connection is used
// only once the node has answered eth_chainId with the network's id: start-up's check can be
// set to warn or off, and an endpoint of another chain would have its blocks scanned (crediting
// deposits this chain never saw) and payouts sent to it.
func (e *endpoint) get(ctx context.Context, chainID int64) (*ethclient.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client != nil {
		return e.client, nil
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	rc, err := rpc.DialOptions(ctx, e.url, rpc.WithHTTPClient(rpcHTTPClient))
	if err != nil {
		return nil, err
	}
	ec := ethclient.NewClient(rc)
	served, err := ec.ChainID(ctx)
	if err == nil && served.Cmp(big.NewInt(chainID)) != 0 {
		err = fmt.Errorf("%w: endpoint serves chain %s, not %d", ErrWrongChain, served, chainID)
	}
	if err != nil {
		ec.Close()
		return nil, err
	}
	e.client = ec
	return e.client, nil
}

func (e *endpoint) available(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !now.Before(e.downUntil)
}

func (e *endpoint) fail(now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures++
	pause := min(time.Second<<min(e.failures-1, 6), time.Minute)
	e.downUntil = now.Add(pause)
	return pause
}

func (e *endpoint) succeed() {
	e.mu.Lock()
	e.failures, e.downUntil = 0, time.Time{}
	e.mu.Unlock()
}

// ErrUnavailable is returned when no endpoint of the network answered.
var ErrUnavailable = errors.New("chain: no RPC endpoint available")

// ErrWrongChain is an endpoint answering eth_chainId with another chain's id: it is never
// used, as if it were down.
var ErrWrongChain = errors.New("chain: RPC endpoint of another chain")

// retryable tells transport-level failures (try another endpoint) from node answers.
func retryable(err error) bool {
	if err == nil || errors.Is(err, ethereum.NotFound) || errors.Is(err, context.Canceled) {
		return false
	}
	if httpErr, ok := errors.AsType[rpc.HTTPError](err); ok {
		return httpErr.StatusCode == http.StatusTooManyRequests || httpErr.StatusCode >= 500
	}
	if rpcErr, ok := errors.AsType[rpc.Error](err); ok {
		// -32005: limit exceeded (Infura, Alchemy); -32603 internal errors are node-side trouble.
		msg := strings.ToLower(rpcErr.Error())
		return rpcErr.ErrorCode() == -32005 || rpcErr.ErrorCode() == -32603 ||
			strings.Contains(msg, "rate limit") || strings.Contains(msg, "too many requests")
	}
	return true // transport: connection refused, reset, timeout, malformed response
}

// callFor is call for a method with one result: the answer of the endpoint that answered.
func callFor[T any](ctx context.Context, c *Client, what string, fn func(context.Context, *ethclient.Client) (T, error)) (T, error) {
	var out T
	err := c.call(ctx, what, func(ctx context.Context, ec *ethclient.Client) (err error) {
		out, err = fn(ctx, ec)
		return err
	})
	return out, err
}

// call runs fn against the endpoints until one answers: healthy endpoints first, then paused
// ones, so a call is not refused while some endpoint might still answer.
func (c *Client) call(ctx context.Context, what string, fn func(context.Context, *ethclient.Client) error) error {
	now := c.now()
	order := make([]*endpoint, 0, len(c.endpoints))
	for _, healthy := range []bool{true, false} {
		for _, e := range c.endpoints {
			if e.available(now) == healthy {
				order = append(order, e)
			}
		}
	}
	lastErr := errors.New("no RPC URL configured")
	chainID := strconv.FormatInt(c.Network.ChainID, 10)
	for _, e := range order {
		start := time.Now()
		ec, err := e.get(ctx, c.Network.ChainID)
		if err == nil {
			callCtx, cancel := context.WithTimeout(ctx, CallTimeout)
			err = fn(callCtx, ec)
			cancel()
		}
		metrics.RPCRequests.WithLabelValues(chainID, e.label, what).Inc()
		metrics.RPCDuration.WithLabelValues(chainID, what).Observe(time.Since(start).Seconds())
		if !retryable(err) || ctx.Err() != nil {
			if err == nil {
				e.succeed()
			} else if !errors.Is(err, ethereum.NotFound) && !errors.Is(err, context.Canceled) {
				// "Not found" is an answer (a receipt not mined yet), not a failure.
				metrics.RPCErrors.WithLabelValues(chainID, e.label, what, "node").Inc()
			}
			return err
		}
		metrics.RPCErrors.WithLabelValues(chainID, e.label, what, "transport").Inc()
		lastErr = err
		pause := e.fail(c.now())
		level := slog.LevelWarn
		if errors.Is(err, ErrWrongChain) {
			level = slog.LevelError // the chains file is wrong: no retry mends it
		}
		c.log.Log(ctx, level, "RPC endpoint failed; trying the next", "call", what, "endpoint", redact(e.url), "pause", pause, "error", err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, lastErr)
}

// redact drops the path and query of an RPC URL, where providers put API keys.
func redact(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		if j := strings.IndexAny(raw[i+3:], "/?"); j >= 0 {
			return raw[:i+3+j]
		}
	}
	return raw
}

// BlockNumber is the latest block number.
func (c *Client) BlockNumber(ctx context.Context) (uint64, error) {
	return callFor(ctx, c, "eth_blockNumber", func(ctx context.Context, ec *ethclient.Client) (uint64, error) {
		return ec.BlockNumber(ctx)
	})
}

// Header returns a block header; nil number is the latest, rpc.FinalizedBlockNumber the finalized one.
func (c *Client) Header(ctx context.Context, number *big.Int) (*types.Header, error) {
	return callFor(ctx, c, "eth_getBlockByNumber", func(ctx context.Context, ec *ethclient.Client) (*types.Header, error) {
		return ec.HeaderByNumber(ctx, number)
	})
}

// Finalized returns the finalized block's header.
func (c *Client) Finalized(ctx context.Context) (*types.Header, error) {
	return c.Header(ctx, big.NewInt(int64(rpc.FinalizedBlockNumber)))
}

// Block returns a block with its transactions.
func (c *Client) Block(ctx context.Context, number uint64) (*types.Block, error) {
	return callFor(ctx, c, "eth_getBlockByNumber", func(ctx context.Context, ec *ethclient.Client) (*types.Block, error) {
		return ec.BlockByNumber(ctx, new(big.Int).SetUint64(number))
	})
}

// Logs runs eth_getLogs.
func (c *Client) Logs(ctx context.Context, q ethereum.FilterQuery) ([]types.Log, error) {
	return callFor(ctx, c, "eth_getLogs", func(ctx context.Context, ec *ethclient.Client) ([]types.Log, error) {
		return ec.FilterLogs(ctx, q)
	})
}

// Receipt returns a transaction's receipt (ethereum.NotFound while pending or unknown, and
// while the node is still indexing transactions: the receipt may well exist, but not yet).
func (c *Client) Receipt(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	return callFor(ctx, c, "eth_getTransactionReceipt", func(ctx context.Context, ec *ethclient.Client) (*types.Receipt, error) {
		r, err := ec.TransactionReceipt(ctx, hash)
		if IsIndexing(err) {
			return r, errIndexingReceipt
		}
		return r, err
	})
}

// ErrIndexing is a receipt the node cannot look up yet because it is still indexing
// transactions. It is also ethereum.NotFound, so that callers waiting for a receipt wait; a
// caller that would conclude "never mined" from NotFound must check for it: the transaction
// may well be mined.
var ErrIndexing = errors.New("chain: the node is still indexing transactions")

var errIndexingReceipt = fmt.Errorf("%w (%w)", ethereum.NotFound, ErrIndexing)

// IsIndexing reports geth's "transaction indexing is in progress": a node that has not
// finished indexing cannot look transactions up by hash yet. Callers wait, as for a pending
// transaction.
func IsIndexing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "transaction indexing is in progress")
}

// Transaction returns a transaction and whether it is still pending.
func (c *Client) Transaction(ctx context.Context, hash common.Hash) (*types.Transaction, bool, error) {
	var tx *types.Transaction
	var pending bool
	err := c.call(ctx, "eth_getTransactionByHash", func(ctx context.Context, ec *ethclient.Client) (err error) {
		tx, pending, err = ec.TransactionByHash(ctx, hash)
		return err
	})
	return tx, pending, err
}

// Send broadcasts a signed transaction.
func (c *Client) Send(ctx context.Context, tx *types.Transaction) error {
	return c.call(ctx, "eth_sendRawTransaction", func(ctx context.Context, ec *ethclient.Client) error {
		return ec.SendTransaction(ctx, tx)
	})
}

// Nonce is the account's nonce at the latest block (pending=false) or in the pool (pending=true).
func (c *Client) Nonce(ctx context.Context, account common.Address, pending bool) (uint64, error) {
	return callFor(ctx, c, "eth_getTransactionCount", func(ctx context.Context, ec *ethclient.Client) (uint64, error) {
		if pending {
			return ec.PendingNonceAt(ctx, account)
		}
		return ec.NonceAt(ctx, account, nil)
	})
}

// NonceAt is the account's nonce after the given block.
func (c *Client) NonceAt(ctx context.Context, account common.Address, block uint64) (uint64, error) {
	return callFor(ctx, c, "eth_getTransactionCount", func(ctx context.Context, ec *ethclient.Client) (uint64, error) {
		return ec.NonceAt(ctx, account, new(big.Int).SetUint64(block))
	})
}

// Balance is the account's native balance at the latest block.
func (c *Client) Balance(ctx context.Context, account common.Address) (*big.Int, error) {
	return callFor(ctx, c, "eth_getBalance", func(ctx context.Context, ec *ethclient.Client) (*big.Int, error) {
		return ec.BalanceAt(ctx, account, nil)
	})
}

// BalanceAt is the account's balance after the given block.
func (c *Client) BalanceAt(ctx context.Context, account common.Address, block uint64) (*big.Int, error) {
	return callFor(ctx, c, "eth_getBalance", func(ctx context.Context, ec *ethclient.Client) (*big.Int, error) {
		return ec.BalanceAt(ctx, account, new(big.Int).SetUint64(block))
	})
}

// CallContract runs a read-only call at the latest block.
func (c *Client) CallContract(ctx context.Context, msg ethereum.CallMsg, block *big.Int) ([]byte, error) {
	return callFor(ctx, c, "eth_call", func(ctx context.Context, ec *ethclient.Client) ([]byte, error) {
		return ec.CallContract(ctx, msg, block)
	})
}

// CodeAt implements bind.ContractCaller.
func (c *Client) CodeAt(ctx context.Context, account common.Address, block *big.Int) ([]byte, error) {
	return callFor(ctx, c, "eth_getCode", func(ctx context.Context, ec *ethclient.Client) ([]byte, error) {
		return ec.CodeAt(ctx, account, block)
	})
}

// EstimateGas estimates a call's gas.
func (c *Client) EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error) {
	return callFor(ctx, c, "eth_estimateGas", func(ctx context.Context, ec *ethclient.Client) (uint64, error) {
		return ec.EstimateGas(ctx, msg)
	})
}

// Gas limits of native transfers.
const (
	// PlainTransferGas is the gas of a native transfer to an address without code.
	PlainTransferGas = 21000
	// ContractTransferGas is the limit of a transfer to a contract whose gas the node could
	// not estimate (the contract refuses it, or the estimate failed): enough for any wallet
	// contract; a refusal is then mined as a revert, which its caller handles.
	ContractTransferGas = 100000
)

// NativeTransferGas is the gas limit for sending value from one address to another: 21,000
// when the recipient has no code, else the node's estimate plus 30% (ContractTransferGas
// when there is none). A recipient with code (a Safe or another smart-contract wallet, or an
// EOA delegated with EIP-7702) runs it on receipt, where a 21,000-gas transfer reverts.
func (c *Client) NativeTransferGas(ctx context.Context, from, to common.Address, value *big.Int) (uint64, error) {
	code, err := c.CodeAt(ctx, to, nil)
	if err != nil {
		return 0, err
	}
	if len(code) == 0 {
		return PlainTransferGas, nil
	}
	est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &to, Value: value})
	if err != nil {
		c.log.Warn("a transfer to a contract could not be estimated; sent with the fallback gas limit", "to", to,
			"gas", ContractTransferGas, "error", err)
		return ContractTransferGas, nil
	}
	return est + est*3/10, nil
}

// Fees suggests EIP-1559 fees: the tip, and a fee cap of twice the latest base fee plus the
// tip, which survives several full blocks of base-fee growth.
func (c *Client) Fees(ctx context.Context) (tip, feeCap *big.Int, err error) {
	head, err := c.Header(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	tip, err = callFor(ctx, c, "eth_maxPriorityFeePerGas", func(ctx context.Context, ec *ethclient.Client) (*big.Int, error) {
		return ec.SuggestGasTipCap(ctx)
	})
	if err != nil {
		return nil, nil, err
	}
	base := head.BaseFee
	if base == nil {
		base = new(big.Int)
	}
	feeCap = new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	return tip, feeCap, nil
}
