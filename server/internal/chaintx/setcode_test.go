package chaintx_test

// EIP-7702 batch sweeps through the engine: a SetCodeTx carrying the deposit addresses'
// authorizations keeps every guarantee of a plain transaction (stored before broadcast, sent
// at most once whatever crashes, replaced at the same nonce with the same authorizations).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// sweepFixture is a fixture whose sender (the gas tank) commands a Sweeper paying bankroll.
type sweepFixture struct {
	fixture

	sweeper, bankroll, usdt common.Address
}

const depositAmount = 1_000_000

func setupSweeper(t *testing.T) sweepFixture {
	t.Helper()
	ctx := context.Background()
	f := setup(t)
	// Deployed by another account: the gas tank's nonces stay the engine's alone.
	deployerKey, _ := crypto.GenerateKey()
	deployer := crypto.PubkeyToAddress(deployerKey.PublicKey)
	testfactory.Fund(ctx, t, f.dev, deployer, 1, 0)
	bankrollKey, _ := crypto.GenerateKey()
	s := sweepFixture{fixture: f, bankroll: crypto.PubkeyToAddress(bankrollKey.PublicKey)}
	head, err := f.dev.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(params.GWei)
	deploy := types.MustSignNewTx(deployerKey, types.LatestSignerForChainID(big.NewInt(f.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(f.dev.ChainID()), GasTipCap: tip, GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(4)), tip),
		Gas: 2_000_000, Data: batchsweep.DeployData(f.from, s.bankroll, common.Address{})})
	if err := f.dev.Client().SendTransaction(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	rs, err := f.dev.Mine(ctx, deploy.Hash())
	if err != nil || rs[0].Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy Sweeper: %v", err)
	}
	s.sweeper = rs[0].ContractAddress
	if err := batchsweep.Verify(ctx, f.dev.Client(), s.sweeper, f.from, s.bankroll, common.Address{}); err != nil {
		t.Fatal(err)
	}
	usdt, ok := f.dev.Token("USDT")
	if !ok {
		t.Fatal("the dev chain has no USDT")
	}
	s.usdt = usdt.Address
	return s
}

// deposits makes n deposit addresses (their keys in the fixture's key ring) holding
// depositAmount USDT each.
func (s sweepFixture) deposits(t *testing.T, n int) []common.Address {
	t.Helper()
	ctx := context.Background()
	out := make([]common.Address, n)
	hashes := make([]common.Hash, n)
	for i := range out {
		k, _ := crypto.GenerateKey()
		out[i] = crypto.PubkeyToAddress(k.PublicKey)
		s.keys[out[i]] = k
		h, err := s.dev.Mint(ctx, "USDT", out[i], big.NewInt(depositAmount))
		if err != nil {
			t.Fatal(err)
		}
		hashes[i] = h
	}
	if _, err := s.dev.Mine(ctx, hashes...); err != nil {
		t.Fatal(err)
	}
	return out
}

// plan makes n deposit addresses (see deposits) and builds their batch sweep (exact amounts,
// the addresses authorized in order: Plan.Authorized) and the engine request sending it, its
// gas left to the engine's estimate.
func (s sweepFixture) plan(t *testing.T, ref string, n int) (batchsweep.Plan, chaintx.Request) {
	t.Helper()
	addrs := s.deposits(t, n)
	accounts := make([]batchsweep.Account, len(addrs))
	for i, a := range addrs {
		accounts[i] = batchsweep.Account{Address: a, Assets: []batchsweep.Asset{{Token: s.usdt, Amount: big.NewInt(depositAmount)}}}
	}
	p, err := batchsweep.Build(context.Background(), s.dev.Client(), s.keys, big.NewInt(s.dev.ChainID()), s.sweeper, accounts)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Authorizations) != len(addrs) {
		t.Fatalf("plan authorizes %d of %d addresses", len(p.Authorizations), len(addrs))
	}
	return p, chaintx.Request{ChainID: s.dev.ChainID(), From: s.from, To: p.Sweeper, Data: p.Data,
		Authorizations: p.Authorizations, Purpose: "batch-sweep", Ref: ref}
}

// decode reads an attempt's stored bytes.
func decode(t *testing.T, a domain.TxAttempt) *types.Transaction {
	t.Helper()
	var tx types.Transaction
	if err := tx.UnmarshalBinary(a.Raw); err != nil {
		t.Fatal(err)
	}
	if tx.Hash().Hex() != a.Hash {
		t.Fatalf("attempt %d: stored hash %s, bytes hash to %s", a.ID, a.Hash, tx.Hash().Hex())
	}
	return &tx
}

