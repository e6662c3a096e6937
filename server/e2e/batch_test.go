package e2e

import (
	"context"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestBatchedDepositsEndToEndOnGeth: on a geth --dev chain with sweepMethod eip7702, two
// users' USDT deposits go to their token-deposit addresses and are swept by the gas tank in
// EIP-7702 batches (geth's pool admits the SetCodeTx, its estimate applies the
// authorizations): no top-up, each credited once with a signed DEPOSIT whose amount reached
// the bankroll, the fees in the fee address, the addresses delegated to the Sweeper and empty.
// A native deposit goes to the user's plain address with a 21,000-gas transfer.
func TestBatchedDepositsEndToEndOnGeth(t *testing.T) {
	ctx := context.Background()
	c := startUSDTChain(t)
	bankroll, feeAddress := newAddress(t), newAddress(t)
	dbURL, masterKey, keys := apptest.NewWallet(t)
	_, gasTank := keys.GasTank()
	deployed, err := c.node.Transact(ctx, c.holder, nil, nil, batchsweep.DeployData(gasTank, bankroll, feeAddress))
	if err != nil {
		t.Fatal(err)
	}
	sweeper := deployed.ContractAddress
	env := apptest.Start(t, apptest.Options{DatabaseURL: dbURL, MasterKey: masterKey, ScanInterval: 200 * time.Millisecond,
		Chains: []chain.Network{{ChainID: c.node.ChainID, Name: "geth dev", RPCURLs: []string{c.node.URL}, Confirmations: 2,
			NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: bankroll, FeeAddress: feeAddress,
			SweepMethod: chain.SweepEIP7702, SweeperAddress: sweeper,
			Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: c.usdt, Decimals: 6}}}}})
	c.fund(t, gasTank)
	recv := hooktest.New(t)
	fee := int32(100) // 1%
	_, key := recv.Operator(t, env, domain.OperatorSettings{DepositFeeBps: &fee})

	var tokenAddrs []common.Address
	var nativeAddr common.Address
	for i, user := range []string{"player-1", "player-2"} {
		sid, _ := openSession(t, env.URL, "deposit", key,
			`{"externalUserId":"`+user+`","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"20.00"}`)
		token := rest(t, "POST", env.URL+"/depositor/address", "", `{"sid":"`+sid+`","currency":"USDT","chainId":1337}`)
		native := rest(t, "POST", env.URL+"/depositor/address", "", `{"sid":"`+sid+`","currency":"ETH","chainId":1337}`)
		if token["address"] == native["address"] {
			t.Fatalf("%s: one address for USDT and ETH on an eip7702 chain", user)
		}
		tokenAddrs = append(tokenAddrs, common.HexToAddress(token["address"].(string)))
		if i == 0 {
			nativeAddr = common.HexToAddress(native["address"].(string))
		}
	}
	for i, a := range tokenAddrs {
		c.sendUSDT(t, a, int64(20_000_000*(i+1)))
	}
	// A plain 21,000-gas ETH transfer, as exchanges send.
	nonce, err := c.node.Client.PendingNonceAt(ctx, c.holder.Address)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(1e9)
	head, err := c.node.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx := types.MustSignNewTx(c.holder.Key, types.LatestSignerForChainID(big.NewInt(c.node.ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(c.node.ChainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas: 21_000, To: &nativeAddr, Value: eth(300)})
	if err := c.node.Client.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}

	events := recv.Await(3, 120*time.Second)
	if len(events) != 3 {
		t.Fatalf("%d DEPOSIT events, want 3", len(events))
	}
	// 1% of 20 and 40 USDT: the DEPOSITs' amounts reached the bankroll, their fees the fee address.
	if got, want := c.usdtOf(t, bankroll).Int64(), int64(59_400_000); got != want {
		t.Fatalf("bankroll holds %d USDT units, want the net %d", got, want)
	}
	if got, want := c.usdtOf(t, feeAddress).Int64(), int64(600_000); got != want {
		t.Fatalf("the fee address holds %d USDT units, want the fees %d", got, want)
	}
	var amounts int64
	for _, ev := range events {
		if ev.Form.Get("type") == "ERC20" {
			a, _ := strconv.ParseInt(ev.Form.Get("amount"), 10, 64)
			f, _ := strconv.ParseInt(ev.Form.Get("feeAmount"), 10, 64)
			if g, _ := strconv.ParseInt(ev.Form.Get("grossAmount"), 10, 64); a+f != g || f != g/100 {
				t.Fatalf("DEPOSIT amount %d fee %d gross %d", a, f, g)
			}
			amounts += a
		}
	}
	if amounts != 59_400_000 {
		t.Fatalf("the ERC20 DEPOSITs' amounts add up to %d, the bankroll received 59400000", amounts)
	}
	for _, a := range tokenAddrs {
		if left := c.usdtOf(t, a); left.Sign() != 0 {
			t.Fatalf("%s keeps %v USDT", a.Hex(), left)
		}
		code, err := c.node.Client.CodeAt(ctx, a, nil)
		if err != nil || !batchsweep.Delegated(code, sweeper) {
			t.Fatalf("%s not delegated to the Sweeper: %x %v", a.Hex(), code, err)
		}
		if bal, _ := c.node.Client.BalanceAt(ctx, a, nil); bal.Sign() != 0 {
			t.Fatalf("%s holds %v wei of dust", a.Hex(), bal)
		}
	}
	if n := testdb.Count(ctx, t, env.Pool, `SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 0 {
		t.Fatalf("%d gas top-ups on an eip7702 chain", n)
	}
	if n := testdb.Count(ctx, t, env.Pool, `SELECT count(*) FROM chain_txs WHERE purpose = 'sweep-batch' AND state = 'mined'`); n < 1 {
		t.Fatal("no batch mined")
	}
	if n := testdb.Count(ctx, t, env.Pool, `SELECT count(*) FROM deposits WHERE status = 'CREDITED'`); n != 3 {
		t.Fatalf("%d deposits credited, want 3", n)
	}
}
