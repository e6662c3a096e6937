package chaos

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestPaymentSentAsTheLoadEndsIsRecorded: what was seen (make chaos, seed 1, on d07a555): the
// load ended while a payment's eth_sendRawTransaction was on its way; the node took the
// transaction, the harness got "context canceled", did not record the payment, and the check
// of the deposits then failed on a credited deposit "no payment the run made". A send whose
// answer is lost now counts as sent when the node has the transaction: pay waits for its
// receipt and the payment is recorded.
func TestPaymentSentAsTheLoadEndsIsRecorded(t *testing.T) {
	t.Parallel()
	node := gethdev.Start(t, 500*time.Millisecond)
	acct, err := node.NewAccount(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	load, end := context.WithCancel(t.Context())
	defer end()
	// Forwards every call to the node; the raw transaction's answer comes only after the load
	// has ended.
	proxy := testfactory.NewNodeProxy(t, node.URL)
	proxy.Rewrite(func(call testfactory.NodeCall, answer []byte) []byte {
		if call.Method == "eth_sendRawTransaction" {
			end()
			time.Sleep(200 * time.Millisecond)
		}
		return answer
	})
	client, err := ethclient.Dial(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	s := &Stack{Node: &gethdev.Node{URL: proxy.URL, ChainID: node.ChainID, Client: client}, ChainID: node.ChainID}
	p := &payer{key: acct.Key, addr: acct.Address}
	to := common.HexToAddress("0x00000000000000000000000000000000000000c4")
	r, err := p.pay(load, s, Asset{Symbol: "ETH"}, to, big.NewInt(1e15))
	if err != nil || r == nil || load.Err() == nil {
		t.Fatalf("a payment the node took while the load ended: %v, %v (load ended: %v); want its receipt", r, err, load.Err())
	}
	if got, err := node.Client.BalanceAt(t.Context(), to, nil); err != nil || got.Cmp(big.NewInt(1e15)) != 0 {
		t.Fatalf("the destination holds %v (%v), want the payment", got, err)
	}
}
