package devpay_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/devpay"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func network(rpcURL string) chain.Network {
	return chain.Network{ChainID: 1337, Name: "Coffer Dev Chain", RPCURLs: []string{rpcURL}, Confirmations: 3, NativeSymbol: "ETH", NativeDecimals: 18,
		Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: common.HexToAddress("0x00000000000000000000000000000000000000a1"), Decimals: 6}}}
}

func TestCheckRefusesBadInput(t *testing.T) {
	t.Parallel()
	const to = "0x8ba1f109551bD432803012645Ac136ddd64DBA72"
	n := network("http://127.0.0.1:9")
	for _, tc := range []struct {
		name, to, currency, amount, field string
	}{
		{"not an address", "0x1234", "USDT", "1", "to"},
		{"no 0x", strings.TrimPrefix(to, "0x"), "USDT", "1", "to"},
		{"bad checksum", "0x8Ba1f109551bD432803012645Ac136ddd64DBA72", "USDT", "1", "to"},
		{"zero address", "0x0000000000000000000000000000000000000000", "USDT", "1", "to"},
		{"unknown currency", to, "DAI", "1", "currency"},
		{"empty currency", to, "", "1", "currency"},
		{"too many decimals", to, "USDT", "1.0000001", "amount"},
		{"too many ether decimals", to, "ETH", "0.0000000000000000001", "amount"},
		{"negative", to, "USDT", "-1", "amount"},
		{"zero", to, "USDT", "0", "amount"},
		{"zero with decimals", to, "USDT", "0.000000", "amount"},
		{"exponent", to, "USDT", "1e3", "amount"},
		{"plus sign", to, "USDT", "+1", "amount"},
		{"trailing dot", to, "USDT", "1.", "amount"},
		{"not a number", to, "USDT", "ten", "amount"},
		{"empty amount", to, "USDT", "", "amount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := devpay.Check(n, tc.to, tc.currency, tc.amount)
			if fe := fault.As(err); err == nil || fe.Code != fault.InvalidArgument || fe.Field != tc.field {
				t.Fatalf("Check(%q, %q, %q) = %v, want INVALID_ARGUMENT on %s", tc.to, tc.currency, tc.amount, err, tc.field)
			}
		})
	}
}

func TestCheckReadsAmountsExactly(t *testing.T) {
	t.Parallel()
	n := network("http://127.0.0.1:9")
	for _, tc := range []struct{ currency, amount, units, formatted string }{
		{"USDT", "25", "25000000", "25.000000"},
		{"usdt", "0.000001", "1", "0.000001"},
		{"USDT", "1.500000", "1500000", "1.500000"},
		{"ETH", "0.05", "50000000000000000", "0.050000000000000000"},
		{"ETH", "123456789.000000000000000001", "123456789000000000000000001", "123456789.000000000000000001"},
	} {
		p, err := devpay.Check(n, "0x8ba1f109551bd432803012645ac136ddd64dba72", tc.currency, tc.amount)
		if err != nil || p.Units.String() != tc.units || p.Amount() != tc.formatted {
			t.Errorf("Check(%s %s) = %v %s, %v; want %s units (%s)", tc.amount, tc.currency, p.Units, p.Amount(), err, tc.units, tc.formatted)
		}
	}
}

// devFaucet is a dev chain whose faucet holds USDT, and the faucet over its JSON-RPC.
func devFaucet(t *testing.T) (*devchain.Chain, *devpay.Faucet, *chain.Client) {
	t.Helper()
	ctx := t.Context()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: 100 * time.Millisecond})
	testfactory.Fund(ctx, t, dev, dev.FaucetAddress(), 0, 1_000_000_000)
	n := network(dev.RPCURL())
	usdt, _ := dev.Token("USDT")
	n.Tokens[0].ContractAddress = usdt.Address
	_, client := testfactory.Dial(t, n)
	f := devpay.New(dev.Faucet(), n, client)
	f.Poll = 20 * time.Millisecond
	return dev, f, client
}

