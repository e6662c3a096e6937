package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// sweepBlock is the block the books say the deposit's mined sweep transactions are in (the
// lowest).
func (e *env) sweepBlock() uint64 {
	e.t.Helper()
	return uint64(e.count(`SELECT min(mined_block) FROM chain_txs WHERE purpose IN ('sweep', 'sweep-fee', 'sweep-batch')
		AND state = 'mined'`))
}

// forkAt replaces the chain after block number parent with a branch that outgrows the old head,
// what the pool held dropped; mined, when set, runs on the new branch first.
func (e *env) forkAt(parent uint64, mined func()) {
	e.t.Helper()
	oldHead := e.latestHeader().Number.Uint64()
	h, err := e.client.Header(e.ctx, new(big.Int).SetUint64(parent))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.dev.Fork(h.Hash()); err != nil {
		e.t.Fatal(err)
	}
	e.dev.Rollback()
	if mined != nil {
		mined()
	}
	for e.latestHeader().Number.Uint64() <= oldHead {
		e.dev.Commit()
	}
}

// What was seen: an engineer reinstated a reorged deposit whose transfer never came back (the
// payer spent its nonce elsewhere; paid another way); its sweep, mined on the old branch in a
// block after the deposit's, is in the books there. A later reorg forking between the
// deposit's (long gone) block and that sweep's block found the sweep off the chain and marked
// the deposit REORGED again, reversing the engineer's decision: its sweep leaving took nothing
// away (no money was ever at its address on this chain). Now a deposit whose own block an
// earlier reorg found gone is not reorged for its sweep (nor the carry that covered it).
func TestReinstatedDepositIsNotReorgedAgainForItsSweep(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	payer := e.newUser()
	d, parent := e.creditedEther(payer, e.address("erin"))
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.mine(e.send(payer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c1"), testfactory.Ether(1), nil, 50))
	for range confirmations + 2 {
		e.scan()
		e.dev.Commit()
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: d.ID, Resolution: "REINSTATE", Note: "paid again by wire",
		Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	e.runBlocks(2)
	if got := e.deposit(d.ID); got.Status != domain.DepositCredited {
		t.Fatalf("after the reinstatement: %s", got.Status)
	}
	// Another reorg forks above the deposit's (gone) block, below its sweep's.
	if s := e.sweepBlock(); s <= d.BlockNumber+1 {
		t.Fatalf("the sweep's block %d is not above the deposit's %d", s, d.BlockNumber)
	}
	e.forkAt(d.BlockNumber, nil)
	e.runBlocks(confirmations + 2)
	if got := e.deposit(d.ID); got.Status != domain.DepositCredited || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("after the second reorg: %s, %v ETH available (want %v)", got.Status, e.available("ETH"), d.Amount)
	}
	if got := e.reorgActions(d.ID); got != "DETECTED/system,REINSTATE/service-team:cli:eve" {
		t.Fatalf("audit: %s", got)
	}
}
