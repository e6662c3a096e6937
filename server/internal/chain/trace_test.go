package chain_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// frame builds a call frame for the walker's table test.
func frame(typ string, to common.Address, wei int64, err string, calls ...chain.CallFrame) chain.CallFrame {
	f := chain.CallFrame{Type: typ, From: common.HexToAddress("0xf0"), To: &to, Error: err, Calls: calls}
	if wei != 0 {
		f.Value = big.NewInt(wei)
	}
	return f
}

func TestInternalTransfersWalk(t *testing.T) {
	t.Parallel()
	a, b, c := common.HexToAddress("0xa"), common.HexToAddress("0xb"), common.HexToAddress("0xc")
	type got struct {
		Ordinal  int
		To       common.Address
		Wei      int64
		Reverted bool
	}
	for _, tc := range []struct {
		name string
		root chain.CallFrame
		want []got
	}{
		{"top-level value is not internal", frame("CALL", a, 5, ""), nil},
		{"calls with value, depth first",
			frame("CALL", c, 9, "",
				frame("CALL", a, 1, "", frame("CALL", b, 2, "")),
				frame("CALL", a, 3, "")),
			[]got{{0, a, 1, false}, {1, b, 2, false}, {2, a, 3, false}}},
		{"zero value, static, delegate, callcode and create move nothing",
			frame("CALL", c, 0, "",
				frame("CALL", a, 0, ""), frame("STATICCALL", a, 0, ""), frame("DELEGATECALL", a, 4, ""),
				frame("CALLCODE", a, 4, ""), frame("CREATE", a, 4, ""), frame("CREATE2", a, 4, "")),
			nil},
		{"selfdestruct hands its balance over", frame("CREATE", c, 7, "", frame("SELFDESTRUCT", a, 7, "")), []got{{0, a, 7, false}}},
		{"a revert undoes the frame and its callees, which keep their ordinals",
			frame("CALL", c, 0, "",
				frame("CALL", c, 4, "execution reverted", frame("CALL", a, 4, "")),
				frame("CALL", b, 5, "")),
			[]got{{0, c, 4, true}, {1, a, 4, true}, {2, b, 5, false}}},
		{"a failed transaction undoes everything", frame("CALL", c, 1, "out of gas", frame("CALL", a, 1, "")), []got{{0, a, 1, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out []got
			for _, tr := range chain.InternalTransfers(&tc.root) {
				out = append(out, got{tr.Ordinal, tr.To, tr.Value.Int64(), tr.Reverted})
			}
			if !reflect.DeepEqual(out, tc.want) {
				t.Fatalf("transfers %+v, want %+v", out, tc.want)
			}
		})
	}
	if got := chain.InternalTransfers(nil); got != nil {
		t.Fatalf("nil trace: %+v", got)
	}
}

// TestTraceInternalTransfers traces real transactions on the dev chain over HTTP: a contract
// paying three times, one paying inside a call that reverts, and a contract created and
// destroyed in one transaction.
func TestTraceInternalTransfers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, _ := crypto.GenerateKey()
	user := crypto.PubkeyToAddress(key.PublicKey)
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0",
		Alloc: types.GenesisAlloc{user: {Balance: big.NewInt(params.Ether)}}})
	forwarder, err := dev.DeployForwarder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := chain.Dial(chain.Network{ChainID: dev.ChainID(), RPCURLs: []string{dev.RPCURL()}}, nil)
	defer c.Close()

	a, b := common.HexToAddress("0x00000000000000000000000000000000000000a1"), common.HexToAddress("0x00000000000000000000000000000000000000b1")
	fw := contracts.NewForwarder()
	wei := func(ns ...int64) []*big.Int {
		out := make([]*big.Int, len(ns))
		for i, n := range ns {
			out[i] = big.NewInt(n)
		}
		return out
	}
	selfdestructTo := append(append([]byte{0x73}, a.Bytes()...), 0xff) // PUSH20 a; SELFDESTRUCT
	txs := []*types.Transaction{
		signed(t, c, key, 0, &forwarder, 6, fw.PackForward([]common.Address{a, b, a}, wei(1, 2, 3))),
		signed(t, c, key, 1, &forwarder, 9, fw.PackForwardRejecting([]common.Address{a, b}, wei(4, 5), []bool{false, true})),
		signed(t, c, key, 2, nil, 7, selfdestructTo),
	}
	hashes := make([]common.Hash, len(txs))
	for i, tx := range txs {
		if err := c.Send(ctx, tx); err != nil {
			t.Fatal(err)
		}
		hashes[i] = tx.Hash()
	}
	receipts, err := dev.Mine(ctx, hashes...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range receipts[1:] {
		if r.BlockHash != receipts[0].BlockHash {
			t.Fatal("the transactions were mined in different blocks")
		}
	}
	created := crypto.CreateAddress(user, 2)
	type transfer struct {
		Ordinal  int
		From, To common.Address
		Wei      int64
		Reverted bool
	}
	want := [][]transfer{
		{{0, forwarder, a, 1, false}, {1, forwarder, b, 2, false}, {2, forwarder, a, 3, false}},
		// forwardRejecting pays through this.pay: a self-call with value, then the payment.
		{{0, forwarder, forwarder, 4, false}, {1, forwarder, a, 4, false}, {2, forwarder, forwarder, 5, true}, {3, forwarder, b, 5, true}},
		{{0, created, a, 7, false}},
	}
	summary := func(root *chain.CallFrame) []transfer {
		var out []transfer
		for _, tr := range chain.InternalTransfers(root) {
			out = append(out, transfer{tr.Ordinal, tr.From, tr.To, tr.Value.Int64(), tr.Reverted})
		}
		return out
	}

	block, err := c.TraceBlock(ctx, receipts[0].BlockHash)
	if err != nil {
		t.Fatal(err)
	}
	if len(block) != len(txs) {
		t.Fatalf("%d traces in the block, want %d", len(block), len(txs))
	}
	for i, tr := range block {
		if tr.TxHash != hashes[i] {
			t.Errorf("trace %d is of %s, want %s", i, tr.TxHash, hashes[i])
		}
		if got := summary(tr.Root); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("block trace of tx %d: %+v, want %+v", i, got, want[i])
		}
		one, err := c.TraceTransaction(ctx, hashes[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(one); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("transaction trace of tx %d: %+v, want %+v", i, got, want[i])
		}
	}
	// What the traces say is what moved: a got 1+3+4+7, b only 2 (its 5 was reverted).
	for addr, wantWei := range map[common.Address]int64{a: 15, b: 2} {
		if bal, err := c.Balance(ctx, addr); err != nil || bal.Int64() != wantWei {
			t.Errorf("balance of %s = %v (%v), want %d", addr, bal, err, wantWei)
		}
	}
	if _, err := c.TraceBlock(ctx, common.HexToHash("0x01")); err == nil {
		t.Error("tracing an unknown block succeeded")
	}
}

// signed signs a transaction from key with an estimated gas limit (to == nil: a creation).
func signed(t *testing.T, c *chain.Client, key *ecdsa.PrivateKey, nonce uint64, to *common.Address, wei int64, data []byte) *types.Transaction {
	t.Helper()
	ctx := context.Background()
	from := crypto.PubkeyToAddress(key.PublicKey)
	gas, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: to, Value: big.NewInt(wei), Data: data})
	if err != nil {
		t.Fatalf("estimate gas: %v", err)
	}
	tip, feeCap, err := c.Fees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return types.MustSignNewTx(key, types.LatestSignerForChainID(big.NewInt(devchain.ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(devchain.ChainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas * 2,
		To: to, Value: big.NewInt(wei), Data: data})
}
