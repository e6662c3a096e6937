package batchsweep_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// keys is a batchsweep.Keys over generated keys.
type keys map[common.Address]*ecdsa.PrivateKey

func (k keys) Key(_ context.Context, a common.Address) (*ecdsa.PrivateKey, error) {
	if key, ok := k[a]; ok {
		return key, nil
	}
	return nil, errors.New("unknown address")
}

type account struct {
	key  *ecdsa.PrivateKey
	addr common.Address
	// nonce is the next nonce of a sending account.
	nonce uint64
}

func newAccount(t testing.TB) *account {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return &account{key: k, addr: crypto.PubkeyToAddress(k.PublicKey)}
}

// env is a dev chain with a funded gas tank, a Sweeper deployed by it for bankroll, and
// deposit addresses holding USDT.
type env struct {
	t        testing.TB
	c        *devchain.Chain
	chainID  *big.Int
	gasTank  *account
	other    *account // funded, not the gas tank
	bankroll common.Address
	// feeAddress receives the fees (the Sweeper's immutable)
	feeAddress common.Address
	sweeper    common.Address
	usdt       common.Address
	keys       batchsweep.Keys
	// deposit keys made by deposits (keys is this unless newEnvWith was given others)
	made keys
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ks := keys{}
	e := newEnvWith(t, newAccount(t), ks)
	e.made = ks
	return e
}

