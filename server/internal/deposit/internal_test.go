package deposit_test

import (
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// traced turns the trace switch on for the test network.
func traced(n *chain.Network) { n.TraceInternalTransfers = true }

func milli(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) }

// forwarder deploys a contracts.Forwarder and gives it tokens to forward.
func (e *env) forwarder() common.Address {
	e.t.Helper()
	fw, err := e.dev.DeployForwarder(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.mint("USDT", fw, 1_000_000_000)
	return fw
}

// forwarding is a pipeline with a forwarder holding tokens, the deposit addresses of users a
// and b, and a funded payer.
type forwarding struct {
	*env

	fw, a, b common.Address
	payer    user
}

// setupForwarding is setup (no deposit fee) with a forwarder, two deposit addresses and a payer.
func setupForwarding(t *testing.T, opts ...func(*chain.Network)) forwarding {
	t.Helper()
	e := setup(t, 0, opts...)
	f := forwarding{env: e, fw: e.forwarder()}
	f.a = e.address("a")
	f.b = e.address("b")
	f.payer = e.newUser()
	return f
}

// transact sends a transaction from u with an estimated gas limit (to == nil: a creation).
func (e *env) transact(u user, nonce uint64, to *common.Address, value *big.Int, data []byte) *types.Transaction {
	e.t.Helper()
	if value == nil {
		value = new(big.Int)
	}
	gas, err := e.client.EstimateGas(e.ctx, ethereum.CallMsg{From: u.addr, To: to, Value: value, Data: data})
	if err != nil {
		e.t.Fatalf("estimate gas: %v", err)
	}
	tip, feeCap, err := e.client.Fees(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	chainID := big.NewInt(e.dev.ChainID())
	tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce,
		GasTipCap: tip, GasFeeCap: feeCap, Gas: gas * 2, To: to, Value: value, Data: data})
	if err := e.client.Send(e.ctx, tx); err != nil {
		e.t.Fatal(err)
	}
	return tx
}

