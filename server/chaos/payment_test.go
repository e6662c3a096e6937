package chaos

import (
	"bytes"
	"context"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/cofferhq/coffer/server/internal/gethdev"
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
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), http.MethodPost, node.URL, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		answer, _ := io.ReadAll(res.Body)
		if strings.Contains(string(body), "eth_sendRawTransaction") {
			end()
			time.Sleep(200 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(proxy.Close)
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