// newEnvWith is newEnv with the given gas tank and deposit keys.
func newEnvWith(t testing.TB, gasTank *account, ks batchsweep.Keys) *env {
	t.Helper()
	ctx := t.Context()
	other := newAccount(t)
	eth := new(big.Int).Mul(big.NewInt(100), big.NewInt(params.Ether))
	c, err := devchain.Start(ctx, devchain.Options{Alloc: types.GenesisAlloc{gasTank.addr: {Balance: eth}, other.addr: {Balance: eth}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	usdt, _ := c.Token("USDT")
	e := &env{t: t, c: c, chainID: big.NewInt(devchain.ChainID), gasTank: gasTank, other: other,
		bankroll: newAccount(t).addr, feeAddress: newAccount(t).addr, usdt: usdt.Address, keys: ks}
	e.sweeper = e.deploy(gasTank, gasTank.addr, e.bankroll, e.feeAddress)
	if err := batchsweep.Verify(ctx, c.Client(), e.sweeper, gasTank.addr, e.bankroll, e.feeAddress); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) fees() (tip, feeCap *big.Int) {
	e.t.Helper()
	head, err := e.c.Client().HeaderByNumber(e.t.Context(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	tip = big.NewInt(params.GWei)
	return tip, new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(4)), tip)
}

// send signs data from a, mines it and returns its receipt.
func (e *env) send(a *account, data types.TxData) *types.Receipt {
	e.t.Helper()
	tx := types.MustSignNewTx(a.key, types.LatestSignerForChainID(e.chainID), data)
	if err := e.c.Client().SendTransaction(e.t.Context(), tx); err != nil {
		e.t.Fatalf("send: %v", err)
	}
	a.nonce++
	rs, err := e.c.Mine(e.t.Context(), tx.Hash())
	if err != nil {
		e.t.Fatal(err)
	}
	return rs[0]
}

func (e *env) call(a *account, to *common.Address, gas uint64, value *big.Int, data []byte) *types.Receipt {
	e.t.Helper()
	tip, feeCap := e.fees()
	return e.send(a, &types.DynamicFeeTx{ChainID: e.chainID, Nonce: a.nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: gas, To: to, Value: value, Data: data})
}

func (e *env) deploy(from *account, gasTank, bankroll, feeAddress common.Address) common.Address {
	e.t.Helper()
	r := e.call(from, nil, 2_000_000, nil, batchsweep.DeployData(gasTank, bankroll, feeAddress))
	if r.Status != types.ReceiptStatusSuccessful {
		e.t.Fatal("deploy Sweeper failed")
	}
	return r.ContractAddress
}

// deposits makes n deposit addresses holding amount USDT each.
func (e *env) deposits(n int, amount int64) []common.Address {
	e.t.Helper()
	out := make([]common.Address, n)
	for i := range out {
		a := newAccount(e.t)
		e.made[a.addr] = a.key
		out[i] = a.addr
	}
	e.mint(out, amount)
	return out
}

func (e *env) mint(to []common.Address, amount int64) {
	e.t.Helper()
	hashes := make([]common.Hash, len(to))
	for i, a := range to {
		h, err := e.c.Mint(e.t.Context(), "USDT", a, big.NewInt(amount))
		if err != nil {
			e.t.Fatal(err)
		}
		hashes[i] = h
	}
	if _, err := e.c.Mine(e.t.Context(), hashes...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) usdtOf(a common.Address) int64 {
	e.t.Helper()
	tt := contracts.NewTestToken()
	b, err := bind.Call(tt.Instance(e.c.Client(), e.usdt), nil, tt.PackBalanceOf(a), tt.UnpackBalanceOf)
	if err != nil {
		e.t.Fatal(err)
	}
	return b.Int64()
}

func (e *env) ethOf(a common.Address) *big.Int {
	e.t.Helper()
	b, err := e.c.Client().BalanceAt(e.t.Context(), a, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func usdtOnly(usdt common.Address, addrs ...common.Address) []batchsweep.Account {
	out := make([]batchsweep.Account, len(addrs))
	for i, a := range addrs {
		out[i] = batchsweep.Account{Address: a, Assets: []batchsweep.Asset{{Token: usdt}}}
	}
	return out
}

// sweep plans a batch, sends it from the gas tank with the estimated gas and returns the plan
// and the receipt.
func (e *env) sweep(accounts []batchsweep.Account) (batchsweep.Plan, *types.Receipt) {
	e.t.Helper()
	p, err := batchsweep.Build(e.t.Context(), e.c.Client(), e.keys, e.chainID, e.sweeper, accounts)
	if err != nil {
		e.t.Fatal(err)
	}
	gas, err := e.c.Client().EstimateGas(e.t.Context(), p.CallMsg(e.gasTank.addr))
	if err != nil {
		e.t.Fatalf("estimate: %v", err)
	}
	tip, feeCap := e.fees()
	r := e.send(e.gasTank, p.TxData(e.chainID, e.gasTank.nonce, batchsweep.Fees{Tip: tip, FeeCap: feeCap, Gas: gas + gas/4}))
	if r.Status != types.ReceiptStatusSuccessful {
		e.t.Fatal("batch sweep reverted")
	}
	return p, r
}

// skipped returns the accounts r's Skipped events name, with their delegated flag.
func skipped(t testing.TB, r *types.Receipt) map[common.Address]bool {
	t.Helper()
	sw := contracts.NewSweeper()
	out := map[common.Address]bool{}
	for _, l := range r.Logs {
		if len(l.Topics) > 0 && l.Topics[0] == contracts.NewSweeper().GetABI().Events[contracts.SweeperSkippedEventName].ID {
			ev, err := sw.UnpackSkippedEvent(l)
			if err != nil {
				t.Fatal(err)
			}
			out[ev.Account] = ev.Delegated
		}
	}
	return out
}

func TestSingleSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.deposits(1, 1_000_000)[0]

	p, r := e.sweep(usdtOnly(e.usdt, d))
	if len(p.Authorizations) != 1 || p.Authorized[0] != d {
		t.Fatalf("first sweep authorizes %v, want %s", p.Authorized, d)
	}
	if r.Type != types.SetCodeTxType {
		t.Fatalf("first sweep is tx type %d, want a SetCodeTx", r.Type)
	}
	code, err := e.c.Client().CodeAt(e.t.Context(), d, nil)
	if err != nil || !batchsweep.Delegated(code, e.sweeper) {
		t.Fatalf("code at deposit = %x (%v), want delegation to %s", code, err, e.sweeper)
	}
	if got := e.usdtOf(d); got != 0 {
		t.Fatalf("deposit holds %d USDT after the sweep", got)
	}
	if got := e.usdtOf(e.bankroll); got != 1_000_000 {
		t.Fatalf("bankroll holds %d USDT, want 1000000", got)
	}
	if dust := e.ethOf(d); dust.Sign() != 0 {
		t.Fatalf("deposit holds %v wei of dust", dust)
	}

	// The next deposit to the address: no authorization, a plain call.
	e.mint([]common.Address{d}, 500)
	p, r = e.sweep(usdtOnly(e.usdt, d))
	if len(p.Authorizations) != 0 || r.Type != types.DynamicFeeTxType {
		t.Fatalf("second sweep: %d authorizations, tx type %d", len(p.Authorizations), r.Type)
	}
	if got := e.usdtOf(e.bankroll); got != 1_000_500 {
		t.Fatalf("bankroll holds %d USDT, want 1000500", got)
	}
}

func TestBatchOf20(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(20, 1_000)

	p, first := e.sweep(usdtOnly(e.usdt, ds...))
	if len(p.Authorizations) != 20 {
		t.Fatalf("%d authorizations, want 20", len(p.Authorizations))
	}
	e.mint(ds, 2_000)
	p, steady := e.sweep(usdtOnly(e.usdt, ds...))
	if len(p.Authorizations) != 0 {
		t.Fatalf("%d authorizations in the steady state, want 0", len(p.Authorizations))
	}
	for _, d := range ds {
		if got := e.usdtOf(d); got != 0 {
			t.Fatalf("%s holds %d USDT after the sweeps", d, got)
		}
		if dust := e.ethOf(d); dust.Sign() != 0 {
			t.Fatalf("%s holds %v wei of dust", d, dust)
		}
	}
	if got := e.usdtOf(e.bankroll); got != 20*3_000 {
		t.Fatalf("bankroll holds %d USDT, want %d", got, 20*3_000)
	}
	if s := skipped(t, steady); len(s) != 0 {
		t.Fatalf("skipped %v", s)
	}
	// Today: a 21,000-gas top-up plus a 46,593-gas token transfer per deposit.
	const target = 67_593 * 3 / 10
	perDeposit := steady.GasUsed / 20
	t.Logf("gas per deposit: first sweep %d (with authorization), steady state %d (target <= %d)",
		first.GasUsed/20, perDeposit, target)
	if perDeposit > target {
		t.Fatalf("steady-state gas per deposit %d > %d", perDeposit, target)
	}
}

// TestOnlyGasTank: nobody but the gas tank moves a delegated address's tokens, neither through
// the batch nor by calling the address.
func TestOnlyGasTank(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(2, 1_000)
	e.sweep(usdtOnly(e.usdt, ds[0])) // delegates ds[0]
	e.mint(ds[:1], 1_000)

	sw := contracts.NewSweeper()
	batch := sw.PackBatch([]common.Address{ds[0]}, [][]common.Address{{e.usdt}}, [][]*big.Int{{all()}}, [][]*big.Int{{big.NewInt(0)}})
	for name, tc := range map[string]struct {
		to   common.Address
		data []byte
	}{
		"batch":        {e.sweeper, batch},
		"sweep direct": {ds[0], sw.PackSweep([]common.Address{e.usdt}, []*big.Int{all()}, []*big.Int{big.NewInt(0)})},
	} {
		if r := e.call(e.other, &tc.to, 300_000, nil, tc.data); r.Status != types.ReceiptStatusFailed {
			t.Errorf("%s from another account succeeded", name)
		}
	}
	// A batch sent to a delegated account (not to the Sweeper itself) is refused too.
	if r := e.call(e.gasTank, &ds[0], 300_000, nil, batch); r.Status != types.ReceiptStatusFailed {
		t.Error("batch run as a delegated account succeeded")
	}
	// A SetCodeTx from another account that delegates ds[1] (with its signature) still does
	// not let that account sweep it.
	auth, err := batchsweep.Authorize(e.made[ds[1]], e.chainID, e.sweeper, 0)
	if err != nil {
		t.Fatal(err)
	}
	tip, feeCap := e.fees()
	r := e.send(e.other, &types.SetCodeTx{ChainID: uint256.MustFromBig(e.chainID), Nonce: e.other.nonce,
		GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(feeCap), Gas: 300_000,
		To: ds[1], Value: new(uint256.Int), Data: sw.PackSweep([]common.Address{e.usdt}, []*big.Int{all()}, []*big.Int{big.NewInt(0)}),
		AuthList: []types.SetCodeAuthorization{auth}})
	if r.Status != types.ReceiptStatusFailed {
		t.Error("sweep by another account after delegation succeeded")
	}
	if got := e.usdtOf(ds[0]) + e.usdtOf(ds[1]); got != 2_000 {
		t.Fatalf("deposits hold %d USDT, want 2000 untouched", got)
	}
}

// TestDelegationClearedOrReplaced: an address whose delegation was cleared (authorization to
// the zero address) or replaced (delegated to another Sweeper, paying someone else) is skipped
// by the batch while the others are swept; the next plan re-authorizes it.
func TestDelegationClearedOrReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(4, 1_000)
	e.sweep(usdtOnly(e.usdt, ds...))
	e.mint(ds, 1_000)

	thief := newAccount(t).addr
	foreign := e.deploy(e.other, e.gasTank.addr, thief, common.Address{}) // obeys our gas tank, pays the thief
	var auths []types.SetCodeAuthorization
	for _, x := range []struct {
		d  common.Address
		to common.Address
	}{{ds[1], common.Address{}}, {ds[2], foreign}} {
		// Each deposit used nonce 0 for its delegation.
		a, err := types.SignSetCode(e.made[x.d], types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(e.chainID), Address: x.to, Nonce: 1})
		if err != nil {
			t.Fatal(err)
		}
		auths = append(auths, a)
	}
	tip, feeCap := e.fees()
	if r := e.send(e.other, &types.SetCodeTx{ChainID: uint256.MustFromBig(e.chainID), Nonce: e.other.nonce,
		GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(feeCap), Gas: 200_000,
		To: e.other.addr, Value: new(uint256.Int), AuthList: auths}); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("re-delegation failed")
	}
	if code, _ := e.c.Client().CodeAt(e.t.Context(), ds[1], nil); len(code) != 0 {
		t.Fatalf("cleared delegation left code %x", code)
	}

	// The batch as planned before the change (no authorizations): ds[1] and ds[2] skipped,
	// ds[3] has a token without code, so its sweep reverts and it is skipped too.
	noCode := newAccount(t).addr
	data := contracts.NewSweeper().PackBatch(ds, [][]common.Address{{e.usdt}, {e.usdt}, {e.usdt}, {e.usdt, noCode}},
		[][]*big.Int{{all()}, {all()}, {all()}, {all(), all()}}, [][]*big.Int{{zero()}, {zero()}, {zero()}, {zero(), zero()}})
	r := e.call(e.gasTank, &e.sweeper, 500_000, nil, data)
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("batch reverted")
	}
	want := map[common.Address]bool{ds[1]: false, ds[2]: false, ds[3]: true}
	if got := skipped(t, r); len(got) != len(want) || got[ds[1]] || got[ds[2]] || !got[ds[3]] {
		t.Fatalf("skipped %v, want %v", got, want)
	}
	planned := batchsweep.Plan{Sweeper: e.sweeper, Accounts: usdtOnly(e.usdt, ds...)}
	planned.Accounts[3].Assets = append(planned.Accounts[3].Assets, batchsweep.Asset{Token: noCode})
	res, err := batchsweep.Results(planned, e.bankroll, e.feeAddress, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, false, false} {
		if res[i].Swept != want || res[i].Delegated != (i == 3) {
			t.Errorf("result %d: %+v", i, res[i])
		}
	}
	if res[0].Moved[e.usdt].Int64() != 1_000 {
		t.Errorf("deposit 0 moved %v", res[0].Moved)
	}
	for i, want := range []int64{0, 1_000, 1_000, 1_000} {
		if got := e.usdtOf(ds[i]); got != want {
			t.Errorf("deposit %d holds %d USDT, want %d", i, got, want)
		}
	}
	if got := e.usdtOf(thief); got != 0 {
		t.Fatalf("the foreign delegate paid %d USDT", got)
	}

	// The next plan re-authorizes exactly the two, and sweeps everything.
	p, r := e.sweep(usdtOnly(e.usdt, ds[1:]...))
	if len(p.Authorized) != 2 || p.Authorized[0] != ds[1] || p.Authorized[1] != ds[2] {
		t.Fatalf("re-authorized %v, want %v", p.Authorized, ds[1:3])
	}
	if s := skipped(t, r); len(s) != 0 {
		t.Fatalf("skipped %v", s)
	}
	for i := range ds {
		if got := e.usdtOf(ds[i]); got != 0 {
			t.Errorf("deposit %d holds %d USDT", i, got)
		}
	}
	if got := e.usdtOf(e.bankroll); got != 8_000 {
		t.Fatalf("bankroll holds %d, want 8000", got)
	}
}

// TestNativeOnTokenAddress: ETH sent to a delegated token-deposit address with a 21,000-gas
// transfer fails at the sender (nothing arrives); sent with enough gas it is held and swept
// with Native, leaving no dust.
func TestNativeOnTokenAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.deposits(1, 1_000)[0]
	e.sweep(usdtOnly(e.usdt, d))

	if r := e.call(e.other, &d, params.TxGas, big.NewInt(params.GWei), nil); r.Status != types.ReceiptStatusFailed {
		t.Fatal("21,000-gas transfer to a delegated address succeeded")
	}
	if r := e.call(e.other, &d, 50_000, big.NewInt(params.GWei), nil); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("transfer with gas for the code failed")
	}
	before := e.ethOf(e.bankroll)
	_, r := e.sweep([]batchsweep.Account{{Address: d, Assets: []batchsweep.Asset{{}, {Token: e.usdt}}}})
	if got := new(big.Int).Sub(e.ethOf(e.bankroll), before); got.Int64() != params.GWei {
		t.Fatalf("bankroll got %v wei, want %d", got, int64(params.GWei))
	}
	if dust := e.ethOf(d); dust.Sign() != 0 {
		t.Fatalf("deposit holds %v wei", dust)
	}
	p := batchsweep.Plan{Sweeper: e.sweeper, Accounts: []batchsweep.Account{{Address: d, Assets: []batchsweep.Asset{{}, {Token: e.usdt}}}}}
	if res, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r); err != nil || !res[0].Swept || res[0].Moved[common.Address{}].Int64() != params.GWei {
		t.Fatalf("results %+v (%v)", res, err)
	}
	var native bool
	for _, l := range r.Logs {
		native = native || (l.Address == d && l.Topics[0] == contracts.NewSweeper().GetABI().Events[contracts.SweeperNativeSweptEventName].ID)
	}
	if !native {
		t.Fatal("no NativeSwept event from the deposit address")
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(2, 1)
	stranger := newAccount(t).addr
	many := make([]batchsweep.Account, batchsweep.MaxBatch+1)
	for i := range many {
		many[i] = batchsweep.Account{Address: common.BigToAddress(big.NewInt(int64(i + 1))), Assets: []batchsweep.Asset{{Token: e.usdt}}}
	}
	for name, tc := range map[string]struct {
		accounts []batchsweep.Account
		want     string
	}{
		"empty":       {nil, "0 accounts"},
		"too many":    {many, "201 accounts"},
		"twice":       {usdtOnly(e.usdt, ds[0], ds[0]), "twice"},
		"no tokens":   {[]batchsweep.Account{{Address: ds[0]}}, "nothing to sweep"},
		"token twice": {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt}, {Token: e.usdt}}}}, "twice for"},
		"zero amount": {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: new(big.Int)}}}}, "out of range"},
		"max amount":  {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: all()}}}}, "out of range"},
		"fee above the amount": {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(5),
			Fee: big.NewInt(6)}}}}, "not within the exact amount"},
		"fee on a whole balance": {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Fee: big.NewInt(1)}}}},
			"not within the exact amount"},
		"negative fee": {[]batchsweep.Account{{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(5),
			Fee: big.NewInt(-1)}}}}, "not within the exact amount"},
		"contract": {usdtOnly(e.usdt, e.usdt), "is a contract"},
		"no key":   {usdtOnly(e.usdt, stranger), "key of"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := batchsweep.Build(e.t.Context(), e.c.Client(), e.keys, e.chainID, e.sweeper, tc.accounts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	wrong := keys{ds[0]: e.made[ds[1]]}
	if _, err := batchsweep.Build(e.t.Context(), e.c.Client(), wrong, e.chainID, e.sweeper, usdtOnly(e.usdt, ds[0])); err == nil || !strings.Contains(err.Error(), "belongs to") {
		t.Fatalf("wrong key: err = %v", err)
	}
	if _, err := batchsweep.Authorize(e.made[ds[0]], e.chainID, common.Address{}, 0); err == nil {
		t.Fatal("authorization to the zero address accepted")
	}
	if _, err := batchsweep.Authorize(e.made[ds[0]], big.NewInt(0), e.sweeper, 0); err == nil {
		t.Fatal("authorization for every chain accepted")
	}
	if err := batchsweep.Verify(e.t.Context(), e.c.Client(), e.sweeper, e.gasTank.addr, stranger, e.feeAddress); err == nil {
		t.Fatal("Verify accepted a Sweeper paying another bankroll")
	}
	if err := batchsweep.Verify(e.t.Context(), e.c.Client(), e.usdt, e.gasTank.addr, e.bankroll, e.feeAddress); err == nil {
		t.Fatal("Verify accepted a token as a Sweeper")
	}
	if err := batchsweep.Verify(e.t.Context(), e.c.Client(), e.sweeper, e.gasTank.addr, e.bankroll, stranger); err == nil ||
		!strings.Contains(err.Error(), "sends fees to") {
		t.Fatalf("Verify accepted a Sweeper sending fees elsewhere: %v", err)
	}
}

// TestHDWalletKeys: the service's own keys work as they are: the gas tank is the wallet's,
// deposit addresses sign their delegation with their HD key through deposit.KeyRing.
func TestHDWalletKeys(t *testing.T) {
	t.Parallel()
	hd, err := wallet.FromSeed(secret.Random(64))
	if err != nil {
		t.Fatal(err)
	}
	tankKey, tankAddr := hd.GasTank()
	e := newEnvWith(t, &account{key: tankKey, addr: tankAddr}, deposit.KeyRing{Keys: hd})
	ds := make([]common.Address, 3)
	for i := range ds {
		if _, ds[i], err = hd.Deposit(uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	e.mint(ds, 700)
	p, r := e.sweep(usdtOnly(e.usdt, ds...))
	if len(p.Authorized) != 3 || len(skipped(t, r)) != 0 {
		t.Fatalf("authorized %v, skipped %v", p.Authorized, skipped(t, r))
	}
	if got := e.usdtOf(e.bankroll); got != 2_100 {
		t.Fatalf("bankroll holds %d USDT, want 2100", got)
	}
}

// TestGethDev: the batch on a real node (geth --dev): its pool admits the SetCodeTx, and
// eth_estimateGas applies the authorization list over JSON-RPC.
func TestGethDev(t *testing.T) {
	t.Parallel()
	n := gethdev.Start(t, time.Second)
	ctx := t.Context()
	tank, err := n.NewAccount(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	bankroll := newAccount(t).addr
	r, err := n.Transact(ctx, tank, nil, nil, batchsweep.DeployData(tank.Address, bankroll, common.Address{}))
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy Sweeper: %v", err)
	}
	sweeper := r.ContractAddress
	token, err := n.DeployToken(ctx, tank, "USDT", 6, big.NewInt(1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	ks := keys{}
	accounts := make([]batchsweep.Account, 3)
	tt := contracts.NewTestToken()
	for i := range accounts {
		d := newAccount(t)
		ks[d.addr] = d.key
		accounts[i] = batchsweep.Account{Address: d.addr, Assets: []batchsweep.Asset{{Token: token}}}
		if r, err := n.Transact(ctx, tank, &token, nil, tt.PackTransfer(d.addr, big.NewInt(100))); err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("fund deposit: %v", err)
		}
	}
	chainID := big.NewInt(n.ChainID)
	for round := range 2 {
		p, err := batchsweep.Build(ctx, n.Client, ks, chainID, sweeper, accounts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{3, 0}[round]; len(p.Authorizations) != want {
			t.Fatalf("round %d: %d authorizations, want %d", round, len(p.Authorizations), want)
		}
		gas, err := n.Client.EstimateGas(ctx, p.CallMsg(tank.Address))
		if err != nil {
			t.Fatalf("estimate: %v", err)
		}
		tip := big.NewInt(params.GWei)
		tx, err := n.Send(ctx, tank, func(nonce uint64, baseFee *big.Int) types.TxData {
			return p.TxData(chainID, nonce, batchsweep.Fees{Tip: tip, FeeCap: new(big.Int).Add(new(big.Int).Mul(baseFee, big.NewInt(2)), tip), Gas: gas + gas/4})
		})
		if err != nil {
			t.Fatalf("round %d: send: %v", round, err)
		}
		if r, err = n.Wait(ctx, tx.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful || len(skipped(t, r)) != 0 {
			t.Fatalf("round %d: batch: %v (skipped %v)", round, err, skipped(t, r))
		}
		if round == 0 { // a second deposit to each
			for _, a := range accounts {
				if r, err := n.Transact(ctx, tank, &token, nil, tt.PackTransfer(a.Address, big.NewInt(50))); err != nil || r.Status != types.ReceiptStatusSuccessful {
					t.Fatalf("fund deposit: %v", err)
				}
			}
		}
	}
	if bal, err := n.TokenBalance(ctx, token, bankroll); err != nil || bal.Int64() != 450 {
		t.Fatalf("bankroll holds %v (%v), want 450", bal, err)
	}
}

// all is type(uint256).max, the contract's "whole balance".
func all() *big.Int { return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)) }

// TestExactAmounts: an exact amount moves only that much; an amount the balance falls short of
// (a deposit that left the chain) skips that account and sweeps the others.
func TestExactAmounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(2, 1_000)
	p, r := e.sweep([]batchsweep.Account{
		{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(600)}}},
		{Address: ds[1], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(1_001)}}},
	})
	if s := skipped(t, r); len(s) != 1 || !s[ds[1]] {
		t.Fatalf("skipped %v, want only %s (delegated)", s, ds[1])
	}
	if a, b, bank := e.usdtOf(ds[0]), e.usdtOf(ds[1]), e.usdtOf(e.bankroll); a != 400 || b != 1_000 || bank != 600 {
		t.Fatalf("deposits hold %d and %d, bankroll %d; want 400, 1000, 600", a, b, bank)
	}
	res, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Swept || res[0].Moved[e.usdt].Int64() != 600 || res[1].Swept || !res[1].Delegated || len(res[1].Moved) != 0 {
		t.Fatalf("results %+v", res)
	}
	// A receipt that does not show what the plan says is refused, and so is a reverted batch.
	p.Accounts[0].Assets[0].Amount = big.NewInt(700)
	if _, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r); err == nil || !strings.Contains(err.Error(), "the plan says") {
		t.Fatalf("mismatch: err = %v", err)
	}
	if _, err := batchsweep.Results(p, e.bankroll, e.feeAddress, &types.Receipt{Status: types.ReceiptStatusFailed}); err == nil {
		t.Fatal("a reverted batch has results")
	}
}

