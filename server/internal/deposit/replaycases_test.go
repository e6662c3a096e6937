package deposit_test

import (
	"encoding/json"
	"math/big"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// movedReceipts is a JSON-RPC proxy in front of a node that, while on, answers receipts from a
// block the chain no longer has at that height (as a node behind a fork does, or the chain
// between a replay's receipt and header calls): the receipt's blockHash is another one.
func movedReceipts(t *testing.T, on *atomic.Bool) func(*chain.Network) {
	t.Helper()
	return func(n *chain.Network) {
		proxy := testfactory.NewNodeProxy(t, n.RPCURLs[0])
		proxy.Rewrite(func(call testfactory.NodeCall, answer []byte) []byte {
			if !on.Load() || call.Method != "eth_getTransactionReceipt" {
				return answer
			}
			var msg map[string]any
			if json.Unmarshal(answer, &msg) == nil {
				if receipt, ok := msg["result"].(map[string]any); ok {
					receipt["blockHash"] = "0x00000000000000000000000000000000000000000000000000000000000dead1"
					answer, _ = json.Marshal(msg)
				}
			}
			return answer
		})
		n.RPCURLs = []string{proxy.URL}
	}
}

// A replay whose receipt names another block than the chain has at that height now (a reorg
// between the checks, or a node on another fork) records nothing and answers UNAVAILABLE, to
// be replayed again: a deposit recorded against a block that does not hold its transaction
// would be credited whatever happens to the transaction.
func TestReplayRefusesAReceiptOfAnotherBlock(t *testing.T) {
	t.Parallel()
	var moved atomic.Bool
	e := setup(t, 0, movedReceipts(t, &moved))
	addr, u := e.payer("u")
	missed := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(missed)
	e.unseen() // the scanner skipped those blocks
	moved.Store(true)
	if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash()); !fault.Is(err, fault.Unavailable) {
		t.Fatalf("replay with a receipt of another block: %v, want UNAVAILABLE", err)
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("%d deposits recorded", n)
	}
	moved.Store(false)
	if out, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash()); err != nil || len(out.Deposits) != 1 {
		t.Fatalf("replayed again: %+v %v", out, err)
	}
}

// A token the chain does not list is never a deposit: the scanner passes over its transfers
// to a deposit address, and a replay of one is refused with UNKNOWN_TOKEN, recording nothing.
func TestUnlistedTokenIsNoDeposit(t *testing.T) {
	t.Parallel()
	e := setup(t, 0, func(n *chain.Network) { n.Tokens = n.Tokens[:1] }) // USDT only: USDC is not accepted
	usdc, _ := e.dev.Token("USDC")
	addr := e.address("u")
	e.mint("USDC", addr, 5_000_000)
	for range confirmations + 1 {
		e.dev.Commit()
		e.scan()
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("%d deposits of an unlisted token", n)
	}
	logs, err := e.client.Logs(e.ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), Addresses: []common.Address{usdc.Address}})
	if err != nil || len(logs) == 0 || len(logs[len(logs)-1].Topics) != 3 || common.BytesToAddress(logs[len(logs)-1].Topics[2].Bytes()) != addr {
		t.Fatalf("the USDC mint's logs: %v %v", logs, err)
	}
	_, err = e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, logs[len(logs)-1].TxHash)
	if fe := fault.As(err); fe.Code != fault.FailedPrecondition || fe.Details["reason"] != deposit.ReasonUnknownToken {
		t.Fatalf("replay of an unlisted token's transfer: %v, want FAILED_PRECONDITION/%s", err, deposit.ReasonUnknownToken)
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("%d deposits after the refused replay", n)
	}
}

// A replayed deposit below its asset's minimum waits like a scanned one (BELOW_MINIMUM: no
// sweep, no DEPOSIT), and is credited, once, with the replayed deposit that brings the
// address to the minimum.
func TestReplayedDustWaitsForTheMinimum(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("u")
	dust := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 1), 2) // 0.000001 USDT, below $1
	more := e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 2_000_000), 2)
	e.mine(dust)
	e.mine(more)
	e.unseen() // the scanner skipped those blocks
	if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, dust.Hash()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.settleAll()
		e.dev.Commit()
	}
	if got := e.depositsWhere("BELOW_MINIMUM"); len(got) != 1 || len(e.hooks.all()) != 0 ||
		e.count(`SELECT count(*) FROM chain_txs WHERE from_address = $1 OR to_address = $1`, addr.Hex()) != 0 {
		t.Fatalf("replayed dust: %d below the minimum, %d DEPOSITs; want it waiting, unswept", len(got), len(e.hooks.all()))
	}
	if again, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, dust.Hash()); err != nil || !again.AlreadyKnown {
		t.Fatalf("dust replayed again: %+v %v", again, err)
	}
	if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, more.Hash()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20 && len(e.hooks.all()) < 2; i++ {
		e.settleAll()
		e.dev.Commit()
	}
	if got := e.depositsWhere("CREDITED"); len(got) != 2 || len(e.hooks.all()) != 2 {
		t.Fatalf("%d credited, %d DEPOSITs; want both deposits credited once", len(got), len(e.hooks.all()))
	}
}

