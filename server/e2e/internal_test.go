package e2e

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// TestInternalTransferOnGeth: 0.005 ETH paid to a deposit address by a contract (as a Safe or
// an exchange pays) is found through geth's trace API and credited with its own DEPOSIT.
func TestInternalTransferOnGeth(t *testing.T) {
	ctx := context.Background()
	node, user := startGeth(t, 10)
	deployed, err := node.Transact(ctx, user, nil, nil, common.FromHex(contracts.ForwarderMetaData.Bin))
	if err != nil || deployed.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy forwarder: %v", err)
	}
	forwarder := deployed.ContractAddress
	network := chain.Network{ChainID: node.ChainID, Name: "geth dev", RPCURLs: []string{node.URL}, Confirmations: 2, NativeSymbol: "ETH",
		NativeDecimals: 18, BankrollAddress: newAddress(t), TraceInternalTransfers: true}
	env := apptest.Start(t, apptest.Options{ScanInterval: 200 * time.Millisecond, Chains: []chain.Network{network}})
	recv := hooktest.New(t)
	_, key := recv.Operator(t, env, domain.OperatorSettings{})
	sid, _ := openSession(t, env.URL, "deposit", key,
		`{"externalUserId":"safe-owner","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"15.00"}`)
	addr := depositAddress(t, env.URL, sid, "ETH")

	paid, err := node.Transact(ctx, user, &forwarder, eth(5),
		contracts.NewForwarder().PackForward([]common.Address{addr}, []*big.Int{eth(5)}))
	if err != nil || paid.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("forward: %v", err)
	}

	// geth serves the call tracer over HTTP, by block hash and by transaction.
	c := chain.Dial(network, nil)
	defer c.Close()
	traces, err := c.TraceBlock(ctx, paid.BlockHash)
	if err != nil {
		t.Fatalf("debug_traceBlockByHash: %v", err)
	}
	root, err := c.TraceTransaction(ctx, paid.TxHash)
	if err != nil {
		t.Fatalf("debug_traceTransaction: %v", err)
	}
	var fromBlock []chain.InternalTransfer
	for _, tr := range traces {
		if tr.TxHash == paid.TxHash {
			fromBlock = chain.InternalTransfers(tr.Root)
		}
	}
	fromTx := chain.InternalTransfers(root)
	for _, got := range [][]chain.InternalTransfer{fromBlock, fromTx} {
		if len(got) != 1 || got[0].To != addr || got[0].From != forwarder || got[0].Value.Cmp(eth(5)) != 0 || got[0].Reverted {
			t.Fatalf("internal transfers %+v", got)
		}
	}

	ev := recv.Await(1, 90*time.Second)[0].Form
	want := map[string]string{"event": "DEPOSIT", "type": "NATIVE", "transactionHash": paid.TxHash.Hex(), "grossAmount": eth(5).String(),
		"idempotencyKey": deposit.IdempotencyKey(node.ChainID, paid.TxHash, -2), "externalUserId": "safe-owner", "contractAddress": "null"}
	for k, v := range want {
		if ev.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, ev.Get(k), v)
		}
	}
	var n int
	if err := env.Pool.QueryRow(ctx, `SELECT count(*) FROM deposits`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d deposits, want 1", n)
	}
}
