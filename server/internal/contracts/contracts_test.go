package contracts_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
)

type account struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

func newAccount(t *testing.T) account {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return account{k, crypto.PubkeyToAddress(k.PublicKey)}
}

type env struct {
	t       *testing.T
	backend *simulated.Backend
	client  simulated.Client
}

func newEnv(t *testing.T, funded ...account) *env {
	t.Helper()
	alloc := types.GenesisAlloc{}
	for _, a := range funded {
		alloc[a.addr] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))}
	}
	b := simulated.NewBackend(alloc)
	t.Cleanup(func() { _ = b.Close() })
	// The genesis block has timestamp 0; seal one block so gas estimates for
	// code storing block.timestamp are realistic.
	b.Commit()
	return &env{t: t, backend: b, client: b.Client()}
}

func (e *env) opts(a account) *bind.TransactOpts {
	return bind.NewKeyedTransactor(a.key, big.NewInt(1337))
}

// receipt fetches a mined transaction's receipt, waiting out the simulated node's
// asynchronous transaction indexing.
func (e *env) receipt(h common.Hash) (*types.Receipt, error) {
	for i := 0; ; i++ {
		r, err := e.client.TransactionReceipt(context.Background(), h)
		if err == nil || i == 200 || !chain.IsIndexing(err) {
			return r, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mine commits a block and requires tx to have succeeded.
func (e *env) mine(tx *types.Transaction, err error) *types.Receipt {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("send: %v", err)
	}
	e.backend.Commit()
	r, err := e.receipt(tx.Hash())
	if err != nil {
		e.t.Fatalf("receipt: %v", err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		e.t.Fatalf("tx %s reverted", tx.Hash())
	}
	return r
}

// adjustTime moves the next block's time forward. The simulated node refuses while its
// transaction pool still lists a transaction, and the pool forgets the ones the last Commit
// mined only when it catches up with the new head, asynchronously: under load that can lag the
// Commit, so this waits for it (bounded) instead of failing on a pool that is merely behind.
func (e *env) adjustTime(d time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := e.backend.AdjustTime(d)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "non-empty block") || time.Now().After(deadline) {
			e.t.Fatalf("adjust time: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) deploy(from account, bin string, args []byte) common.Address {
	e.t.Helper()
	addr, tx, err := bind.DeployContract(e.opts(from), common.FromHex(bin), e.client, args)
	r := e.mine(tx, err)
	if r.ContractAddress != addr {
		e.t.Fatalf("deployed at %s, want %s", r.ContractAddress, addr)
	}
	return addr
}

// revertData extracts the ABI-encoded revert data from a failed eth_call or
// eth_estimateGas.
func revertData(t *testing.T, err error) []byte {
	t.Helper()
	if err == nil {
		t.Fatal("expected a revert, got success")
	}
	var de rpc.DataError
	if !errors.As(err, &de) {
		t.Fatalf("error without revert data: %v", err)
	}
	s, ok := de.ErrorData().(string)
	if !ok {
		t.Fatalf("revert data %T", de.ErrorData())
	}
	data, derr := hexutil.Decode(s)
	if derr != nil {
		t.Fatal(derr)
	}
	return data
}

func call[T any](t *testing.T, c *bind.BoundContract, from common.Address, data []byte, unpack func([]byte) (T, error)) T {
	t.Helper()
	v, err := bind.Call(c, &bind.CallOpts{From: from}, data, unpack)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return v
}

func callErr(c *bind.BoundContract, from common.Address, data []byte) error {
	_, err := bind.Call[any](c, &bind.CallOpts{From: from}, data, nil)
	return err
}

func TestTestToken(t *testing.T) {
	t.Parallel()
	owner, alice, bob, carol := newAccount(t), newAccount(t), newAccount(t), newAccount(t)
	e := newEnv(t, owner, alice, bob)
	tt := contracts.NewTestToken()
	addr := e.deploy(owner, contracts.TestTokenMetaData.Bin, tt.PackConstructor("Test USD", "TUSD", 6))
	tok := tt.Instance(e.client, addr)

	if got := call(t, tok, owner.addr, tt.PackName(), tt.UnpackName); got != "Test USD" {
		t.Errorf("name = %q", got)
	}
	if got := call(t, tok, owner.addr, tt.PackSymbol(), tt.UnpackSymbol); got != "TUSD" {
		t.Errorf("symbol = %q", got)
	}
	if got := call(t, tok, owner.addr, tt.PackDecimals(), tt.UnpackDecimals); got != 6 {
		t.Errorf("decimals = %d", got)
	}
	if got := call(t, tok, owner.addr, tt.PackOwner(), tt.UnpackOwner); got != owner.addr {
		t.Errorf("owner = %s", got)
	}
	balance := func(a common.Address) int64 {
		return call(t, tok, owner.addr, tt.PackBalanceOf(a), tt.UnpackBalanceOf).Int64()
	}
	allowance := func(o, s common.Address) *big.Int {
		return call(t, tok, owner.addr, tt.PackAllowance(o, s), tt.UnpackAllowance)
	}

	// Only the owner can mint, and not to the zero address.
	if d := revertData(t, callErr(tok, alice.addr, tt.PackMint(alice.addr, big.NewInt(1)))); !hasSelector(d, contracts.TestTokenNotOwnerErrorID()) {
		t.Fatalf("mint by non-owner: revert %x", d)
	}
	if d := revertData(t, callErr(tok, owner.addr, tt.PackMint(common.Address{}, big.NewInt(1)))); !hasSelector(d, contracts.TestTokenZeroAddressErrorID()) {
		t.Fatalf("mint to zero: revert %x", d)
	}
	// A non-owner mint sent on-chain (no estimation) reverts.
	o := e.opts(alice)
	o.GasLimit = 100_000
	tx, err := bind.Transact(tok, o, tt.PackMint(alice.addr, big.NewInt(1)))
	if err != nil {
		t.Fatal(err)
	}
	e.backend.Commit()
	if r, err := e.receipt(tx.Hash()); err != nil || r.Status != types.ReceiptStatusFailed {
		t.Fatalf("non-owner mint receipt = %+v (%v), want failed", r, err)
	}

	r := e.mine(bind.Transact(tok, e.opts(owner), tt.PackMint(alice.addr, big.NewInt(1000))))
	ev, err := tt.UnpackTransferEvent(r.Logs[0])
	if err != nil || ev.From != (common.Address{}) || ev.To != alice.addr || ev.Value.Int64() != 1000 {
		t.Fatalf("mint Transfer event = %+v (%v)", ev, err)
	}
	if got := call(t, tok, owner.addr, tt.PackTotalSupply(), tt.UnpackTotalSupply); got.Int64() != 1000 {
		t.Fatalf("totalSupply = %v", got)
	}

	// transfer: insufficient balance and zero address revert.
	raw := revertData(t, callErr(tok, alice.addr, tt.PackTransfer(bob.addr, big.NewInt(2000))))
	ib, err := tt.UnpackError(raw)
	if want := (&contracts.TestTokenInsufficientBalance{Account: alice.addr, Balance: big.NewInt(1000), Needed: big.NewInt(2000)}); err != nil || !sameInsufficientBalance(ib, want) {
		t.Fatalf("transfer too much: %+v (%v)", ib, err)
	}
	if d := revertData(t, callErr(tok, alice.addr, tt.PackTransfer(common.Address{}, big.NewInt(1)))); !hasSelector(d, contracts.TestTokenZeroAddressErrorID()) {
		t.Fatalf("transfer to zero: revert %x", d)
	}
	if ok := call(t, tok, alice.addr, tt.PackTransfer(bob.addr, big.NewInt(100)), tt.UnpackTransfer); !ok {
		t.Fatal("transfer returned false")
	}
	e.mine(bind.Transact(tok, e.opts(alice), tt.PackTransfer(bob.addr, big.NewInt(100))))
	if balance(alice.addr) != 900 || balance(bob.addr) != 100 {
		t.Fatalf("balances after transfer: alice %d bob %d", balance(alice.addr), balance(bob.addr))
	}

	// approve / transferFrom.
	r = e.mine(bind.Transact(tok, e.opts(alice), tt.PackApprove(bob.addr, big.NewInt(300))))
	ap, err := tt.UnpackApprovalEvent(r.Logs[0])
	if err != nil || ap.Owner != alice.addr || ap.Spender != bob.addr || ap.Value.Int64() != 300 {
		t.Fatalf("Approval event = %+v (%v)", ap, err)
	}
	raw = revertData(t, callErr(tok, bob.addr, tt.PackTransferFrom(alice.addr, carol.addr, big.NewInt(400))))
	ia, err := tt.UnpackInsufficientAllowanceError(raw[4:])
	if err != nil || ia.Spender != bob.addr || ia.Allowance.Int64() != 300 || ia.Needed.Int64() != 400 {
		t.Fatalf("transferFrom over allowance: %+v (%v)", ia, err)
	}
	e.mine(bind.Transact(tok, e.opts(bob), tt.PackTransferFrom(alice.addr, carol.addr, big.NewInt(200))))
	if balance(alice.addr) != 700 || balance(carol.addr) != 200 || allowance(alice.addr, bob.addr).Int64() != 100 {
		t.Fatalf("after transferFrom: alice %d carol %d allowance %v", balance(alice.addr), balance(carol.addr), allowance(alice.addr, bob.addr))
	}
	// With enough allowance the balance check still applies.
	maxUint := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	e.mine(bind.Transact(tok, e.opts(alice), tt.PackApprove(bob.addr, maxUint)))
	raw = revertData(t, callErr(tok, bob.addr, tt.PackTransferFrom(alice.addr, carol.addr, big.NewInt(701))))
	if !hasSelector(raw, contracts.TestTokenInsufficientBalanceErrorID()) {
		t.Fatalf("transferFrom over balance: revert %x", raw)
	}
	// An infinite allowance is not decreased.
	e.mine(bind.Transact(tok, e.opts(bob), tt.PackTransferFrom(alice.addr, carol.addr, big.NewInt(50))))
	if allowance(alice.addr, bob.addr).Cmp(maxUint) != 0 || balance(carol.addr) != 250 {
		t.Fatal("infinite allowance decreased or transfer missing")
	}
	if got := call(t, tok, owner.addr, tt.PackTotalSupply(), tt.UnpackTotalSupply); got.Int64() != 1000 {
		t.Fatalf("totalSupply changed to %v", got)
	}
}

// hasSelector reports whether revert data starts with the error's selector.
func hasSelector(data []byte, errorID common.Hash) bool {
	return len(data) >= 4 && bytes.Equal(data[:4], errorID[:4])
}

func sameInsufficientBalance(got any, want *contracts.TestTokenInsufficientBalance) bool {
	g, ok := got.(*contracts.TestTokenInsufficientBalance)
	return ok && g.Account == want.Account && g.Balance.Cmp(want.Balance) == 0 && g.Needed.Cmp(want.Needed) == 0
}

func TestMockAggregator(t *testing.T) {
	t.Parallel()
	owner, other := newAccount(t), newAccount(t)
	e := newEnv(t, owner, other)
	ma := contracts.NewMockAggregator()
	addr := e.deploy(owner, contracts.MockAggregatorMetaData.Bin, ma.PackConstructor(8, "ETH/USD", big.NewInt(3000_00000000)))
	agg := ma.Instance(e.client, addr)
	ctx := context.Background()

	if got := call(t, agg, owner.addr, ma.PackDecimals(), ma.UnpackDecimals); got != 8 {
		t.Errorf("decimals = %d", got)
	}
	if got := call(t, agg, owner.addr, ma.PackDescription(), ma.UnpackDescription); got != "ETH/USD" {
		t.Errorf("description = %q", got)
	}
	if got := call(t, agg, owner.addr, ma.PackVersion(), ma.UnpackVersion); got.Int64() != 4 {
		t.Errorf("version = %v", got)
	}
	head, err := e.client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rd := call(t, agg, owner.addr, ma.PackLatestRoundData(), ma.UnpackLatestRoundData)
	if rd.RoundId.Int64() != 1 || rd.Answer.Int64() != 3000_00000000 || rd.StartedAt.Uint64() != head.Time ||
		rd.UpdatedAt.Uint64() != head.Time || rd.AnsweredInRound.Int64() != 1 {
		t.Fatalf("latestRoundData = %+v (deploy block time %d)", rd, head.Time)
	}

	for _, id := range []int64{0, 2} {
		raw := revertData(t, callErr(agg, owner.addr, ma.PackGetRoundData(big.NewInt(id))))
		if !hasSelector(raw, contracts.MockAggregatorNoDataPresentErrorID()) {
			t.Fatalf("getRoundData(%d): revert %x", id, raw)
		}
	}
	raw := revertData(t, callErr(agg, other.addr, ma.PackSetAnswer(big.NewInt(1))))
	if got, err := ma.UnpackError(raw); err != nil {
		t.Fatalf("setAnswer by non-owner: %v", err)
	} else if _, ok := got.(*contracts.MockAggregatorNotOwner); !ok {
		t.Fatalf("setAnswer by non-owner: %T", got)
	}

	e.adjustTime(time.Minute)
	r := e.mine(bind.Transact(agg, e.opts(owner), ma.PackSetAnswer(big.NewInt(3100_00000000))))
	blk, err := e.client.HeaderByHash(ctx, r.BlockHash)
	if err != nil {
		t.Fatal(err)
	}
	rd = call(t, agg, owner.addr, ma.PackLatestRoundData(), ma.UnpackLatestRoundData)
	if rd.RoundId.Int64() != 2 || rd.Answer.Int64() != 3100_00000000 || rd.UpdatedAt.Uint64() != blk.Time || rd.AnsweredInRound.Int64() != 2 {
		t.Fatalf("latestRoundData after setAnswer = %+v (block time %d)", rd, blk.Time)
	}
	if rd.UpdatedAt.Uint64() < head.Time+60 {
		t.Fatalf("updatedAt %v did not advance from %d", rd.UpdatedAt, head.Time)
	}
	if got := call(t, agg, owner.addr, ma.PackLatestAnswer(), ma.UnpackLatestAnswer); got.Int64() != 3100_00000000 {
		t.Fatalf("latestAnswer = %v", got)
	}
	r1 := call(t, agg, owner.addr, ma.PackGetRoundData(big.NewInt(1)), ma.UnpackGetRoundData)
	if r1.Answer.Int64() != 3000_00000000 || r1.RoundId.Int64() != 1 {
		t.Fatalf("getRoundData(1) = %+v", r1)
	}

	var sawNewRound, sawAnswer bool
	for _, l := range r.Logs {
		if ev, err := ma.UnpackNewRoundEvent(l); err == nil {
			sawNewRound = ev.RoundId.Int64() == 2 && ev.StartedBy == owner.addr && ev.StartedAt.Uint64() == blk.Time
		}
		if ev, err := ma.UnpackAnswerUpdatedEvent(l); err == nil {
			sawAnswer = ev.Current.Int64() == 3100_00000000 && ev.RoundId.Int64() == 2
		}
	}
	if !sawNewRound || !sawAnswer {
		t.Fatalf("events: NewRound %v AnswerUpdated %v", sawNewRound, sawAnswer)
	}

	// Negative answers are valid int256 values.
	e.mine(bind.Transact(agg, e.opts(owner), ma.PackSetAnswer(big.NewInt(-5))))
	if got := call(t, agg, owner.addr, ma.PackLatestAnswer(), ma.UnpackLatestAnswer); got.Int64() != -5 {
		t.Fatalf("latestAnswer = %v", got)
	}
}

// TestBindingsMatchBuild guards against editing build/ without regenerating
// the bindings (run ./generate.sh).
func TestBindingsMatchBuild(t *testing.T) {
	t.Parallel()
	for name, md := range map[string]*bind.MetaData{
		"TestToken":      &contracts.TestTokenMetaData,
		"MockAggregator": &contracts.MockAggregatorMetaData,
	} {
		bin, err := os.ReadFile("build/" + name + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		if md.Bin != "0x"+string(bin) {
			t.Errorf("%s: binding bytecode differs from build/%s.bin; run ./generate.sh", name, name)
		}
	}
}
