// Package e2e runs Coffer against a real geth --dev node: deposits from a user's wallet to a
// webhook receiver that verifies every signature with the operator SDK.
package e2e

import (
	"context"
	"math/big"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestDepositsEndToEndOnGeth(t *testing.T) {
	ctx := context.Background()
	c := startUSDTChain(t)
	node, usdt := c.node, c.usdt
	bankroll := newAddress(t)
	env := c.startCoffer(t, bankroll)
	_, gasTank := env.Services.Keys.GasTank()
	c.fund(t, gasTank)
	recv := hooktest.New(t)
	fee := int32(100) // 1%
	_, key := recv.Operator(t, env, domain.OperatorSettings{DepositFeeBps: &fee})

	sid, data := openSession(t, env.URL, "deposit", key,
		`{"externalUserId":"player-7","lang":"en","platformFiatCurrency":"EUR","userBalance":"0","amount":"46.00","operatorReference":"order-7"}`)
	sessionRef := data["sessionRef"].(string)
	tokenAddr := rest(t, "POST", env.URL+"/depositor/address", "", `{"sid":"`+sid+`","currency":"USDT","chainId":1337}`)
	nativeAddr := rest(t, "POST", env.URL+"/depositor/address", "", `{"sid":"`+sid+`","currency":"ETH","chainId":1337}`)
	if tokenAddr["address"] != nativeAddr["address"] || tokenAddr["expectedAmount"] != "50.000000" {
		t.Fatalf("addresses: %v / %v", tokenAddr, nativeAddr)
	}
	depositAddr := common.HexToAddress(tokenAddr["address"].(string))

	// The user pays: 50 USDT, then 0.5 ETH, from an ordinary wallet.
	erc20, err := node.Transact(ctx, c.holder, &usdt, nil, contracts.NewTestToken().PackTransfer(depositAddr, big.NewInt(50_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Transact(ctx, c.holder, &depositAddr, eth(500), nil); err != nil {
		t.Fatal(err)
	}

	events := recv.Await(2, 90*time.Second)
	byTx := map[string]hooktest.Hook{}
	for _, e := range events {
		byTx[e.Form.Get("transactionHash")] = e
		if _, ok := e.Form["test"]; ok || len(e.Form) != 21 {
			t.Errorf("DEPOSIT carries %d fields (test present: %v), want the spec's 20 and operatorReference", len(e.Form), ok)
		}
	}
	var deposits []domain.Deposit
	rows, _ := env.Pool.Query(ctx, `SELECT id FROM deposits ORDER BY id`)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		d, _ := store.New(env.Pool).GetDeposit(ctx, id)
		deposits = append(deposits, d)
	}
	rows.Close()
	if len(deposits) != 2 {
		t.Fatalf("%d deposits, want 2", len(deposits))
	}
	for _, d := range deposits {
		e, ok := byTx[d.TxHash]
		if !ok {
			t.Fatalf("no DEPOSIT for %s", d.TxHash)
		}
		ev := e.Parsed.(*cofferv1.DepositEvent)
		f := e.Form
		isToken := d.TxHash == erc20.TxHash.Hex()
		gross := "500000000000000000"
		if isToken {
			gross = "50000000"
		}
		want := map[string]string{
			"event": "DEPOSIT", "depositId": strconv.FormatInt(d.ID, 10), "idempotencyKey": d.IdempotencyKey,
			"externalUserId": "player-7", "sessionRef": sessionRef, "sessionAmount": "46.00", "localCurrencyCode": "EUR",
			"currentRate": "0.92", "pair": "USD/EUR", "grossAmount": gross, "chainId": "1337", "transactionHash": d.TxHash,
			"operatorReference": "order-7",
		}
		if isToken {
			// 1% of 50 USDT is the fee; 49.5 USDT is 49.5 USD and 45.54 EUR.
			want["type"], want["contractAddress"], want["amount"], want["feeAmount"] = "ERC20", usdt.Hex(), "49500000", "500000"
			want["amountInDollar"], want["amountInLocalCurrency"], want["feeInDollar"] = "49.500000", "45.540000", "0.500000"
		} else {
			want["type"], want["contractAddress"] = "NATIVE", "null"
			want["amount"], want["feeAmount"] = d.Amount.String(), d.FeeAmount.String()
		}
		for k, v := range want {
			if f.Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", want["type"], k, f.Get(k), v)
			}
		}
		if ev.DepositId != d.ID || ev.ConfirmedAt == nil || time.Since(ev.ConfirmedAt.AsTime()) > time.Minute {
			t.Errorf("parsed event: %+v", ev)
		}
		amount, _ := new(big.Int).SetString(f.Get("amount"), 10)
		fee, _ := new(big.Int).SetString(f.Get("feeAmount"), 10)
		if g, _ := new(big.Int).SetString(f.Get("grossAmount"), 10); new(big.Int).Add(amount, fee).Cmp(g) != 0 {
			t.Errorf("amount + feeAmount != grossAmount: %s + %s != %s", amount, fee, g)
		}
		if !isToken {
			// The native fee is the 1% deposit fee plus the sweep's reserved gas.
			if fee.Cmp(eth(5)) <= 0 {
				t.Errorf("native fee %s does not include the sweep gas", fee)
			}
			usd := f.Get("amountInDollar")
			if usd == "" || f.Get("feeInDollar") == "0.000000" {
				t.Errorf("native USD values: %s / %s", usd, f.Get("feeInDollar"))
			}
		}
	}
	// The bankroll received exactly the net amounts.
	bal, _ := node.Client.BalanceAt(ctx, bankroll, nil)
	for _, d := range deposits {
		if d.ContractAddress == "" && bal.Cmp(d.Amount) != 0 {
			t.Errorf("bankroll holds %s wei, want %s", bal, d.Amount)
		}
	}
	if got := c.usdtOf(t, bankroll); got.Int64() != 49_500_000 {
		t.Errorf("bankroll holds %v USDT units, want 49500000", got)
	}
}