func sameAuths(t *testing.T, got, want []types.SetCodeAuthorization) bool {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	return err1 == nil && err2 == nil && bytes.Equal(g, w)
}

// checkSetCode fails unless every attempt of stored but cancels is the plan's SetCodeTx at the
// transaction's nonce, and the row carries the plan's authorizations.
func checkSetCode(t *testing.T, stored domain.ChainTx, p batchsweep.Plan) {
	t.Helper()
	auths, err := chaintx.Authorizations(stored)
	if err != nil || !sameAuths(t, auths, p.Authorizations) {
		t.Fatalf("stored authorizations %s (%v), want the plan's %d", stored.Authorizations, err, len(p.Authorizations))
	}
	for _, a := range stored.Attempts {
		tx := decode(t, a)
		switch {
		case a.Cancel:
			continue
		case tx.Type() != types.SetCodeTxType:
			t.Fatalf("attempt %s is type %d, want a SetCodeTx", a.Hash, tx.Type())
		case tx.Nonce() != stored.Nonce || *tx.To() != p.Sweeper || !bytes.Equal(tx.Data(), p.Data) || tx.Gas() != stored.GasLimit ||
			tx.Value().Sign() != 0:
			t.Fatalf("attempt %s: nonce %d to %s gas %d value %v, want nonce %d to %s gas %d and the plan's data",
				a.Hash, tx.Nonce(), tx.To(), tx.Gas(), tx.Value(), stored.Nonce, p.Sweeper, stored.GasLimit)
		case !sameAuths(t, tx.SetCodeAuthorizations(), p.Authorizations):
			t.Fatalf("attempt %s carries %d authorizations, not the plan's %d", a.Hash, len(tx.SetCodeAuthorizations()), len(p.Authorizations))
		}
	}
}

// checkSwept fails unless the mined batch delegated every address to the Sweeper and moved
// each deposit to the bankroll exactly once.
func (s sweepFixture) checkSwept(t *testing.T, mined domain.ChainTx, p batchsweep.Plan, bankrollWant int64) {
	t.Helper()
	ctx := context.Background()
	if mined.State != domain.ChainTxMined {
		t.Fatalf("batch %s, want mined", mined.State)
	}
	r, err := s.client.Receipt(ctx, common.HexToHash(mined.MinedHash))
	if err != nil {
		t.Fatal(err)
	}
	results, err := batchsweep.Results(p, s.bankroll, common.Address{}, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if !res.Swept || res.Moved[s.usdt].Int64() != depositAmount {
			t.Fatalf("%s: swept %v, moved %v", res.Address, res.Swept, res.Moved)
		}
		code, err := s.dev.Client().CodeAt(ctx, res.Address, nil)
		if err != nil || !batchsweep.Delegated(code, s.sweeper) {
			t.Fatalf("%s has code %x (%v), want the delegation to the Sweeper", res.Address, code, err)
		}
		if bal := testfactory.TokenBalance(ctx, t, s.client, s.usdt, res.Address); bal.Sign() != 0 {
			t.Fatalf("%s still holds %v USDT", res.Address, bal)
		}
	}
	if bal := testfactory.TokenBalance(ctx, t, s.client, s.usdt, s.bankroll); bal.Int64() != bankrollWant {
		t.Fatalf("bankroll holds %v USDT, want %d", bal, bankrollWant)
	}
}

