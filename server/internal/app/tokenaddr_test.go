package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestDepositAddressPerCurrency: on a chain that sweeps with EIP-7702, GetDepositAddress
// (Connect) and POST /depositor/address (REST) answer a token with the user's token-deposit
// address, the same on both and on every call, and the native currency with the user's plain
// address, which the depositor record shows. An API replica (public keys only) assigns both.
func TestDepositAddressPerCurrency(t *testing.T) {
	t.Parallel()
	chains := apptest.TestChains()
	chains[0].SweepMethod, chains[0].SweeperAddress = chain.SweepEIP7702, common.HexToAddress("0x00000000000000000000000000000000000005e9")
	env := apptest.Start(t, apptest.Options{Role: config.RoleAPI, Chains: chains})
	_, key := env.Operator(t, domain.OperatorSettings{})
	api := newConnectAPI(http.DefaultClient, env.URL)
	sess, err := api.CreateDepositSession(t.Context(), key, depositSessionRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	connectAddress := func(currency string) *cofferv1.GetDepositAddressResponse {
		t.Helper()
		res, err := api.GetDepositAddress(t.Context(), &cofferv1.GetDepositAddressRequest{Sid: sess.Sid, Currency: currency, ChainId: 1337})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	restAddress := func(currency string) string {
		t.Helper()
		res := env.Do(t, "POST", "/depositor/address", "", `{"sid":"`+sess.Sid+`","currency":"`+currency+`","chainId":1337}`)
		defer res.Body.Close()
		var body struct {
			Data struct {
				Address string `json:"address"`
			} `json:"data"`
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("POST /depositor/address: %d %v", res.StatusCode, err)
		}
		return body.Data.Address
	}

	usdt := connectAddress("USDT")
	native := connectAddress("ETH")
	if usdt.Address == native.Address {
		t.Fatalf("USDT and ETH share %s on an eip7702 chain", usdt.Address)
	}
	if !strings.Contains(usdt.PaymentUri, "address="+usdt.Address+"&") {
		t.Fatalf("payment URI %s does not pay %s", usdt.PaymentUri, usdt.Address)
	}
	for what, got := range map[string]string{"REST USDT": restAddress("USDT"), "REST USDC": restAddress("USDC"),
		"Connect USDC": connectAddress("USDC").Address} {
		if got != usdt.Address {
			t.Errorf("%s: %s, want the token-deposit address %s", what, got, usdt.Address)
		}
	}
	if got := restAddress("ETH"); got != native.Address {
		t.Errorf("REST ETH: %s, want %s", got, native.Address)
	}
	res := env.Do(t, "GET", "/depositor/user-42/check", key, "")
	defer res.Body.Close()
	var dep struct {
		Data struct {
			DepositAddress string `json:"depositAddress"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&dep); err != nil || dep.Data.DepositAddress != native.Address {
		t.Fatalf("depositor record shows %q (%v), want the plain address %s", dep.Data.DepositAddress, err, native.Address)
	}
}