// A replay keeps who entered the deposit (Deposit.ReplayedBy, for the audit): on a transfer it
// records, and on an ORPHANED one it records again (then manual too). A replay of a transfer
// the scanner found, and still holds, changes nothing: not its actor, not manual.
func TestReplayKeepsWhoReplayed(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("u")
	found := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	orphan := e.send(u, 1, addr, testfactory.Ether(2), nil, 2)
	e.mine(found, orphan)
	e.scan()
	e.confirm()
	foundID, orphanID := e.findDeposit(found.Hash()), e.findDeposit(orphan.Hash())
	// As a rollback leaves a transfer whose block left the chain (TestReorgOrphansAndRecredits
	// drives the real one); here the transfer is still mined, so a replay can record it again.
	if _, err := e.pool.Exec(e.ctx, `UPDATE deposits SET status = 'ORPHANED', confirmed_at = NULL WHERE id = $1`, orphanID); err != nil {
		t.Fatal(err)
	}
	admin := domain.AdminActor("11111111-2222-4333-8444-555555555555")

	known, err := e.svc.Replay(e.ctx, admin, domain.AllOperators(), e.dev.ChainID(), found.Hash())
	if err != nil || !known.AlreadyKnown {
		t.Fatalf("replay of a scanned transfer: %+v %v", known, err)
	}
	if d := e.deposit(foundID); d.ReplayedBy != "" || d.Manual {
		t.Fatalf("a known deposit was marked replayed: by %q, manual %v", d.ReplayedBy, d.Manual)
	}

	again, err := e.svc.Replay(e.ctx, admin, domain.AllOperators(), e.dev.ChainID(), orphan.Hash())
	if err != nil || again.AlreadyKnown || len(again.Deposits) != 1 || again.Deposits[0].ID != orphanID {
		t.Fatalf("replay of an orphaned transfer: %+v %v", again, err)
	}
	if d := e.deposit(orphanID); d.ReplayedBy != admin || !d.Manual || d.Status != domain.DepositSweeping {
		t.Fatalf("the orphaned deposit replayed: by %q, manual %v, %s", d.ReplayedBy, d.Manual, d.Status)
	}
}

// A transfer of zero is no deposit: address-poisoning spam sends zero-value token transfers
// and zero-value calls to deposit addresses by the thousand, and each, were it a deposit, would
// cost a gas top-up and a sweep and send the operator an empty DEPOSIT. The scanner records
// nothing for either, and a replay of one is refused, recording nothing.
func TestZeroTransfersAreNoDeposits(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("poisoned")
	zeroToken := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 0), 2)
	zeroNative := e.send(u, 1, addr, new(big.Int), nil, 2)
	e.mine(zeroToken, zeroNative)
	e.runBlocks(confirmations + 1)
	r, err := e.client.Receipt(e.ctx, zeroToken.Hash())
	if err != nil || len(r.Logs) != 1 || r.Logs[0].Address != e.usdt.Address {
		t.Fatalf("the zero transfer emitted no USDT Transfer log: %v %v", r, err)
	}
	for _, tx := range []common.Hash{zeroToken.Hash(), zeroNative.Hash()} {
		_, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), e.dev.ChainID(), tx)
		if fe := fault.As(err); fe.Code != fault.FailedPrecondition || fe.Details["reason"] != deposit.ReasonNotDepositAddress {
			t.Errorf("replay of a zero transfer %s: %v, want FAILED_PRECONDITION/%s", tx.Hex(), err, deposit.ReasonNotDepositAddress)
		}
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("%d deposits of zero", n)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs`); n != 0 {
		t.Fatalf("%d transactions sent (top-ups, sweeps) for transfers of zero", n)
	}
	if n := len(e.hooks.all()); n != 0 {
		t.Fatalf("%d DEPOSIT events for transfers of zero", n)
	}
}