// submit hands req to the engine, which stores it (signed, not sent).
func (s sweepFixture) submit(t *testing.T, req chaintx.Request) domain.ChainTx {
	t.Helper()
	tx, err := s.engine.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// broadcast plans a batch of n deposits (see plan), submits it and advances it once: it fails
// unless the batch is sent.
func (s sweepFixture) broadcast(t *testing.T, ref string, n int) (batchsweep.Plan, domain.ChainTx) {
	t.Helper()
	p, req := s.plan(t, ref, n)
	tx, err := s.engine.Advance(context.Background(), s.submit(t, req).ID)
	if err != nil || tx.Latest().BroadcastAt == nil {
		t.Fatalf("broadcast: %v", err)
	}
	return p, tx
}

func (s sweepFixture) gasTankNonce(t *testing.T) uint64 {
	t.Helper()
	n, err := s.client.Nonce(context.Background(), s.from, false)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSetCodeBatchIsStoredBeforeBroadcastAndMined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupSweeper(t)
	p, req := s.plan(t, "batch-1", 4)
	tx := s.submit(t, req)
	// Stored, signed, not sent: the row and its bytes are the batch with its authorizations.
	stored, err := store.New(s.pool).ChainTx(ctx, tx.ID)
	if err != nil || len(stored.Attempts) != 1 || stored.Latest().BroadcastAt != nil {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	checkSetCode(t, stored, p)
	if _, _, err := s.client.Transaction(ctx, common.HexToHash(stored.Latest().Hash)); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("the node knows the transaction before the engine broadcast it: %v", err)
	}
	// The engine estimated the gas with the authorizations applied: the batch fits in it.
	mined := s.settle(t, tx.ID)
	if mined.GasUsed == 0 || mined.GasUsed > mined.GasLimit || mined.MinedHash != stored.Latest().Hash {
		t.Fatalf("mined %s with %d gas of %d", mined.MinedHash, mined.GasUsed, mined.GasLimit)
	}
	s.checkSwept(t, mined, p, 4*depositAmount)
	if n := s.gasTankNonce(t); n != 1 {
		t.Fatalf("gas tank sent %d transactions, want 1", n)
	}

	// The next batch of the same addresses needs no authorization: a plain EIP-1559 call.
	hashes := make([]common.Hash, len(p.Accounts))
	for i, a := range p.Accounts {
		if hashes[i], err = s.dev.Mint(ctx, "USDT", a.Address, big.NewInt(depositAmount)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.dev.Mine(ctx, hashes...); err != nil {
		t.Fatal(err)
	}
	accounts := p.Accounts
	p2, err := batchsweep.Build(ctx, s.dev.Client(), s.keys, big.NewInt(s.dev.ChainID()), s.sweeper, accounts)
	if err != nil || len(p2.Authorizations) != 0 {
		t.Fatalf("second plan: %d authorizations, %v", len(p2.Authorizations), err)
	}
	tx2, err := s.engine.Submit(ctx, chaintx.Request{ChainID: s.dev.ChainID(), From: s.from, To: p2.Sweeper, Data: p2.Data,
		Authorizations: p2.Authorizations, Purpose: "batch-sweep", Ref: "batch-2"})
	if err != nil || tx2.Authorizations != nil || decode(t, tx2.Latest()).Type() != types.DynamicFeeTxType {
		t.Fatalf("second batch: %+v %v", tx2, err)
	}
	s.checkSwept(t, s.settle(t, tx2.ID), p2, 8*depositAmount)
}

// A crash at each step of sending a batch, then a restart that submits the same request again
// and advances it: the batch is sent at most once (one nonce of the gas tank, one attempt) and
// each deposit moves once.
func TestSetCodeBatchSurvivesACrashAtEachStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupSweeper(t)
	for i, tc := range []struct {
		step string
		nth  int // crash the nth time the step is reached
	}{
		{chaintx.StepNonce, 1},
		{chaintx.StepSigned, 1},
		{chaintx.StepStored, 1},
		{chaintx.StepBroadcast, 1},
		{chaintx.StepReceipt, 1}, // before the first broadcast
		{chaintx.StepReceipt, 2}, // broadcast and mined, its receipt not read
	} {
		ref := tc.step + "#" + string(rune('0'+tc.nth))
		p, req := s.plan(t, ref, 3)
		reached := 0
		crashed := false
		s.engine.Crash = func(step string) {
			if step == tc.step {
				if reached++; reached == tc.nth {
					crashed = true
					panic("crash at " + step)
				}
			}
		}
		func() {
			defer func() { _ = recover() }()
			tx, err := s.engine.Submit(ctx, req)
			if err != nil {
				t.Fatalf("%s: submit: %v", ref, err)
			}
			for range 5 {
				if tx, err = s.engine.Advance(ctx, tx.ID); err != nil || tx.State != domain.ChainTxPending {
					return
				}
				s.dev.Commit()
			}
		}()
		s.engine.Crash = nil
		if !crashed {
			t.Fatalf("%s: never crashed", ref)
		}
		_, err := store.New(s.pool).ChainTxByRef(ctx, req.Purpose, ref)
		if stored := err == nil; stored != (tc.step != chaintx.StepNonce && tc.step != chaintx.StepSigned) {
			t.Fatalf("%s: stored after the crash: %v (%v)", ref, stored, err)
		}
		// The restart: the caller submits the same request again (it finds the stored one, or
		// stores it now) and advances it.
		tx, err := s.engine.Submit(ctx, req)
		if err != nil {
			t.Fatalf("%s: resubmit: %v", ref, err)
		}
		mined := s.settle(t, tx.ID)
		checkSetCode(t, mined, p)
		if len(mined.Attempts) != 1 || mined.MinedHash != mined.Attempts[0].Hash {
			t.Fatalf("%s: %d attempts, mined %s", ref, len(mined.Attempts), mined.MinedHash)
		}
		s.checkSwept(t, mined, p, int64(i+1)*3*depositAmount)
		if n := s.gasTankNonce(t); n != uint64(i+1) || mined.Nonce != uint64(i) {
			t.Fatalf("%s: gas tank nonce %d, batch nonce %d; want %d and %d", ref, n, mined.Nonce, i+1, i)
		}
	}
}

// A batch not mined for too long is replaced with higher fees: the same nonce, call, gas and
// authorizations; only the replacement is mined.
func TestStuckSetCodeBatchIsReplacedWithItsAuthorizations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupSweeper(t)
	p, tx := s.broadcast(t, "stuck", 3)
	s.engine.StuckAfter = 0
	time.Sleep(10 * time.Millisecond)
	replaced, err := s.engine.Advance(ctx, tx.ID)
	if err != nil || len(replaced.Attempts) != 2 || replaced.Latest().BroadcastAt == nil {
		t.Fatalf("replace: %d attempts, %v", len(replaced.Attempts), err)
	}
	checkSetCode(t, replaced, p)
	first, second := replaced.Attempts[0], replaced.Attempts[1]
	if second.TipCap.Cmp(first.TipCap) <= 0 || second.FeeCap.Cmp(first.FeeCap) <= 0 {
		t.Fatalf("fees not raised: %v/%v -> %v/%v", first.TipCap, first.FeeCap, second.TipCap, second.FeeCap)
	}
	if ft, st := decode(t, first), decode(t, second); ft.GasTipCap().Cmp(first.TipCap) != 0 || st.GasFeeCap().Cmp(second.FeeCap) != 0 {
		t.Fatal("stored fees differ from the signed ones")
	}
	s.engine.StuckAfter = time.Hour
	mined := s.settle(t, tx.ID)
	if mined.MinedHash != second.Hash {
		t.Fatalf("mined %s, want the replacement %s", mined.MinedHash, second.Hash)
	}
	if _, err := s.client.Receipt(ctx, common.HexToHash(first.Hash)); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("the first attempt has a receipt too: %v", err)
	}
	s.checkSwept(t, mined, p, 3*depositAmount)
	if n := s.gasTankNonce(t); n != 1 {
		t.Fatalf("gas tank sent %d transactions, want 1", n)
	}
}