// depositsOf returns the deposits of a transaction, by log index from -1 down, then the logs.
func (e *env) depositsOf(t *testing.T, tx common.Hash) []domain.Deposit {
	t.Helper()
	rows, _ := e.pool.Query(e.ctx, `SELECT id FROM deposits WHERE tx_hash = $1 ORDER BY (log_index < 0) DESC, abs(log_index)`, tx.Hex())
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]domain.Deposit, len(ids))
	for i, id := range ids {
		if out[i], err = store.New(e.pool).GetDeposit(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// paid is a deposit a test expects: where, under which log index, how much of what.
type paid struct {
	to       common.Address
	logIndex int64
	gross    *big.Int
	currency string
}

// checkDeposits compares a transaction's deposits with the expected ones; each is its own
// deposit, keyed by the outer transaction.
func (e *env) checkDeposits(t *testing.T, tx common.Hash, want []paid) []domain.Deposit {
	t.Helper()
	got := e.depositsOf(t, tx)
	if len(got) != len(want) {
		var logs []int64
		for _, d := range got {
			logs = append(logs, d.LogIndex)
		}
		t.Fatalf("%d deposits of %s (log indexes %v), want %d", len(got), tx.Hex(), logs, len(want))
	}
	for i, d := range got {
		w := want[i]
		if d.TxHash != tx.Hex() || d.Address != w.to.Hex() || d.LogIndex != w.logIndex || d.GrossAmount.Cmp(w.gross) != 0 ||
			d.Currency != w.currency || d.IdempotencyKey != deposit.IdempotencyKey(1337, tx, w.logIndex) {
			t.Errorf("deposit %d: %s to %s log %d gross %v %s key %s; want to %s log %d gross %v %s",
				i, d.TxHash, d.Address, d.LogIndex, d.GrossAmount, d.Currency, d.IdempotencyKey, w.to.Hex(), w.logIndex, w.gross, w.currency)
		}
	}
	return got
}

// transferLogIndexes are the log indexes of a transaction's token Transfer logs.
func (e *env) transferLogIndexes(t *testing.T, tx common.Hash) []int64 {
	t.Helper()
	r, err := e.client.Receipt(e.ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, l := range r.Logs {
		out = append(out, int64(l.Index))
	}
	return out
}

func addresses(as ...common.Address) []common.Address { return as }

//nolint:tparallel // its subtests check deposits before the test confirms them: parallel ones would run after
func TestScannerFindsInternalTransfers(t *testing.T) {
	t.Parallel()
	e := setupForwarding(t, traced)
	fw, a, b, u := e.fw, e.a, e.b, e.payer
	stranger := common.HexToAddress("0x00000000000000000000000000000000000000d1")
	f := contracts.NewForwarder()
	selfdestructTo := func(to common.Address) []byte { return append(append([]byte{0x73}, to.Bytes()...), 0xff) } // PUSH20 to; SELFDESTRUCT

	cases := []struct {
		name  string
		to    *common.Address // nil: a creation
		value *big.Int
		data  []byte
		want  func(t *testing.T, tx common.Hash) []paid
	}{
		{"a contract pays two deposit addresses, one of them twice", &fw, milli(6),
			f.PackForward(addresses(a, b, a), ms(1, 2, 3)),
			func(*testing.T, common.Hash) []paid {
				return []paid{{a, -2, milli(1), "ETH"}, {b, -3, milli(2), "ETH"}, {a, -4, milli(3), "ETH"}}
			}},
		{"a transfer to a stranger keeps its place in the numbering", &fw, milli(3),
			f.PackForward(addresses(stranger, b), ms(1, 2)),
			func(*testing.T, common.Hash) []paid { return []paid{{b, -3, milli(2), "ETH"}} }},
		{"a transfer inside a reverted call is not a deposit", &fw, milli(9),
			// Each payment is a self-call with value (this.pay), then the payment: a's pair reverts.
			f.PackForwardRejecting(addresses(a, b), ms(4, 5), []bool{true, false}),
			func(*testing.T, common.Hash) []paid { return []paid{{b, -5, milli(5), "ETH"}} }},
		{"a contract destroyed as it is created pays by SELFDESTRUCT", nil, milli(7), selfdestructTo(a),
			func(*testing.T, common.Hash) []paid { return []paid{{a, -2, milli(7), "ETH"}} }},
		{"two Transfer logs in one transaction are two deposits", &fw, nil,
			f.PackForwardTokens(e.usdt.Address, addresses(a, b), []*big.Int{big.NewInt(7_000_000), big.NewInt(8_000_000)}),
			func(t *testing.T, tx common.Hash) []paid {
				t.Helper()
				logs := e.transferLogIndexes(t, tx)
				if len(logs) != 2 {
					t.Fatalf("%d logs", len(logs))
				}
				return []paid{{a, logs[0], big.NewInt(7_000_000), "USDT"}, {b, logs[1], big.NewInt(8_000_000), "USDT"}}
			}},
		{"a top-level transfer is still log index -1", &a, milli(10), nil,
			func(*testing.T, common.Hash) []paid { return []paid{{a, -1, milli(10), "ETH"}} }},
	}
	txs := make([]*types.Transaction, 0, len(cases)+1)
	for i, c := range cases {
		txs = append(txs, e.transact(u, uint64(i), c.to, c.value, c.data))
	}
	// Coffer's own wallet paying through a contract is not a deposit either.
	gasKey, gasAddr := e.keys.GasTank()
	gasNonce, err := e.client.Nonce(e.ctx, gasAddr, true)
	if err != nil {
		t.Fatal(err)
	}
	own := e.transact(user{gasKey, gasAddr}, gasNonce, &fw, milli(1), f.PackForward(addresses(a), ms(1)))
	e.mine(append(txs, own)...)
	e.scan()
	e.checkDeposits(t, own.Hash(), nil)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, d := range e.checkDeposits(t, txs[i].Hash(), c.want(t, txs[i].Hash())) {
				if d.Status != "CONFIRMING" {
					t.Errorf("deposit %d is %s before its confirmations", d.ID, d.Status)
				}
			}
		})
	}

	// The deposits confirm like any other; rescanning finds nothing new.
	var total int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM deposits`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 9 {
		t.Fatalf("%d deposits, want 9", total)
	}
	for range confirmations {
		e.dev.Commit()
		e.scan()
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = next_block - 5`); err != nil {
		t.Fatal(err)
	}
	e.scan()
	rows, _ := e.pool.Query(e.ctx, `SELECT idempotency_key FROM deposits WHERE confirmed_at IS NOT NULL`)
	keys, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(keys)
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM deposits`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if total != 9 || len(keys) != 9 || len(slices.Compact(keys)) != 9 {
		t.Fatalf("%d deposits, %d confirmed with distinct keys, want 9: %v", total, len(keys), keys)
	}
}

func TestInternalTransfersNeedTheSwitch(t *testing.T) {
	t.Parallel()
	e := setupForwarding(t) // traceInternalTransfers off
	fw, a, b, u := e.fw, e.a, e.b, e.payer
	internal := e.transact(u, 0, &fw, milli(1), contracts.NewForwarder().PackForward(addresses(a), []*big.Int{milli(1)}))
	direct := e.transact(u, 1, &b, milli(2), nil)
	e.mine(internal, direct)
	for range confirmations {
		e.scan()
		e.dev.Commit()
	}
	e.scan()
	e.checkDeposits(t, internal.Hash(), nil)
	e.checkDeposits(t, direct.Hash(), []paid{{b, -1, milli(2), "ETH"}})
	// Replay refuses it as before: without tracing it pays no deposit address.
	_, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, internal.Hash())
	if r, _ := fault.As(err).Details["reason"].(string); r != deposit.ReasonNotDepositAddress {
		t.Fatalf("replay without tracing: %v", err)
	}
}

func TestReplayTracesInternalTransfers(t *testing.T) {
	t.Parallel()
	e := setupForwarding(t, traced)
	fw, a, b, u := e.fw, e.a, e.b, e.payer
	f := contracts.NewForwarder()
	// Payments the scanner never saw: a contract-forwarded one (the 0.005 ETH, with
	// another to a second address), and one whose only payment to a deposit address reverted.
	missed := e.transact(u, 0, &fw, milli(7), f.PackForward(addresses(a, b), ms(5, 2)))
	undone := e.transact(u, 1, &fw, milli(3), f.PackForwardRejecting(addresses(a), ms(3), []bool{true}))
	e.mine(missed, undone)
	e.confirm()
	// The scanner skipped those blocks.
	mined, err := e.client.Receipt(e.ctx, missed.Hash())
	if err != nil {
		t.Fatal(err)
	}
	block := mined.BlockNumber.Int64()
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = $1`, block+confirmations+1); err != nil {
		t.Fatal(err)
	}

	out, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash())
	if err != nil || out.AlreadyKnown || len(out.Deposits) != 2 {
		t.Fatalf("replay: %+v %v", out, err)
	}
	for _, d := range e.checkDeposits(t, missed.Hash(), []paid{{a, -2, milli(5), "ETH"}, {b, -3, milli(2), "ETH"}}) {
		if !d.Manual || d.ConfirmedAt == nil {
			t.Errorf("replayed deposit %d: manual %v, confirmed %v", d.ID, d.Manual, d.ConfirmedAt)
		}
	}
	again, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash())
	if err != nil || !again.AlreadyKnown || len(again.Deposits) != 2 || again.Deposits[0].ID != out.Deposits[0].ID || again.Deposits[1].ID != out.Deposits[1].ID {
		t.Fatalf("replay again: %+v %v", again, err)
	}
	if got := e.depositsOf(t, missed.Hash()); len(got) != 2 {
		t.Fatalf("%d deposits after the second replay", len(got))
	}
	// Each is credited with its own DEPOSIT, naming the outer transaction.
	e.run(func() bool { return len(e.hooks.all()) >= 2 })
	events := e.hooks.all()
	if len(events) != 2 {
		t.Fatalf("%d DEPOSIT events, want 2", len(events))
	}
	keys := map[string]bool{}
	for _, ev := range events {
		keys[ev.IdempotencyKey] = true
		if ev.GetTransactionHash() != missed.Hash().Hex() || ev.Type != "NATIVE" {
			t.Errorf("DEPOSIT %d: tx %s type %s", ev.DepositId, ev.GetTransactionHash(), ev.Type)
		}
	}
	if !keys[deposit.IdempotencyKey(1337, missed.Hash(), -2)] || !keys[deposit.IdempotencyKey(1337, missed.Hash(), -3)] {
		t.Errorf("idempotency keys %v", keys)
	}
	_, err = e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, undone.Hash())
	if r, _ := fault.As(err).Details["reason"].(string); r != deposit.ReasonNotDepositAddress {
		t.Fatalf("replay of a reverted inner payment: %v", err)
	}
	// The scanner, once it reads those blocks, finds the same transfers under the same keys.
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = $1`, block); err != nil {
		t.Fatal(err)
	}
	e.scan()
	e.checkDeposits(t, missed.Hash(), []paid{{a, -2, milli(5), "ETH"}, {b, -3, milli(2), "ETH"}})
}

// ms is a list of milli-ether amounts.
func ms(ns ...int64) []*big.Int {
	out := make([]*big.Int, len(ns))
	for i, n := range ns {
		out[i] = milli(n)
	}
	return out
}
