package deposit_test

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// replayAhead pays 1 ETH to a new user's deposit address while the scanner is stalled (its
// cursor stays below the payment's block), lets the block reach the confirmation depth and
// replays it; credit settles it until it is credited. It returns the deposit, the payer and
// the head before the payment (where a fork takes it away), gap empty blocks below it.
func (e *env) replayAhead(userID string, credit bool, gap int) (domain.Deposit, user, *types.Header) {
	e.t.Helper()
	addr, u := e.payer(userID)
	parent := e.latestHeader()
	for range gap {
		e.dev.Commit()
	}
	tx := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(tx)
	e.confirm()
	out, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), e.dev.ChainID(), tx.Hash())
	if err != nil || len(out.Deposits) != 1 || out.Deposits[0].Status != domain.DepositSweeping {
		e.t.Fatalf("replay: %+v %v", out, err)
	}
	d := out.Deposits[0]
	cur, err := store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID())
	if err != nil || cur.NextBlock > d.BlockNumber {
		e.t.Fatalf("the scanner is at block %d, not behind the replayed deposit's block %d (%v)", cur.NextBlock, d.BlockNumber, err)
	}
	for i := 0; credit && i < 20 && e.deposit(d.ID).Status != domain.DepositCredited; i++ {
		e.settleAll()
		e.dev.Commit()
	}
	d = e.deposit(d.ID)
	if credit && (d.Status != domain.DepositCredited || e.available("ETH").Cmp(d.Amount) != 0) {
		e.t.Fatalf("the replayed deposit is %s, %v ETH available", d.Status, e.available("ETH"))
	}
	if depth := e.latestHeader().Number.Uint64() - parent.Number.Uint64(); depth <= confirmations {
		e.t.Fatalf("a fork at %d is only %d blocks deep", parent.Number, depth)
	}
	return d, u, parent
}

// scanToHead runs scan passes until the scanner has read the head.
func (e *env) scanToHead() {
	e.t.Helper()
	head := e.latestHeader().Number.Uint64()
	for range 100 {
		e.scan()
		if cur, err := store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID()); err != nil || cur.NextBlock > head {
			return
		}
	}
	e.t.Fatal("the scanner did not reach the head")
}

