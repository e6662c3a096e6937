package devchain_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
)

func startChain(t *testing.T, opts devchain.Options) *devchain.Chain {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := devchain.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func dial(t *testing.T, c *devchain.Chain) *ethclient.Client {
	t.Helper()
	ec, err := ethclient.Dial(c.RPCURL())
	if err != nil {
		t.Fatalf("dial %s: %v", c.RPCURL(), err)
	}
	t.Cleanup(ec.Close)
	return ec
}

func newKey(t *testing.T) (*ecdsa.PrivateKey, common.Address) {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, crypto.PubkeyToAddress(k.PublicKey)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustReceipt(t *testing.T, ctx context.Context, ec ethereum.TransactionReader, h common.Hash) *types.Receipt {
	t.Helper()
	r, err := ec.TransactionReceipt(ctx, h)
	for i := 0; chain.IsIndexing(err) && i < 200; i++ {
		time.Sleep(5 * time.Millisecond)
		r, err = ec.TransactionReceipt(ctx, h)
	}
	if err != nil {
		t.Fatalf("receipt %s: %v", h, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("tx %s failed", h)
	}
	return r
}

func balanceOf(t *testing.T, ec bind.ContractBackend, token, holder common.Address) *big.Int {
	t.Helper()
	tt := contracts.NewTestToken()
	b, err := bind.Call(tt.Instance(ec, token), nil, tt.PackBalanceOf(holder), tt.UnpackBalanceOf)
	if err != nil {
		t.Fatalf("balanceOf: %v", err)
	}
	return b
}

func TestChainOverHTTP(t *testing.T) {
	ctx := testCtx(t)
	c := startChain(t, devchain.Options{HTTPAddr: "127.0.0.1:0"})

	url := c.RPCURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("RPCURL = %q, want http://127.0.0.1:<port>", url)
	}
	ec := dial(t, c)

	// Chain identity.
	id, err := ec.ChainID(ctx)
	if err != nil || id.Int64() != 1337 || c.ChainID() != 1337 {
		t.Fatalf("chain id = %v (%v), ChainID() = %d", id, err, c.ChainID())
	}
	var netVersion string
	if err := ec.Client().CallContext(ctx, &netVersion, "net_version"); err != nil || netVersion != "1337" {
		t.Fatalf("net_version = %q (%v)", netVersion, err)
	}
	var clientVersion string
	if err := ec.Client().CallContext(ctx, &clientVersion, "web3_clientVersion"); err != nil || clientVersion == "" {
		t.Fatalf("web3_clientVersion = %q (%v)", clientVersion, err)
	}
	// Only eth, net, web3 and debug are exposed over HTTP.
	var nodeInfo any
	if err := ec.Client().CallContext(ctx, &nodeInfo, "admin_nodeInfo"); err == nil {
		t.Fatal("admin_nodeInfo must not be served over HTTP")
	}
	// debug serves the tracers API with the callTracer.
	var traces []map[string]any
	if err := ec.Client().CallContext(ctx, &traces, "debug_traceBlockByNumber", "0x1", map[string]any{"tracer": "callTracer"}); err != nil || len(traces) == 0 {
		t.Fatalf("debug_traceBlockByNumber = %v (%v)", traces, err)
	}
	if result, _ := traces[0]["result"].(map[string]any); result["type"] != "CREATE" {
		t.Fatalf("callTracer frame of the first deployment: %v", traces[0])
	}

	// Deployment was committed before Start returned.
	head, err := ec.BlockNumber(ctx)
	if err != nil || head == 0 {
		t.Fatalf("block number = %d (%v), want > 0", head, err)
	}

	// Tokens, read through the generated bindings over HTTP.
	tt := contracts.NewTestToken()
	if got := len(c.Tokens()); got != 2 {
		t.Fatalf("%d tokens, want 2", got)
	}
	for _, sym := range []string{"USDT", "USDC"} {
		tok, ok := c.Token(sym)
		if !ok {
			t.Fatalf("token %s missing", sym)
		}
		inst := tt.Instance(ec, tok.Address)
		gotSym, err := bind.Call(inst, nil, tt.PackSymbol(), tt.UnpackSymbol)
		if err != nil || gotSym != sym {
			t.Fatalf("%s symbol() = %q (%v)", sym, gotSym, err)
		}
		dec, err := bind.Call(inst, nil, tt.PackDecimals(), tt.UnpackDecimals)
		if err != nil || dec != 6 || tok.Decimals != 6 {
			t.Fatalf("%s decimals() = %d (%v), Token.Decimals = %d", sym, dec, err, tok.Decimals)
		}
		owner, err := bind.Call(inst, nil, tt.PackOwner(), tt.UnpackOwner)
		if err != nil || owner != c.FaucetAddress() {
			t.Fatalf("%s owner() = %s (%v), want faucet %s", sym, owner, err, c.FaucetAddress())
		}
	}
	if _, ok := c.Token("DAI"); ok {
		t.Fatal("unexpected token DAI")
	}

	// Fund a fresh key with ETH and USDT, then transfer USDT with it.
	usdt, _ := c.Token("USDT")
	aliceKey, alice := newKey(t)
	_, bob := newKey(t)
	ethHash, err := c.SendNative(ctx, alice, big.NewInt(params.Ether))
	if err != nil {
		t.Fatal(err)
	}
	mintHash, err := c.Mint(ctx, "USDT", alice, big.NewInt(1_000_000_000)) // 1000 USDT
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mine(ctx, ethHash, mintHash); err != nil {
		t.Fatal(err)
	}
	// Mainnet (Osaka) gas rules: a plain ETH transfer to a fresh account costs 21000.
	if r := mustReceipt(t, ctx, ec, ethHash); r.GasUsed != params.TxGas {
		t.Fatalf("ETH transfer used %d gas, want %d", r.GasUsed, params.TxGas)
	}
	mustReceipt(t, ctx, ec, mintHash)
	if bal, err := ec.BalanceAt(ctx, alice, nil); err != nil || bal.Cmp(big.NewInt(params.Ether)) != 0 {
		t.Fatalf("alice ETH = %v (%v)", bal, err)
	}

	opts := bind.NewKeyedTransactor(aliceKey, big.NewInt(c.ChainID()))
	opts.Context = ctx
	amount := big.NewInt(250_000_000) // 250 USDT
	tx, err := bind.Transact(tt.Instance(ec, usdt.Address), opts, tt.PackTransfer(bob, amount))
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	mined, err := c.Mine(ctx, tx.Hash())
	if err != nil {
		t.Fatal(err)
	}
	rcpt := mustReceipt(t, ctx, ec, tx.Hash())
	if head, err := ec.HeaderByNumber(ctx, nil); err != nil || rcpt.BlockHash != head.Hash() || mined[0].BlockHash != rcpt.BlockHash {
		t.Fatalf("transfer in block %s, head %v (%v)", rcpt.BlockHash, head, err)
	}

	if got := balanceOf(t, ec, usdt.Address, alice); got.Cmp(big.NewInt(750_000_000)) != 0 {
		t.Fatalf("alice USDT = %v, want 750000000", got)
	}
	if got := balanceOf(t, ec, usdt.Address, bob); got.Cmp(amount) != 0 {
		t.Fatalf("bob USDT = %v, want %v", got, amount)
	}

	// The block is visible over HTTP with the transaction in it.
	blk, err := ec.BlockByNumber(ctx, nil)
	if err != nil || blk.Hash() != rcpt.BlockHash || len(blk.Transactions()) != 1 || blk.Transactions()[0].Hash() != tx.Hash() {
		t.Fatalf("latest block = %v (%v)", blk, err)
	}

	// eth_getLogs over HTTP returns the Transfer log.
	transferID := tt.GetABI().Events["Transfer"].ID
	logs, err := ec.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: big.NewInt(0),
		Addresses: []common.Address{usdt.Address},
		Topics:    [][]common.Hash{{transferID}, {common.BytesToHash(alice.Bytes())}},
	})
	if err != nil {
		t.Fatalf("eth_getLogs: %v", err)
	}
	if len(logs) != 1 {
		t.Fatalf("got %d Transfer logs from alice, want 1", len(logs))
	}
	ev, err := tt.UnpackTransferEvent(&logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if ev.From != alice || ev.To != bob || ev.Value.Cmp(amount) != 0 || logs[0].TxHash != tx.Hash() {
		t.Fatalf("Transfer event = %+v", ev)
	}

	// Fee endpoints.
	if gp, err := ec.SuggestGasPrice(ctx); err != nil || gp.Sign() <= 0 {
		t.Fatalf("eth_gasPrice = %v (%v)", gp, err)
	}
	if fh, err := ec.FeeHistory(ctx, 2, nil, []float64{50}); err != nil || len(fh.BaseFee) == 0 {
		t.Fatalf("eth_feeHistory = %+v (%v)", fh, err)
	}

	// Price feeds.
	ma := contracts.NewMockAggregator()
	if got := len(c.Aggregators()); got != 3 {
		t.Fatalf("%d aggregators, want 3", got)
	}
	feeds := map[string]int64{"ETH/USD": 3000_00000000, "USDT/USD": 1_00000000, "USDC/USD": 1_00000000}
	for pair, want := range feeds {
		a, ok := c.Aggregator(pair)
		if !ok || a.Decimals != 8 {
			t.Fatalf("aggregator %s = %+v, %v", pair, a, ok)
		}
		inst := ma.Instance(ec, a.Address)
		rd, err := bind.Call(inst, nil, ma.PackLatestRoundData(), ma.UnpackLatestRoundData)
		if err != nil {
			t.Fatalf("%s latestRoundData: %v", pair, err)
		}
		if rd.Answer.Int64() != want || rd.RoundId.Int64() != 1 || rd.AnsweredInRound.Int64() != 1 || rd.UpdatedAt.Sign() == 0 {
			t.Fatalf("%s latestRoundData = %+v, want answer %d", pair, rd, want)
		}
		desc, err := bind.Call(inst, nil, ma.PackDescription(), ma.UnpackDescription)
		if err != nil || desc != pair {
			t.Fatalf("%s description() = %q (%v)", pair, desc, err)
		}
		dec, err := bind.Call(inst, nil, ma.PackDecimals(), ma.UnpackDecimals)
		if err != nil || dec != 8 {
			t.Fatalf("%s decimals() = %d (%v)", pair, dec, err)
		}
	}

	ethUSD, _ := c.Aggregator("ETH/USD")
	newAnswer := big.NewInt(3100_00000000)
	setHash, err := c.SetAnswer(ctx, "ETH/USD", newAnswer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mine(ctx, setHash); err != nil {
		t.Fatal(err)
	}
	setRcpt := mustReceipt(t, ctx, ec, setHash)
	setBlock, err := ec.HeaderByHash(ctx, setRcpt.BlockHash)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := bind.Call(ma.Instance(ec, ethUSD.Address), nil, ma.PackLatestRoundData(), ma.UnpackLatestRoundData)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Answer.Cmp(newAnswer) != 0 || rd.RoundId.Int64() != 2 || rd.UpdatedAt.Uint64() != setBlock.Time {
		t.Fatalf("after setAnswer: %+v (block time %d)", rd, setBlock.Time)
	}
	// The previous round is still readable.
	r1, err := bind.Call(ma.Instance(ec, ethUSD.Address), nil, ma.PackGetRoundData(big.NewInt(1)), ma.UnpackGetRoundData)
	if err != nil || r1.Answer.Int64() != 3000_00000000 {
		t.Fatalf("getRoundData(1) = %+v (%v)", r1, err)
	}
}

func TestBlockTimeAdvances(t *testing.T) {
	ctx := testCtx(t)
	c := startChain(t, devchain.Options{BlockTime: 200 * time.Millisecond})
	client := c.Client()

	start, err := client.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A transaction sent between blocks lands in a later block without Commit.
	_, to := newKey(t)
	h, err := c.SendNative(ctx, to, big.NewInt(12345))
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	rcpt, err := bind.WaitMined(waitCtx, client, h)
	if err != nil {
		t.Fatalf("tx not mined by the ticker: %v", err)
	}
	if rcpt.Status != types.ReceiptStatusSuccessful || rcpt.BlockNumber.Uint64() <= start {
		t.Fatalf("receipt = %+v", rcpt)
	}

	deadline := time.Now().Add(3 * time.Second)
	for {
		n, err := client.BlockNumber(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n >= start+3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("block number stuck at %d (start %d)", n, start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Manual commits interleave safely with the ticker.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { c.Commit() })
	}
	wg.Wait()
}

// Transactions sent while the chain is held land in one block, however long sending takes:
// the ticker seals nothing until Hold returns.
func TestHoldKeepsTransactionsInOneBlock(t *testing.T) {
	ctx := testCtx(t)
	c := startChain(t, devchain.Options{BlockTime: 20 * time.Millisecond})
	var hashes []common.Hash
	err := c.Hold(func() error {
		start, err := c.Client().PendingNonceAt(ctx, c.FaucetAddress())
		if err != nil {
			return err
		}
		for range 5 {
			_, to := newKey(t)
			h, err := c.SendNative(ctx, to, big.NewInt(1))
			if err != nil {
				return err
			}
			hashes = append(hashes, h)
			time.Sleep(30 * time.Millisecond) // longer than a block
		}
		// The pool admits transactions asynchronously: release once it holds all five.
		for n := uint64(0); n < start+5; time.Sleep(5 * time.Millisecond) {
			if n, err = c.Client().PendingNonceAt(ctx, c.FaucetAddress()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	blocks := map[uint64]bool{}
	for _, h := range hashes {
		r, err := bind.WaitMined(waitCtx, c.Client(), h)
		if err != nil {
			t.Fatal(err)
		}
		blocks[r.BlockNumber.Uint64()] = true
	}
	if len(blocks) != 1 {
		t.Fatalf("5 transactions sent while held landed in %d blocks", len(blocks))
	}
}

func TestTwoChainsSideBySide(t *testing.T) {
	ctx := testCtx(t)
	var a, b *devchain.Chain
	var wg sync.WaitGroup
	wg.Go(func() { a = startChain(t, devchain.Options{HTTPAddr: "127.0.0.1:0"}) })
	wg.Go(func() { b = startChain(t, devchain.Options{HTTPAddr: "127.0.0.1:0"}) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if a.RPCURL() == b.RPCURL() {
		t.Fatalf("both chains on %s", a.RPCURL())
	}
	if a.FaucetAddress() == b.FaucetAddress() {
		t.Fatal("chains share a generated faucet")
	}
	ea, eb := dial(t, a), dial(t, b)

	_, who := newKey(t)
	h, err := a.SendNative(ctx, who, big.NewInt(params.GWei))
	if err != nil {
		t.Fatal(err)
	}
	a.Commit()
	mustReceipt(t, ctx, ea, h)

	if bal, err := ea.BalanceAt(ctx, who, nil); err != nil || bal.Int64() != params.GWei {
		t.Fatalf("chain A balance = %v (%v)", bal, err)
	}
	if bal, err := eb.BalanceAt(ctx, who, nil); err != nil || bal.Sign() != 0 {
		t.Fatalf("chain B balance = %v (%v), want 0", bal, err)
	}
	na, _ := ea.BlockNumber(ctx)
	nb, _ := eb.BlockNumber(ctx)
	if na != nb+1 {
		t.Fatalf("block numbers A=%d B=%d, want A = B+1", na, nb)
	}
}

func TestConcurrentFaucetTransactions(t *testing.T) {
	ctx := testCtx(t)
	faucet, faucetAddr := newKey(t)
	_, prefunded := newKey(t)
	c := startChain(t, devchain.Options{
		FaucetKey: faucet,
		Alloc:     types.GenesisAlloc{prefunded: {Balance: big.NewInt(42)}},
	})
	if c.FaucetAddress() != faucetAddr || c.Faucet() != faucet {
		t.Fatal("FaucetKey option ignored")
	}
	if bal, err := c.Client().BalanceAt(ctx, prefunded, nil); err != nil || bal.Int64() != 42 {
		t.Fatalf("Alloc balance = %v (%v)", bal, err)
	}

	_, to := newKey(t)
	const n = 12
	hashes := make([]common.Hash, 2*n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { hashes[2*i], errs[2*i] = c.SendNative(ctx, to, big.NewInt(1)) })
		wg.Go(func() { hashes[2*i+1], errs[2*i+1] = c.Mint(ctx, "usdc", to, big.NewInt(10)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	receipts, err := c.Mine(ctx, hashes...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range receipts {
		if r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("transaction %s failed", r.TxHash)
		}
	}
	if bal, err := c.Client().BalanceAt(ctx, to, nil); err != nil || bal.Int64() != n {
		t.Fatalf("ETH balance = %v (%v), want %d", bal, err, n)
	}
	usdc, _ := c.Token("USDC")
	if got := balanceOf(t, c.Client(), usdc.Address, to); got.Int64() != 10*n {
		t.Fatalf("USDC balance = %v, want %d", got, 10*n)
	}
}

func TestForkAndRollbackKeepNonceInSync(t *testing.T) {
	ctx := testCtx(t)
	c := startChain(t, devchain.Options{})
	client := c.Client()
	_, to := newKey(t)

	parent, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A transaction dropped by Rollback must not leave a nonce gap.
	if _, err := c.SendNative(ctx, to, big.NewInt(1)); err != nil {
		t.Fatal(err)
	}
	c.Rollback()
	h, err := c.SendNative(ctx, to, big.NewInt(2))
	if err != nil {
		t.Fatal(err)
	}
	orig := c.Commit()
	mustReceipt(t, ctx, client, h)

	// Reorg: fork from the parent and build a longer side chain. The
	// reorged-out transaction goes back to the pool and is re-included.
	if err := c.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	c.Commit()
	c.Commit()
	reorged, err := client.HeaderByNumber(ctx, new(big.Int).Add(parent.Number, big.NewInt(1)))
	if err != nil {
		t.Fatal(err)
	}
	if reorged.Hash() == orig {
		t.Fatal("no reorg happened")
	}
	if r := mustReceipt(t, ctx, client, h); r.BlockHash != reorged.Hash() {
		t.Fatalf("tx re-included in %s, want %s", r.BlockHash, reorged.Hash())
	}

	// The faucet keeps working after the reorg.
	h, err = c.SendNative(ctx, to, big.NewInt(3))
	if err != nil {
		t.Fatal(err)
	}
	c.Commit()
	mustReceipt(t, ctx, client, h)
	if bal, err := client.BalanceAt(ctx, to, nil); err != nil || bal.Int64() != 5 {
		t.Fatalf("balance = %v (%v), want 5", bal, err)
	}

	before, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AdjustTime(time.Hour); err != nil {
		t.Fatal(err)
	}
	after, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if after.Time < before.Time+3600 {
		t.Fatalf("AdjustTime: block time %d -> %d", before.Time, after.Time)
	}
}

func TestStartErrors(t *testing.T) {
	ctx := testCtx(t)
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:8545", "example.com:8545", "127.0.0.1", "127.0.0.1:99999"} {
		if c, err := devchain.Start(ctx, devchain.Options{HTTPAddr: addr}); err == nil {
			c.Close()
			t.Errorf("Start(HTTPAddr %q) succeeded, want error", addr)
		}
	}

	// A fixed port that is taken yields an error, not a panic.
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if c, err := devchain.Start(ctx, devchain.Options{HTTPAddr: l.Addr().String()}); err == nil {
		c.Close()
		t.Fatal("Start on a busy port succeeded")
	}
}

func TestCloseIdempotent(t *testing.T) {
	c, err := devchain.Start(testCtx(t), devchain.Options{BlockTime: 50 * time.Millisecond, HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	url := c.RPCURL()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if h := c.Commit(); h != (common.Hash{}) {
		t.Fatalf("Commit after Close = %s", h)
	}
	// The HTTP listener is gone.
	addr := strings.TrimPrefix(url, "http://")
	if conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(t.Context(), "tcp", addr); err == nil {
		conn.Close()
		t.Fatalf("HTTP server still listening on %s", addr)
	}
}

// A chain kept in Options.DataDir survives Close: the next Start resumes it from its head with
// its balances, nonces and contracts, deploys nothing, and the faucet can send again.
func TestDataDirResumesTheChain(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	faucet, _ := newKey(t)
	_, to := newKey(t)

	first, err := devchain.Start(ctx, devchain.Options{FaucetKey: faucet, DataDir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if first.Resumed() {
		t.Fatal("a new chain reports Resumed")
	}
	usdt, _ := first.Token("USDT")
	h, err := first.Mint(ctx, "USDT", to, big.NewInt(1_500_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Mine(ctx, h); err != nil {
		t.Fatal(err)
	}
	head, err := first.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := first.Client().NonceAt(ctx, first.FaucetAddress(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	again := startChain(t, devchain.Options{FaucetKey: faucet, DataDir: dir})
	if !again.Resumed() {
		t.Fatal("the chain in DataDir was not resumed")
	}
	got, err := again.Client().HeaderByNumber(ctx, head.Number)
	if err != nil || got.Hash() != head.Hash() {
		t.Fatalf("block %v after restart = %v (%v), want %s", head.Number, got, err, head.Hash())
	}
	if n, err := again.Client().NonceAt(ctx, again.FaucetAddress(), nil); err != nil || n != nonce {
		t.Fatalf("faucet nonce after restart = %d (%v), want %d", n, err, nonce)
	}
	if u, ok := again.Token("USDT"); !ok || u.Address != usdt.Address {
		t.Fatalf("USDT after restart = %v, want %s", u, usdt.Address)
	}
	if got := balanceOf(t, again.Client(), usdt.Address, to); got.Int64() != 1_500_000 {
		t.Fatalf("USDT balance after restart = %v", got)
	}
	h, err = again.Mint(ctx, "USDT", to, big.NewInt(500_000))
	if err != nil {
		t.Fatal(err)
	}
	receipts, err := again.Mine(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if receipts[0].BlockNumber.Cmp(head.Number) <= 0 {
		t.Fatalf("new block %v is not above the old head %v", receipts[0].BlockNumber, head.Number)
	}
	if got := balanceOf(t, again.Client(), usdt.Address, to); got.Int64() != 2_000_000 {
		t.Fatalf("USDT balance = %v, want 2000000", got)
	}
}

// A data dir holding another faucet's chain is refused rather than half-used.
func TestDataDirOfAnotherFaucet(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	faucet, _ := newKey(t)
	first, err := devchain.Start(ctx, devchain.Options{FaucetKey: faucet, DataDir: dir})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	other, _ := newKey(t)
	if c, err := devchain.Start(ctx, devchain.Options{FaucetKey: other, DataDir: dir}); err == nil {
		_ = c.Close()
		t.Fatal("Start on another faucet's chain succeeded")
	}
}
