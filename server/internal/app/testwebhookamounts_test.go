package app_test

import (
	"net/http"
	"net/url"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
)

// TestTestWebhookAmountsAreAsReal: a test event carries the amounts a real one would (the spec:
// identical but for test=true). What was seen: a test WITHDRAW_COMPLETE priced the session in
// ETH rounded up (10 USD at 3000 USD an ETH sent "0.003333333333333334") where the withdrawal
// pays it rounded down ("0.003333333333333333", the quote and WITHDRAW_REQUEST); a test DEPOSIT
// in an EUR session valued 0.0000012345679 ETH (0.0037037037 USD) at "0.003408" EUR from its
// USD value rounded first, where a real DEPOSIT carries the exact value rounded once
// ("0.003407").
func TestTestWebhookAmountsAreAsReal(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	_, key := hooks.Operator(t, env, domain.OperatorSettings{})
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)

	wsid := restSession(t, env, key, "withdraw", "tw-amounts", "USD")
	quote, err := widget.QuoteWithdrawal(t.Context(), &cofferv1.QuoteWithdrawalRequest{Sid: wsid, Currency: "ETH", ChainId: 1337})
	if err != nil {
		t.Fatal(err)
	}
	if status, data := restOutcome(t, env, "POST", "/session/"+wsid+"/test-webhook", key, `{"currency":"ETH","chainId":1337}`); status != 200 {
		t.Fatalf("test WITHDRAW_COMPLETE: %d %v", status, data)
	}
	complete := onlyTest(t, hooks, "WITHDRAW_COMPLETE")
	if got, want := complete.Get("cryptoAmountSent"), quote.GetCryptoAmount(); got != want || want != "0.003333333333333333" {
		t.Errorf("test WITHDRAW_COMPLETE cryptoAmountSent %s, the withdrawal pays %s (want 0.003333333333333333)", got, want)
	}
	if got, want := complete.Get("amountInUsd"), quote.GetAmountInUsd(); got != want {
		t.Errorf("test WITHDRAW_COMPLETE amountInUsd %s, the withdrawal's %s", got, want)
	}

	dsid := restSession(t, env, key, "deposit", "tw-amounts", "EUR")
	if status, data := restOutcome(t, env, "POST", "/session/"+dsid+"/test-webhook", key,
		`{"amount":"0.0000012345679","currency":"ETH","chainId":1337}`); status != 200 {
		t.Fatalf("test DEPOSIT: %d %v", status, data)
	}
	dep := onlyTest(t, hooks, "DEPOSIT")
	for field, want := range map[string]string{"amount": "1234567900000", "amountInDollar": "0.003704", "amountInLocalCurrency": "0.003407",
		"currentRate": "0.92", "feeInDollar": "0.000000"} {
		if got := dep.Get(field); got != want {
			t.Errorf("test DEPOSIT %s %s, a real one carries %s", field, got, want)
		}
	}
}

// TestTestWebhookRefusedOverrideSpendsNoPlace: a test webhook refused for its body (an amount
// with more decimals than the token has, an unknown currency) sends nothing and takes none of
// the operator's 5 a minute. What was seen: the place was taken before the body was checked, so
// five mistyped amounts left the operator RATE_LIMITED for a minute.
func TestTestWebhookRefusedOverrideSpendsNoPlace(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	_, key := hooks.Operator(t, env, domain.OperatorSettings{})
	sid := restSession(t, env, key, "deposit", "tw-refused", "USD")
	for _, body := range []string{
		`{"amount":"1.1234567","currency":"USDT","chainId":1337}`,
		`{"amount":"1","currency":"DOGE","chainId":1337}`,
		`{"amount":"1","currency":"USDT","chainId":999}`,
		`{"amount":"1.1234567","currency":"USDC","chainId":1337}`,
		`{"amount":"0.0000000000000000001","currency":"ETH","chainId":1337}`,
		`{"amount":"1.0000001","currency":"USDT","chainId":1337}`,
	} {
		if status, data := restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key, body); status != 400 ||
			data["code"] != "INVALID_ARGUMENT" {
			t.Errorf("%s: %d %v, want 400 INVALID_ARGUMENT", body, status, data)
		}
	}
	// A withdraw session's override is fiat: less than a smallest unit of the token is no withdrawal.
	wsid := restSession(t, env, key, "withdraw", "tw-refused", "USD")
	if status, data := restOutcome(t, env, "POST", "/session/"+wsid+"/test-webhook", key,
		`{"amount":"0.0000001","currency":"USDT","chainId":1337}`); status != 400 || data["code"] != "INVALID_ARGUMENT" ||
		data["field"] != "amount" {
		t.Errorf("a WITHDRAW_COMPLETE of less than a USDT unit: %d %v, want 400 INVALID_ARGUMENT naming amount", status, data)
	}
	if status, data := restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key, ""); status != 200 || data["delivered"] != true {
		t.Errorf("a valid test webhook after refused ones: %d %v, want 200 and delivered", status, data)
	}
	if n := len(hooks.Attempts()); n != 1 {
		t.Errorf("the receiver saw %d requests, want 1 (refused calls send nothing)", n)
	}
}