// Payments from one faucet at once (the button and `coffer dev pay` together) each take their
// own nonce and all arrive.
func TestPayEtherAndTokens(t *testing.T) {
	t.Parallel()
	dev, f, client := devFaucet(t)
	ctx := t.Context()
	to := common.HexToAddress("0x52908400098527886E0F7030069857D2E4169EE7")
	usdt, _ := dev.Token("USDT")
	var wg sync.WaitGroup
	receipts := make([]devpay.Receipt, 6)
	for i := range receipts {
		currency, amount := "USDT", "1.25"
		if i%2 == 1 {
			currency, amount = "ETH", "0.5"
		}
		wg.Go(func() {
			p, err := f.Check(to.Hex(), currency, amount)
			if err != nil {
				t.Error(err)
				return
			}
			if receipts[i], err = f.Pay(ctx, p); err != nil {
				t.Errorf("pay %s %s: %v", amount, currency, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if r := receipts[0]; r.From != dev.FaucetAddress() || r.To != to || r.Currency != "USDT" || r.Amount != "1.250000" || r.Block == 0 || r.ChainID != 1337 {
		t.Errorf("receipt %+v", r)
	}
	if got := testfactory.TokenBalance(ctx, t, client, usdt.Address, to); got.Cmp(big.NewInt(3_750_000)) != 0 {
		t.Errorf("USDT received: %s, want 3750000", got)
	}
	if got, _ := client.Balance(ctx, to); got.Cmp(new(big.Int).Mul(big.NewInt(15), big.NewInt(1e17))) != 0 {
		t.Errorf("ETH received: %s wei, want 1.5 ether", got)
	}
	// More than the faucet holds: refused before anything is sent, with the node's reason.
	p, _ := f.Check(to.Hex(), "USDT", "1000000")
	if _, err := f.Pay(ctx, p); fault.As(err).Code != fault.FailedPrecondition || !strings.Contains(fault.As(err).Message, "cannot pay 1000000.000000 USDT") {
		t.Errorf("pay more than the faucet holds: %v", err)
	}
}

func TestPayWithTheChainDown(t *testing.T) {
	t.Parallel()
	n := network("http://127.0.0.1:9")
	_, client := testfactory.Dial(t, n)
	_, dev, _ := devFaucetKey(t)
	f := devpay.New(dev, n, client)
	p, _ := f.Check("0x52908400098527886E0F7030069857D2E4169EE7", "ETH", "1")
	_, err := f.Pay(t.Context(), p)
	if fe := fault.As(err); fe.Code != fault.Unavailable || !strings.Contains(fe.Message, "is coffer dev running?") {
		t.Fatalf("pay with no chain: %v", err)
	}
}

// The handler pays the session's deposit address; bad input sends nothing.
func TestHandler(t *testing.T) {
	t.Parallel()
	dev, f, client := devFaucet(t)
	ctx := t.Context()
	deposit := common.HexToAddress("0x000000000000000000000000000000000000d3e0")
	const sid = "6c0f3b0e-8a57-4f7e-9f3c-2a1b3c4d5e6f"
	addresses := func(_ context.Context, s, currency string, chainID int64) (common.Address, error) {
		if s != sid {
			return common.Address{}, fault.New(fault.Unauthenticated, "unknown session")
		}
		if !strings.EqualFold(currency, "USDT") && !strings.EqualFold(currency, "ETH") {
			return common.Address{}, fault.Invalid("currency", "not offered")
		}
		return deposit, nil
	}
	srv := httptest.NewServer(devpay.Handler(map[int64]*devpay.Faucet{1337: f}, addresses, nil))
	t.Cleanup(srv.Close)
	post := func(body string) (int, map[string]any) {
		t.Helper()
		res, err := http.Post(srv.URL, "application/json", strings.NewReader(body)) //nolint:noctx // test
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, out
	}
	nonce, _ := client.Nonce(ctx, dev.FaucetAddress(), true)
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"sid":"` + sid + `","currency":"USDT","chainId":1337,"amount":"1.0000001"}`, 400, "INVALID_ARGUMENT"},
		{`{"sid":"` + sid + `","currency":"USDT","chainId":1337,"amount":"0"}`, 400, "INVALID_ARGUMENT"},
		{`{"sid":"` + sid + `","currency":"USDT","chainId":1337,"amount":"-2"}`, 400, "INVALID_ARGUMENT"},
		{`{"sid":"` + sid + `","currency":"DAI","chainId":1337,"amount":"2"}`, 400, "INVALID_ARGUMENT"},
		{`{"sid":"` + sid + `","currency":"USDT","chainId":1,"amount":"2"}`, 400, "INVALID_ARGUMENT"},
		{`{"sid":"00000000-0000-4000-8000-000000000000","currency":"USDT","chainId":1337,"amount":"2"}`, 401, "UNAUTHENTICATED"},
		{`{"sid":"` + sid + `","currency":"USDT","chainId":1337,"amount":"2","extra":1}`, 400, "INVALID_ARGUMENT"},
		{`not json`, 400, "INVALID_ARGUMENT"},
	} {
		status, out := post(tc.body)
		data, _ := out["data"].(map[string]any)
		if status != tc.status || out["status"] != "error" || data["code"] != tc.code {
			t.Errorf("POST %s: %d %v, want %d %s", tc.body, status, out, tc.status, tc.code)
		}
	}
	if after, _ := client.Nonce(ctx, dev.FaucetAddress(), true); after != nonce {
		t.Fatalf("refused requests sent %d transactions", after-nonce)
	}
	status, out := post(`{"sid":"` + sid + `","currency":"USDT","chainId":1337,"amount":"2.5"}`)
	data, _ := out["data"].(map[string]any)
	if status != 200 || out["status"] != "success" || data["to"] != deposit.Hex() || data["amount"] != "2.500000" || !strings.HasPrefix(data["hash"].(string), "0x") {
		t.Fatalf("pay: %d %v", status, out)
	}
	usdt, _ := dev.Token("USDT")
	if got := testfactory.TokenBalance(ctx, t, client, usdt.Address, deposit); got.Cmp(big.NewInt(2_500_000)) != 0 {
		t.Errorf("deposit address holds %s USDT units, want 2500000", got)
	}
}

func devFaucetKey(t *testing.T) (common.Address, *ecdsa.PrivateKey, error) {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey), k, nil
}
