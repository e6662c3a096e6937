// Package gethdev runs a real `geth --dev` node (go-ethereum v1.16.7, installed by
// `make geth` into .tools) for end-to-end tests: chain id 1337, a block every period, its
// funded developer account unlocked, the debug API (call tracer) served over HTTP.
package gethdev

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/proctest"
)

// Node is a running geth --dev.
type Node struct {
	URL     string
	ChainID int64
	Client  *ethclient.Client
	rpc     *rpc.Client
	dev     common.Address
}

// Binary finds geth: on PATH, else in the repository's .tools.
func Binary() (string, error) {
	if p, err := exec.LookPath("geth"); err == nil {
		return p, nil
	}
	dir, _ := os.Getwd()
	for ; dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".tools", "geth")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			break
		}
	}
	return "", errors.New("geth not found: run `make geth` (go install github.com/ethereum/go-ethereum/cmd/geth@v1.16.7)")
}

// Start runs geth --dev until the test ends. Without geth the test is skipped locally and
// fails in CI (CI is set), where `make test` installs it.
func Start(t testing.TB, period time.Duration) *Node {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		proctest.Missing(t, err.Error())
	}
	port := proctest.FreePort(t)
	dir := t.TempDir()
	//nolint:noctx // the test's context ends before its cleanups; the cleanup below stops geth gracefully
	cmd := exec.Command(bin, "--dev", "--dev.period", strconv.Itoa(int(period.Seconds())), "--datadir", dir,
		"--http", "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(port), "--http.api", "eth,net,web3,debug",
		"--ipcdisable", "--nodiscover", "--maxpeers", "0", "--verbosity", "1")
	logFile, _ := os.Create(filepath.Join(dir, "geth.log"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		proctest.Terminate(cmd.Process, done, 10*time.Second)
		logFile.Close()
	})
	n := &Node{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if n.rpc, err = rpc.DialContext(ctx, n.URL); err == nil {
			n.Client = ethclient.NewClient(n.rpc)
			var accounts []common.Address
			if err = n.rpc.CallContext(ctx, &accounts, "eth_accounts"); err == nil && len(accounts) > 0 {
				n.dev = accounts[0]
				break
			}
		}
		if ctx.Err() != nil {
			b, _ := os.ReadFile(filepath.Join(dir, "geth.log"))
			t.Fatalf("geth --dev did not start: %v\n%s", err, tail(string(b)))
		}
		time.Sleep(100 * time.Millisecond)
	}
	id, err := n.Client.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n.ChainID = id.Int64()
	t.Cleanup(n.Client.Close)
	return n
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// Fund sends wei from the developer account and waits for it to be mined.
func (n *Node) Fund(ctx context.Context, to common.Address, wei *big.Int) error {
	var hash common.Hash
	if err := n.rpc.CallContext(ctx, &hash, "eth_sendTransaction", map[string]any{
		"from": n.dev, "to": to, "value": (*hexutil.Big)(wei)}); err != nil {
		return err
	}
	_, err := n.Wait(ctx, hash)
	return err
}

// Wait returns a transaction's receipt once it is mined.
func (n *Node) Wait(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		r, err := n.Client.TransactionReceipt(ctx, hash)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && !chain.IsIndexing(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("transaction %s not mined: %w", hash.Hex(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Account is a funded key of the test.
type Account struct {
	Key     *ecdsa.PrivateKey
	Address common.Address
}

// NewAccount makes a key and funds it with eth ether.
func (n *Node) NewAccount(ctx context.Context, eth int64) (Account, error) {
	key, _ := crypto.GenerateKey()
	a := Account{Key: key, Address: crypto.PubkeyToAddress(key.PublicKey)}
	return a, n.Fund(ctx, a.Address, new(big.Int).Mul(big.NewInt(eth), big.NewInt(1e18)))
}

// Transact signs a transaction from a with the node's suggested fees and waits for its receipt.
func (n *Node) Transact(ctx context.Context, a Account, to *common.Address, value *big.Int, data []byte) (*types.Receipt, error) {
	opts := bind.NewKeyedTransactor(a.Key, big.NewInt(n.ChainID))
	opts.Context = ctx
	if value != nil {
		opts.Value = value
	}
	var tx *types.Transaction
	var err error
	switch {
	case to == nil:
		_, tx, err = bind.DeployContract(opts, data, n.Client, nil)
	case len(data) == 0: // a plain transfer, to an account without code
		tx, err = n.transfer(ctx, a, *to, opts.Value)
	default:
		tx, err = bind.NewBoundContract(*to, contracts.NewTestToken().GetABI(), n.Client, n.Client, n.Client).RawTransact(opts, data)
	}
	if err != nil {
		return nil, err
	}
	return n.Wait(ctx, tx.Hash())
}

func (n *Node) transfer(ctx context.Context, a Account, to common.Address, value *big.Int) (*types.Transaction, error) {
	tip, err := n.Client.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, err
	}
	return n.Send(ctx, a, func(nonce uint64, baseFee *big.Int) types.TxData {
		return &types.DynamicFeeTx{ChainID: big.NewInt(n.ChainID), Nonce: nonce, GasTipCap: tip,
			GasFeeCap: new(big.Int).Add(new(big.Int).Mul(baseFee, big.NewInt(2)), tip), Gas: 21000, To: &to, Value: value}
	})
}

// Send signs the transaction data builds from a's pending nonce and the head's base fee, and
// broadcasts it (without waiting: see Wait).
func (n *Node) Send(ctx context.Context, a Account, data func(nonce uint64, baseFee *big.Int) types.TxData) (*types.Transaction, error) {
	nonce, err := n.Client.PendingNonceAt(ctx, a.Address)
	if err != nil {
		return nil, err
	}
	head, err := n.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	tx := types.MustSignNewTx(a.Key, types.LatestSignerForChainID(big.NewInt(n.ChainID)), data(nonce, head.BaseFee))
	return tx, n.Client.SendTransaction(ctx, tx)
}

// DeployToken deploys the test ERC20 (owner: a) and mints supply to a.
func (n *Node) DeployToken(ctx context.Context, a Account, symbol string, decimals uint8, supply *big.Int) (common.Address, error) {
	tok := contracts.NewTestToken()
	bin := append(common.FromHex(contracts.TestTokenMetaData.Bin), tok.PackConstructor(symbol+" Test", symbol, decimals)...)
	r, err := n.Transact(ctx, a, nil, nil, bin)
	if err != nil {
		return common.Address{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return common.Address{}, fmt.Errorf("deploy %s failed", symbol)
	}
	if _, err := n.Transact(ctx, a, &r.ContractAddress, nil, tok.PackMint(a.Address, supply)); err != nil {
		return common.Address{}, err
	}
	return r.ContractAddress, nil
}

// TokenBalance reads owner's balance of the test ERC20 at token, at the latest block.
func (n *Node) TokenBalance(ctx context.Context, token, owner common.Address) (*big.Int, error) {
	tok := contracts.NewTestToken()
	out, err := n.Client.CallContract(ctx, ethereum.CallMsg{To: &token, Data: tok.PackBalanceOf(owner)}, nil)
	if err != nil {
		return nil, err
	}
	return tok.UnpackBalanceOf(out)
}