func zero() *big.Int { return new(big.Int) }

// TestFees: each asset's fee goes to the fee address and the rest to the bankroll, in the same
// sweep (tokens and ETH); Results reports both. A Sweeper without a fee address refuses a fee:
// that account is skipped and keeps its tokens.
func TestFees(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ds := e.deposits(2, 1_000)
	p, r := e.sweep([]batchsweep.Account{
		{Address: ds[0], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(1_000), Fee: big.NewInt(10)}}},
		{Address: ds[1], Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(1_000)}}},
	})
	if bank, fee := e.usdtOf(e.bankroll), e.usdtOf(e.feeAddress); bank != 1_990 || fee != 10 {
		t.Fatalf("bankroll %d, fee address %d; want 1990 and 10", bank, fee)
	}
	res, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Swept || res[0].Moved[e.usdt].Int64() != 990 || res[0].Fees[e.usdt].Int64() != 10 ||
		!res[1].Swept || res[1].Moved[e.usdt].Int64() != 1_000 || len(res[1].Fees) != 0 {
		t.Fatalf("results %+v", res)
	}
	// The total is what is checked (a plan rebuilt later may compute another fee split).
	p.Accounts[0].Assets[0].Fee = big.NewInt(20)
	if _, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r); err != nil {
		t.Fatalf("another split of the same total: %v", err)
	}
	p.Accounts[0].Assets[0].Amount = big.NewInt(999)
	if _, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r); err == nil || !strings.Contains(err.Error(), "the plan says") {
		t.Fatalf("another total: err = %v", err)
	}

	// ETH on a delegated address: the fee in wei, reported by NativeSwept.
	if r := e.call(e.other, &ds[1], 50_000, big.NewInt(1_000_000), nil); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("ETH to the delegated address failed")
	}
	bankBefore, feeBefore := e.ethOf(e.bankroll), e.ethOf(e.feeAddress)
	p, r = e.sweep([]batchsweep.Account{{Address: ds[1], Assets: []batchsweep.Asset{{Amount: big.NewInt(1_000_000), Fee: big.NewInt(1_000)}}}})
	if got := new(big.Int).Sub(e.ethOf(e.bankroll), bankBefore); got.Int64() != 999_000 {
		t.Fatalf("bankroll got %v wei, want 999000", got)
	}
	if got := new(big.Int).Sub(e.ethOf(e.feeAddress), feeBefore); got.Int64() != 1_000 {
		t.Fatalf("fee address got %v wei, want 1000", got)
	}
	if res, err := batchsweep.Results(p, e.bankroll, e.feeAddress, r); err != nil || res[0].Moved[common.Address{}].Int64() != 999_000 ||
		res[0].Fees[common.Address{}].Int64() != 1_000 {
		t.Fatalf("native results %+v (%v)", res, err)
	}

	// A Sweeper without a fee address: an account with a fee is skipped (its sweep reverts).
	noFees := e.deploy(e.gasTank, e.gasTank.addr, e.bankroll, common.Address{})
	if err := batchsweep.Verify(e.t.Context(), e.c.Client(), noFees, e.gasTank.addr, e.bankroll, common.Address{}); err != nil {
		t.Fatal(err)
	}
	d := e.deposits(1, 500)[0]
	plan, err := batchsweep.Build(e.t.Context(), e.c.Client(), e.keys, e.chainID, noFees,
		[]batchsweep.Account{{Address: d, Assets: []batchsweep.Asset{{Token: e.usdt, Amount: big.NewInt(500), Fee: big.NewInt(5)}}}})
	if err != nil {
		t.Fatal(err)
	}
	tip, feeCap := e.fees()
	r = e.send(e.gasTank, plan.TxData(e.chainID, e.gasTank.nonce, batchsweep.Fees{Tip: tip, FeeCap: feeCap, Gas: 500_000}))
	if s := skipped(t, r); len(s) != 1 || !s[d] || e.usdtOf(d) != 500 {
		t.Fatalf("skipped %v, the address holds %d: want it skipped with its 500", s, e.usdtOf(d))
	}
}
