package app_test

import (
	"math/big"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestMissedDepositReplayOverTheWire: one transaction pays the deposit addresses of two
// operators' users (a contract sends two token transfers) before the scanner watches the
// chain, so it is missed. Over AdminService.ReplayDeposit an operator's admin replays it and
// gets its own operator's deposit only (the other's stays missed, and is not shown); the other
// operator's admin then gets the other; a repeat, and the service team's replay of both, are
// already known, and still name the admin who replayed each. Each operator's endpoint, down
// when the DEPOSITs first go out, then up, receives exactly one signed DEPOSIT each,
// attributed to the session that handed the address out before the payment, every attempt
// with the same webhook-id. Malformed and unknown hashes and unknown chains are refused with
// their codes, and change nothing.
func TestMissedDepositReplayOverTheWire(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Blocks only as the test seals them until the payment is in: a busy machine's slow start
	// must not let the chain reach the scanner's first block first.
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	network := testfactory.DevNetwork(dev, 3)
	head, err := dev.Client().BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := head + 50 // well past every block the setup and the payment seal
	network.StartBlock = &start
	databaseURL, masterKey, keys := apptest.NewWallet(t)
	_, gasTank := keys.GasTank()
	testfactory.Fund(ctx, t, dev, gasTank, 10, 0)
	fw, err := dev.DeployForwarder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mint, err := dev.Mint(ctx, "USDT", fw, big.NewInt(100_000_000))
	if err != nil {
		t.Fatal(err)
	}
	payerKey, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(payerKey.PublicKey)
	testfactory.Fund(ctx, t, dev, payer, 1, 0)
	if _, err := dev.Mine(ctx, mint); err != nil {
		t.Fatal(err)
	}

	env := apptest.Start(t, apptest.Options{Chains: []chain.Network{network}, DatabaseURL: databaseURL, MasterKey: masterKey,
		WebhookRetries: jobs.RetrySchedule{300 * time.Millisecond}})
	recv := hooktest.New(t)
	a, keyA := recv.Operator(t, env, domain.OperatorSettings{})
	b, keyB := recv.Operator(t, env, domain.OperatorSettings{})
	recv.SetDown(true) // the operators' endpoint is down when the DEPOSITs first go out
	whoA, adminA := env.Admin(t, a.ID)
	whoB, adminB := env.Admin(t, b.ID)
	_, team := env.Admin(t, "")
	api := newConnectAPI(http.DefaultClient, env.URL)
	session := func(key string) (ref string, addr common.Address) {
		t.Helper()
		s, err := api.CreateDepositSession(ctx, key, depositSessionRequest(""))
		if err != nil {
			t.Fatal(err)
		}
		res, err := api.GetDepositAddress(ctx, &cofferv1.GetDepositAddressRequest{Sid: s.Sid, Currency: "USDT", ChainId: dev.ChainID()})
		if err != nil {
			t.Fatal(err)
		}
		return s.SessionRef, common.HexToAddress(res.Address)
	}
	refA, addrA := session(keyA)
	refB, addrB := session(keyB)

	client := chain.Dial(network, nil)
	t.Cleanup(client.Close)
	usdt, _ := dev.Token("USDT")
	data := contracts.NewForwarder().PackForwardTokens(usdt.Address, []common.Address{addrA, addrB},
		[]*big.Int{big.NewInt(5_000_000), big.NewInt(7_000_000)})
	tip, feeCap, err := client.Fees(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(dev.ChainID())
	tx := types.MustSignNewTx(payerKey, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID, Nonce: 0,
		GasTipCap: tip, GasFeeCap: feeCap, Gas: 300_000, To: &fw, Data: data})
	if err := client.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	receipts, err := dev.Mine(ctx, tx.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if r := receipts[0]; r.Status != types.ReceiptStatusSuccessful || r.BlockNumber.Uint64() >= start {
		t.Fatalf("payment: status %d in block %d, want success before block %d", r.Status, r.BlockNumber, start)
	}
	// From now on the chain moves on by itself, past start.
	sealEvery(t, dev, 200*time.Millisecond)
	for { // the payment's confirmations
		if h, err := client.BlockNumber(ctx); err == nil && h >= receipts[0].BlockNumber.Uint64()+3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	replay := func(token string, chainID int64, hash string) (*cofferv1.ReplayDepositResponse, error) {
		return admins.ReplayDeposit(withBearer(ctx, token), &cofferv1.ReplayDepositRequest{ChainId: chainID, TxHash: hash})
	}
	// by[i] is who the audit names as having replayed deposit i: the admin whose replay
	// recorded it, whoever repeats the replay later.
	want := func(who, token string, known bool, by []domain.Admin, addrs ...common.Address) []int64 {
		t.Helper()
		res, err := replay(token, dev.ChainID(), tx.Hash().Hex())
		if err != nil || res.AlreadyKnown != known || len(res.Deposits) != len(addrs) {
			t.Fatalf("%s replays: %v %v; want %d deposits, already known %v", who, res, err, len(addrs), known)
		}
		ids := make([]int64, len(addrs))
		for i, d := range res.Deposits {
			if common.HexToAddress(d.Address) != addrs[i] || d.TransactionHash != tx.Hash().Hex() || !d.Manual {
				t.Errorf("%s replays: deposit %d to %s, want a manual deposit to %s", who, i, d.Address, addrs[i].Hex())
			}
			if want := string(domain.AdminActor(by[i].ID)); d.ReplayedBy != want {
				t.Errorf("%s replays: deposit %d replayed by %q, want %q", who, i, d.ReplayedBy, want)
			}
			ids[i] = d.DepositId
		}
		return ids
	}
	idA := want("A's admin", adminA, false, []domain.Admin{whoA}, addrA)
	if again := want("A's admin again", adminA, true, []domain.Admin{whoA}, addrA); again[0] != idA[0] {
		t.Errorf("A's repeated replay: deposit %d, want %d", again[0], idA[0])
	}
	idB := want("B's admin", adminB, false, []domain.Admin{whoB}, addrB)
	if both := want("the service team", team, true, []domain.Admin{whoA, whoB}, addrA, addrB); both[0] != idA[0] || both[1] != idB[0] {
		t.Errorf("the service team's replay: %v, want %d and %d", both, idA[0], idB[0])
	}

	for _, c := range []struct {
		name          string
		chainID       int64
		hash          string
		code          connect.Code
		reason, field string
	}{
		{"a short hash", dev.ChainID(), "0x12", connect.CodeInvalidArgument, "INVALID_ARGUMENT", "txHash"},
		{"a hash without 0x", dev.ChainID(), tx.Hash().Hex()[2:], connect.CodeInvalidArgument, "INVALID_ARGUMENT", "txHash"},
		{"no chain", 0, tx.Hash().Hex(), connect.CodeInvalidArgument, "INVALID_ARGUMENT", "chainId"},
		{"an unknown chain", 99, tx.Hash().Hex(), connect.CodeInvalidArgument, "INVALID_ARGUMENT", "chainId"},
		{"an unknown transaction", dev.ChainID(), common.HexToHash("0x1234").Hex(), connect.CodeNotFound, "NOT_FOUND", ""},
		{"a transaction paying no deposit address", dev.ChainID(), mint.Hex(), connect.CodeFailedPrecondition, "FAILED_PRECONDITION", ""},
	} {
		_, err := replay(team, c.chainID, c.hash)
		code, reason, meta, _ := errorMeta(err)
		if code != c.code || reason != c.reason || (c.field != "" && meta["field"] != c.field) {
			t.Errorf("%s: %v (meta %v), want %v %s on %q", c.name, err, meta, c.code, c.reason, c.field)
		}
	}
	if _, err := replay(keyA, dev.ChainID(), tx.Hash().Hex()); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("an operator key on the admin API: %v, want permission denied", err)
	}

	recv.AwaitAttempts(4, 90*time.Second) // each DEPOSIT refused at least once
	recv.SetDown(false)
	for _, c := range []struct {
		ref    string
		amount string
	}{{refA, "5000000"}, {refB, "7000000"}} {
		hooks := recv.AwaitMatching(t, "DEPOSIT", "sessionRef", c.ref, 1, 90*time.Second)
		if f := hooks[0].Form; f.Get("transactionHash") != tx.Hash().Hex() || f.Get("amount") != c.amount {
			t.Errorf("DEPOSIT of session %s: %v", c.ref, f)
		}
	}
	time.Sleep(time.Second) // a second DEPOSIT would have been queued with the first
	got := recv.Matching("DEPOSIT", "transactionHash", tx.Hash().Hex())
	if len(got) != 2 || got[0].ID == got[1].ID {
		t.Fatalf("%d DEPOSITs for the transaction, want one per operator", len(got))
	}
	for i, id := range recv.Attempts() { // retries of the refused posts carried the same webhook-id
		if id != got[0].ID && id != got[1].ID {
			t.Errorf("attempt %d had webhook-id %s, not one of the two DEPOSITs' %s, %s", i+1, id, got[0].ID, got[1].ID)
		}
	}
	if n := env.Count(t, "deposits"); n != 2 {
		t.Errorf("%d deposits, want 2", n)
	}
}

// sealEvery seals a block of dev every interval until the test ends.
func sealEvery(t *testing.T, dev *devchain.Chain, interval time.Duration) {
	t.Helper()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				dev.Commit()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}