// A cancel takes the batch's nonce with a plain 0-value self-send: it delegates nothing and
// moves nothing.
func TestCancelledSetCodeBatchDelegatesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupSweeper(t)
	p, tx := s.broadcast(t, "cancel", 2)
	if err := store.InTx(ctx, s.pool, func(dbtx pgx.Tx) error {
		return chaintx.RequestAction(ctx, dbtx, tx, domain.TxCancel, domain.ServiceTeamActor("test"), "stuck batch")
	}); err != nil {
		t.Fatal(err)
	}
	cancelled, err := s.engine.Advance(ctx, tx.ID)
	if err != nil || len(cancelled.Attempts) != 2 || !cancelled.Latest().Cancel {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	c := decode(t, cancelled.Latest())
	if c.Type() != types.DynamicFeeTxType || c.SetCodeAuthorizations() != nil || *c.To() != s.from || c.Value().Sign() != 0 ||
		c.Nonce() != tx.Nonce || len(c.Data()) != 0 {
		t.Fatalf("cancel attempt: type %d, %d authorizations, to %s, value %v, nonce %d", c.Type(), len(c.SetCodeAuthorizations()),
			c.To(), c.Value(), c.Nonce())
	}
	if done := s.settle(t, tx.ID); done.State != domain.ChainTxCancelled {
		t.Fatalf("state %s, want cancelled", done.State)
	}
	for _, a := range p.Authorized {
		code, _ := s.dev.Client().CodeAt(ctx, a, nil)
		if bal := testfactory.TokenBalance(ctx, t, s.client, s.usdt, a); len(code) != 0 || bal.Int64() != depositAmount {
			t.Fatalf("%s: code %x, %v USDT after the cancel", a, code, bal)
		}
	}
}

