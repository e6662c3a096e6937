package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// devAnswer is POST /dev/pay's envelope.
type devAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Code     string `json:"code"`
		Field    string `json:"field"`
		Hash     string `json:"hash"`
		To       string `json:"to"`
		Currency string `json:"currency"`
		Amount   string `json:"amount"`
	} `json:"data"`
}

func devPay(t *testing.T, env *apptest.Env, body string) (int, devAnswer) {
	t.Helper()
	res := env.Do(t, http.MethodPost, "/dev/pay", "", body)
	defer res.Body.Close()
	var out devAnswer
	if res.StatusCode != http.StatusNotFound {
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
	}
	return res.StatusCode, out
}

func openSession(t *testing.T, env *apptest.Env, op domain.Operator, kind domain.SessionKind) string {
	t.Helper()
	o, err := env.Services.Sessions.Open(t.Context(), op, kind, session.Input{ExternalUserID: "dev-wallet-user", Lang: "en",
		FiatCurrency: "USD", UserBalance: "100", Amount: "25"})
	if err != nil {
		t.Fatal(err)
	}
	return o.Session.ID
}

// The dev wallet (issue 14): `coffer dev` (a process with the faucet's key) pays a deposit
// session's address from its faucet on POST /dev/pay, and tells the widget so; the deposit is
// then detected like any other. Bad requests send nothing.
func TestDevWalletPaysTheSessionsAddress(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: 200 * time.Millisecond})
	network := testfactory.DevNetwork(dev, 3)
	testfactory.Fund(ctx, t, dev, dev.FaucetAddress(), 0, 1_000_000_000_000) // the faucet's USDT
	env := apptest.Start(t, apptest.Options{ScanInterval: 100 * time.Millisecond, Chains: []chain.Network{network}, DevFaucetKey: dev.Faucet()})
	op, _ := env.Operator(t, domain.OperatorSettings{})
	deposit, withdraw := openSession(t, env, op, session.Deposit), openSession(t, env, op, session.Withdraw)

	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	got, err := widget.GetSession(ctx, &cofferv1.GetSessionRequest{Sid: deposit})
	if err != nil || !got.GetDevWallet() {
		t.Fatalf("GetSession on coffer dev: devWallet %v, %v; want true", got.GetDevWallet(), err)
	}
	addr, err := widget.GetDepositAddress(ctx, &cofferv1.GetDepositAddressRequest{Sid: deposit, Currency: "USDT", ChainId: dev.ChainID()})
	if err != nil {
		t.Fatal(err)
	}

	client := chain.Dial(network, nil)
	t.Cleanup(client.Close)
	nonce, _ := client.Nonce(ctx, dev.FaucetAddress(), true)
	for _, tc := range []struct {
		body        string
		status      int
		code, field string
	}{
		{`{"sid":"` + deposit + `","currency":"USDT","chainId":1337,"amount":"1.0000001"}`, 400, "INVALID_ARGUMENT", "amount"},
		{`{"sid":"` + deposit + `","currency":"USDT","chainId":1337,"amount":"0"}`, 400, "INVALID_ARGUMENT", "amount"},
		{`{"sid":"` + deposit + `","currency":"DAI","chainId":1337,"amount":"1"}`, 400, "INVALID_ARGUMENT", "currency"},
		{`{"sid":"` + deposit + `","currency":"USDT","chainId":5,"amount":"1"}`, 400, "INVALID_ARGUMENT", "chainId"},
		{`{"sid":"` + withdraw + `","currency":"USDT","chainId":1337,"amount":"1"}`, 403, "FORBIDDEN", ""},
		{`{"sid":"4f1c2e3d-0000-4000-8000-000000000000","currency":"USDT","chainId":1337,"amount":"1"}`, 401, "UNAUTHENTICATED", ""},
	} {
		status, out := devPay(t, env, tc.body)
		if status != tc.status || out.Status != "error" || out.Data.Code != tc.code || out.Data.Field != tc.field {
			t.Errorf("POST /dev/pay %s: %d %+v, want %d %s on %q", tc.body, status, out, tc.status, tc.code, tc.field)
		}
	}
	if after, _ := client.Nonce(ctx, dev.FaucetAddress(), true); after != nonce {
		t.Fatalf("refused requests sent %d transactions", after-nonce)
	}

	status, out := devPay(t, env, `{"sid":"`+deposit+`","currency":"USDT","chainId":1337,"amount":"25"}`)
	if status != http.StatusOK || out.Status != "success" || out.Data.To != addr.GetAddress() || out.Data.Amount != "25.000000" {
		t.Fatalf("POST /dev/pay: %d %+v, want 25.000000 USDT to %s", status, out, addr.GetAddress())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := widget.ListSessionDeposits(ctx, &cofferv1.ListSessionDepositsRequest{Sid: deposit})
		if err != nil {
			t.Fatal(err)
		}
		if d := list.GetDeposits(); len(d) == 1 && d[0].GetTransactionHash() == out.Data.Hash && d[0].GetAmount() == "25.000000" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dev wallet's payment %s was not detected: %v", out.Data.Hash, list.GetDeposits())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// `coffer serve` (whose configuration cannot name a faucet) has no /dev/pay and tells the
// widget nothing of a dev wallet.
func TestServeHasNoDevWallet(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, _ := env.Operator(t, domain.OperatorSettings{})
	sid := openSession(t, env, op, session.Deposit)
	got, err := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL).GetSession(t.Context(), &cofferv1.GetSessionRequest{Sid: sid})
	if err != nil || got.GetDevWallet() {
		t.Fatalf("GetSession on coffer serve: devWallet %v, %v; want false", got.GetDevWallet(), err)
	}
	if status, _ := devPay(t, env, `{"sid":"`+sid+`","currency":"USDT","chainId":1337,"amount":"1"}`); status != http.StatusNotFound {
		t.Errorf("POST /dev/pay on coffer serve: %d, want 404", status)
	}
}