// onlyTest is the one test event of a type the receiver got (test webhooks are sent before
// their call answers).
func onlyTest(t *testing.T, hooks *hooktest.Receiver, event string) url.Values {
	t.Helper()
	got := hooks.Matching(event, "test", "true")
	if len(got) != 1 {
		t.Fatalf("%d test %s webhooks, want 1", len(got), event)
	}
	return got[0].Form
}

// TestTestWebhookDestinationIsARealOne: a test WITHDRAW_COMPLETE's address override is checked
// as a real withdrawal's destination is, on both transports, so a test event never carries an
// address no real one could (the spec: identical but for test=true). What was seen: the zero
// address and 0xF3A4…55AB6 (a mixed-case address whose EIP-55 checksum is wrong, which
// /withdraw/direct-transfer refuses with "did you mean 0xF3A4…55Ab6?") were sent as
// WITHDRAW_COMPLETE, the latter silently rewritten to the checksummed form; so was the USDT
// token contract, which no withdrawal pays.
func TestTestWebhookDestinationIsARealOne(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	hooks := hooktest.New(t)
	_, key := hooks.Operator(t, env, domain.OperatorSettings{})
	sessions := cofferv1connect.NewSessionServiceClient(http.DefaultClient, env.URL)
	sid := restSession(t, env, key, "withdraw", "tw-destination", "USD")

	refused := []struct{ name, address string }{
		{"the zero address", "0x0000000000000000000000000000000000000000"},
		{"a wrong EIP-55 checksum", "0xF3A46e8528E993282AE75AF007779E1cc6555AB6"},
		{"the USDT token contract", apptest.TestChains()[0].Tokens[0].ContractAddress.Hex()},
	}
	for _, c := range refused {
		status, data := restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key, `{"address":"`+c.address+`"}`)
		if status != 400 || data["code"] != "INVALID_ARGUMENT" || data["field"] != "address" {
			t.Errorf("REST, %s: %d %v, want 400 INVALID_ARGUMENT naming address", c.name, status, data)
		}
		_, err := sessions.SendTestWebhook(withBearer(t.Context(), key), &cofferv1.SendTestWebhookRequest{Sid: sid, Address: &c.address})
		wantConnectError(t, "Connect, "+c.name, err, connect.CodeInvalidArgument, "INVALID_ARGUMENT")
	}
	if n := len(hooks.Attempts()); n != 0 {
		t.Fatalf("the receiver saw %d requests for refused destinations, want none", n)
	}

	// An all-lowercase address is accepted, as a withdrawal takes it, and sent checksummed.
	if status, data := restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key,
		`{"address":"0xf3a46e8528e993282ae75af007779e1cc6555ab6"}`); status != 200 || data["delivered"] != true {
		t.Fatalf("a lowercase destination: %d %v, want 200 and delivered", status, data)
	}
	if got := onlyTest(t, hooks, "WITHDRAW_COMPLETE").Get("address"); got != "0xF3A46e8528E993282AE75AF007779E1cc6555Ab6" {
		t.Errorf("test WITHDRAW_COMPLETE address %s, want the EIP-55 form 0xF3A46e8528E993282AE75AF007779E1cc6555Ab6", got)
	}
}
