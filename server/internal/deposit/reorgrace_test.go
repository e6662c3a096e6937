package deposit_test

import (
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// A reorg found while a mined sweep is being credited: the step checked that no reorg holds
// the sweep, then a scan pass marked its deposit REORGED (its block left the chain, deeper
// than the depth) before the credit's transaction. The credit skipped the deposit and closed
// the sweep; when the same transfer (and the sweep) were mined again and confirmed, the
// deposit went back to SWEEPING with its sweep closed, and was never credited. A sweep with a
// deposit under an open reorg is held, whenever the reorg is found: it is credited once the
// reorg resolves.
func TestReorgFoundWhileCreditingASweepHoldsIt(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("dora")
	u := e.newUser()
	e.mint("USDC", u.addr, 50_000_000)
	parent := e.latestHeader()
	usdc, _ := e.dev.Token("USDC")
	e.mine(e.send(u, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2))
	fired := false
	deposit.SetCrash(e.svc, func(step string) {
		if step != deposit.StepSweepCrediting || fired {
			return
		}
		fired = true
		// The chain forks below the deposit; the abandoned blocks' transactions (the deposit,
		// the gas top-up, the sweep) go back to the pool and are mined again in the new branch.
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Error(err)
			return
		}
		e.dev.Commit()
		e.scan() // rolls back: the deposit is REORGED
	})
	e.run(func() bool { return fired })
	deposit.SetCrash(e.svc, nil)
	ds := e.all()
	if len(ds) != 1 || ds[0].Status != domain.DepositReorged || e.available("USDC").Sign() != 0 || len(e.hooks.all()) != 0 {
		t.Fatalf("after the reorg during the credit: %+v, %v USDC, %d DEPOSIT events", ds, e.available("USDC"), len(e.hooks.all()))
	}
	id := ds[0].ID
	// Mined again and confirmed: it counts once, with its DEPOSIT, and the books reconcile.
	e.run(func() bool { return e.deposit(id).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)
	if got := e.available("USDC").Int64(); got != 40_000_000 || len(e.hooks.all()) != 1 || e.fundKinds(id) != "DEPOSIT" {
		t.Fatalf("USDC available %d, %d DEPOSIT events, fund entries %s; want 40 USDC, once", got, len(e.hooks.all()), e.fundKinds(id))
	}
	e.reconciled()
}