// Authorizations the engine must not send are refused before anything is stored; an empty
// list is no list.
func TestSetCodeBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setupSweeper(t)
	sweep, good := s.plan(t, "bad", 2)
	sign := func(addr common.Address, chainID int64) types.SetCodeAuthorization {
		a, err := types.SignSetCode(s.keys[addr], types.SetCodeAuthorization{Address: s.sweeper})
		if chainID != 0 {
			a, err = batchsweep.Authorize(s.keys[addr], big.NewInt(chainID), s.sweeper, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	broken := good.Authorizations[0]
	broken.V = 7
	for name, tc := range map[string]struct {
		auths []types.SetCodeAuthorization
		want  string
	}{
		"another chain":   {[]types.SetCodeAuthorization{good.Authorizations[0], sign(sweep.Authorized[1], s.dev.ChainID()+1)}, fmt.Sprintf("for chain %d,", s.dev.ChainID()+1)},
		"every chain (0)": {[]types.SetCodeAuthorization{sign(sweep.Authorized[0], 0)}, "for chain 0"},
		"bad signature":   {[]types.SetCodeAuthorization{broken}, "#0"},
		"the sender's own": {[]types.SetCodeAuthorization{func() types.SetCodeAuthorization {
			a, err := batchsweep.Authorize(s.keys[s.from], big.NewInt(s.dev.ChainID()), s.sweeper, 1)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}()}, "sender"},
		"twice one address": {[]types.SetCodeAuthorization{good.Authorizations[0], good.Authorizations[0]}, "second authorization"},
	} {
		req := good
		req.Authorizations = tc.auths
		_, err := s.engine.Submit(ctx, req)
		if !errors.Is(err, chaintx.ErrBadAuthorization) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadAuthorization saying %q", name, err, tc.want)
		}
		// The same refusal from Create, for a request changed after Prepare.
		p, err := s.engine.Prepare(ctx, good)
		if err != nil {
			t.Fatal(err)
		}
		p.Authorizations = tc.auths
		err = store.InTx(ctx, s.pool, func(dbtx pgx.Tx) error { _, _, err := s.engine.Create(ctx, dbtx, p); return err })
		if !errors.Is(err, chaintx.ErrBadAuthorization) {
			t.Errorf("%s: Create: %v, want ErrBadAuthorization", name, err)
		}
	}
	var txs, nonces int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM chain_txs), (SELECT count(*) FROM chain_nonces)`).Scan(&txs, &nonces); err != nil ||
		txs != 0 || nonces != 0 {
		t.Fatalf("%d transactions and %d nonce sequences stored (%v), want none", txs, nonces, err)
	}

	// An empty list is none: exactly the EIP-1559 transaction a request without one signs.
	plain := s.request("plain", 1000)
	plain.Authorizations = []types.SetCodeAuthorization{}
	tx, err := s.engine.Submit(ctx, plain)
	if err != nil || tx.Authorizations != nil {
		t.Fatalf("empty list: %+v %v", tx, err)
	}
	a := tx.Latest()
	to := common.HexToAddress(tx.To)
	want := types.MustSignNewTx(s.keys[s.from], types.LatestSignerForChainID(big.NewInt(s.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(s.dev.ChainID()), Nonce: tx.Nonce, GasTipCap: a.TipCap, GasFeeCap: a.FeeCap, Gas: 21000, To: &to, Value: big.NewInt(1000)})
	if raw, _ := want.MarshalBinary(); !bytes.Equal(raw, a.Raw) {
		t.Fatalf("empty list signed %x, want the plain transaction %x", a.Raw, raw)
	}
	if mined := s.settle(t, tx.ID); mined.State != domain.ChainTxMined {
		t.Fatalf("plain transaction %s", mined.State)
	}
	// The schema refuses an empty list too.
	if _, err := s.pool.Exec(ctx, `UPDATE chain_txs SET authorizations = '[]' WHERE id = $1`, tx.ID); err == nil {
		t.Fatal("the schema stored an empty authorization list")
	}
}
