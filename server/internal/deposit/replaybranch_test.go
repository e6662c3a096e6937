package deposit_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestReplayFromABranchTheScannerHasNotFollowed: the scanner has read blocks that a reorg
// deeper than the confirmation depth then replaced, and a payment is confirmed on the new
// branch at a height the scanner holds another block for. Replayed before the scanner's next
// pass, it answered with a SWEEPING deposit; the pass then rolled back to the fork and took it
// for a deposit whose block left the chain (REORGED, an incident at ERROR, its credit reversed
// if settled by then), though its block is the chain's. The replay answers UNAVAILABLE and
// records nothing until the scanner has followed the reorg; then the scanner records it and it
// is credited once, with no incident, and a replay finds it known.
func TestReplayFromABranchTheScannerHasNotFollowed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// old is the blocks the scanner read past the fork, gap the new branch's blocks before
		// the payment's: the payment is below the scanner's newest block, or above it.
		old, gap int
	}{
		{name: "below the scanned tip", old: confirmations + 2},
		{name: "above the scanned tip", old: 2, gap: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			replayFromAnUnfollowedBranch(t, c.old, c.gap)
		})
	}
}

func replayFromAnUnfollowedBranch(t *testing.T, old, gap int) {
	t.Helper()
	e := setup(t, 0)
	addr, u := e.payer("u")
	parent := e.latestHeader()
	for range old { // the old branch, read by the scanner
		e.dev.Commit()
	}
	e.scanToHead()
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	for range gap {
		e.dev.Commit()
	}
	tx := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(tx)
	for range old + 1 { // the new branch outgrows the old one
		e.dev.Commit()
	}

	out, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), e.dev.ChainID(), tx.Hash())
	if !fault.Is(err, fault.Unavailable) {
		t.Fatalf("replay on a branch the scanner has not followed: %+v %v, want UNAVAILABLE", out, err)
	}
	if n := e.count(`SELECT count(*) FROM deposits`); n != 0 {
		t.Fatalf("the refused replay recorded %d deposits", n)
	}

	e.scanToHead()
	e.run(func() bool { return len(e.depositsWhere(string(domain.DepositCredited))) == 1 })
	d := e.depositsWhere(string(domain.DepositCredited))[0]
	if n := e.count(`SELECT count(*) FROM deposit_reorgs`); n != 0 {
		t.Fatalf("%d reorg incidents for a deposit whose block never left the chain", n)
	}
	if got := e.fundKinds(d.ID); got != "DEPOSIT" {
		t.Fatalf("fund entries %q, want one DEPOSIT", got)
	}
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d DEPOSIT events, want 1", n)
	}
	again, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), e.dev.ChainID(), tx.Hash())
	if err != nil || !again.AlreadyKnown || len(again.Deposits) != 1 || again.Deposits[0].ID != d.ID {
		t.Fatalf("replay after the scan: %+v %v, want the credited deposit, known", again, err)
	}
}