// A deposit replayed ahead of a stalled scanner (a chain being backfilled) whose block then
// leaves the chain in a reorg deeper than the confirmation depth, its payer spending the same
// nonce elsewhere: when the scanner reaches that height and reads the other block there, the
// deposit is treated as a rollback treats one whose block left the chain. Credited, it is
// REORGED and its credit reversed; not yet credited, it is REORGED with nothing to reverse;
// not yet confirmed, it is ORPHANED. The scanner kept no hash of that block, so a rollback
// never sees it go; before, the deposit stayed counted for money that is gone.
func TestReplayedDepositWhoseBlockLeftTheChainAheadOfTheScanner(t *testing.T) {
	// Not parallel, nor its cases: each checks how much coffer_deposits_reorged_total grew, a
	// process-wide counter that every other reorg on the dev chain's id grows too (make stress
	// saw 2 for 1).
	cases := []struct {
		name string
		// credit settles the replayed deposit until credited; unconfirm puts it back to
		// CONFIRMING (no path records one ahead of the scanner today: a replay confirms at
		// once; the pass handles it as a rollback does all the same).
		credit, unconfirm bool
		status            domain.DepositStatus
		funds             string
		reorgs            int
	}{
		{name: "credited", credit: true, status: domain.DepositReorged, funds: "DEPOSIT,REORG", reorgs: 1},
		{name: "sweeping", status: domain.DepositReorged, reorgs: 1},
		{name: "confirming", unconfirm: true, status: domain.DepositOrphaned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := setup(t, 0)
			d, u, parent := e.replayAhead("u", c.credit, 0)
			if c.unconfirm {
				if _, err := e.pool.Exec(e.ctx, `UPDATE deposits SET status = 'CONFIRMING', confirmed_at = NULL WHERE id = $1`, d.ID); err != nil {
					t.Fatal(err)
				}
			}
			before := reorgedCount(e.dev.ChainID(), "ETH")
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			e.mine(e.send(u, 0, common.HexToAddress("0x00000000000000000000000000000000000000c0"), testfactory.Ether(1), nil, 50))
			for range confirmations + 2 {
				e.dev.Commit()
			}
			if h, err := e.client.Header(e.ctx, nil); err != nil || h.Number.Uint64() < d.BlockNumber {
				t.Fatalf("the new branch is not past the deposit's height: %v %v", h, err)
			}
			e.scanToHead()

			got := e.deposit(d.ID)
			if got.Status != c.status {
				t.Fatalf("the replayed deposit is %s after the scanner passed its height, want %s", got.Status, c.status)
			}
			if n := e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1`, d.ID); n != c.reorgs {
				t.Fatalf("%d deposit_reorgs rows, want %d", n, c.reorgs)
			}
			if got := e.fundKinds(d.ID); got != c.funds {
				t.Fatalf("fund entries %q, want %q", got, c.funds)
			}
			if e.available("ETH").Sign() != 0 {
				t.Fatalf("%v ETH still available", e.available("ETH"))
			}
			if n := e.count(`SELECT count(*) FROM deposits`); n != 1 {
				t.Fatalf("%d deposits", n)
			}
			if c.reorgs == 0 {
				return
			}
			if got := e.reorgActions(d.ID); got != "DETECTED/system" {
				t.Fatalf("audit: %s", got)
			}
			if got := reorgedCount(e.dev.ChainID(), "ETH") - before; got != 1 {
				t.Fatalf("coffer_deposits_reorged_total{ETH} grew by %v", got)
			}
			list, _, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, "")
			if err != nil || len(list) != 1 || list[0].BlockHash != d.BlockHash || list[0].PriorStatus != d.Status ||
				list[0].ForkBlock >= d.BlockNumber || list[0].ReincludedBlock != 0 {
				t.Fatalf("listed: %+v %v", list, err)
			}
			// More passes change nothing.
			e.dev.Commit()
			e.scanToHead()
			if e.deposit(d.ID).Status != c.status || e.fundKinds(d.ID) != c.funds || e.reorgActions(d.ID) != "DETECTED/system" {
				t.Fatal("a later pass changed the reorged deposit")
			}
		})
	}
}

// The same, but the abandoned blocks' transactions are mined again in the new branch (the
// payment and its sweep): the scanner marks the deposit REORGED and records the re-inclusion
// in the same pass, and once the new block is confirmed it counts again, once, as a deposit
// a rollback found does. The payment may come back below its old height, in a pass that does
// not read that height (window 1): the transfer found in another block is the sign then
// (before, the deposit moved to the new block still CREDITED, its sweep never checked).
func TestReplayedDepositMinedAgainAheadOfTheScannerCountsOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		gap    int // empty blocks between the fork and the payment: it comes back that much lower
		window uint64
	}{
		{name: "same height", window: 0},
		{name: "lower, read a block a pass", gap: 2, window: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{config: deposit.Config{LogWindow: c.window}})
			d, _, parent := e.replayAhead("u", true, c.gap)
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			e.dev.Commit()
			e.scanToHead()
			again := e.deposit(d.ID)
			if again.Status != domain.DepositReorged || again.BlockHash == d.BlockHash || e.available("ETH").Sign() != 0 {
				t.Fatalf("after the pass: %s in %s (was %s), %v ETH", again.Status, again.BlockHash, d.BlockHash, e.available("ETH"))
			}
			if c.gap > 0 && again.BlockNumber >= d.BlockNumber {
				t.Fatalf("mined again at %d, not below %d", again.BlockNumber, d.BlockNumber)
			}
			list, _, _ := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, "")
			if len(list) != 1 || list[0].ReincludedBlock != again.BlockNumber || list[0].ReincludedHash != again.BlockHash ||
				list[0].BlockHash != d.BlockHash || list[0].ForkBlock >= again.BlockNumber {
				t.Fatalf("listed: %+v", list)
			}
			e.countsAgainOnce(d.ID, "ETH", d.Amount.Int64())
			if got := e.reorgActions(d.ID); got != "DETECTED/system,REINCLUDED/system" {
				t.Fatalf("audit: %s", got)
			}
			if n := len(e.hooks.all()); n != 1 {
				t.Fatalf("%d DEPOSIT events, want the one", n)
			}
			if n := e.count(`SELECT count(*) FROM deposits`); n != 1 {
				t.Fatalf("%d deposits", n)
			}
		})
	}
}

// A deposit replayed ahead of the scanner whose block stays on the chain is left alone when
// the scanner reaches it: one deposit, still CREDITED, no reorg, one credit, one DEPOSIT.
func TestReplayedDepositAheadOfTheScannerIsLeftAloneWhenItsBlockStays(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	d, _, _ := e.replayAhead("u", true, 0)
	e.scanToHead()
	e.runBlocks(2)
	got := e.deposit(d.ID)
	if got.Status != domain.DepositCredited || got.BlockHash != d.BlockHash || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("after the scanner passed it: %s in %s, %v ETH", got.Status, got.BlockHash, e.available("ETH"))
	}
	if n := e.count(`SELECT count(*) FROM deposit_reorgs`); n != 0 {
		t.Fatalf("%d reorgs", n)
	}
	if got := e.fundKinds(d.ID); got != "DEPOSIT" {
		t.Fatalf("fund entries: %s", got)
	}
	if n, m := e.count(`SELECT count(*) FROM deposits`), len(e.hooks.all()); n != 1 || m != 1 {
		t.Fatalf("%d deposits, %d DEPOSIT events", n, m)
	}
}
