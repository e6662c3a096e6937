package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: on a chain sweeping with top-ups, a token-deposit address's old 40 USDT
// transfer (its deposit written off) was mined with a later 80 USDT payment's tokens, and 40
// USDT was carried to the address's next sweep. The chain's sweepMethod was then switched to
// eip7702 before that sweep: its batch asked the address for the whole 80 USDT, which held 40,
// and skipped the sweep on every pass (backing off to every 10 minutes): the 80 USDT deposit was
// never credited. An address with a carry standing keeps the top-up sweep, which takes the
// carry: the deposit is credited its 80 USDT once, the bankroll receives the rest, and the
// address's next payment goes in a batch.
func TestACarryFromBeforeEIP7702IsTakenBeforeTheAddressIsBatched(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	batched := e.svc
	e.svc = e.serviceOn(func(n *chain.Network) { n.SweepMethod, n.SweeperAddress = chain.SweepTopUp, common.Address{} })
	addr := e.tokenAddress("switch")
	lost, payer := e.writtenOffInSignedSweep(addr, "USDT", big.NewInt(40_000_000))
	tank0, bank0 := e.balance(e.gasTank), e.tokenBalance(e.bankroll)
	again, _ := e.payment(payer, 1, addr, "USDT", big.NewInt(80_000_000))
	e.mine(again)
	e.mineMoving(oldestPendingSweep)
	e.scan()
	next := e.findDeposit(again.Hash())
	for i := 0; e.count(`SELECT count(*) FROM sweep_carries WHERE kind = 'CARRIED'`) == 0; i++ {
		if i > 2*confirmations {
			t.Fatal("nothing carried")
		}
		if _, err := e.svc.Settle(e.ctx, lost.ID); err != nil {
			t.Fatal(err)
		}
		e.dev.Commit()
	}
	if d := e.deposit(next); d.SweepID != 0 {
		t.Fatalf("the test needs the later deposit unswept at the switch: it is %s in sweep %d", d.Status, d.SweepID)
	}

	e.svc = batched // the chain's sweepMethod is eip7702 now
	e.run(func() bool { return e.deposit(next).Status == domain.DepositCredited })
	last, _ := e.payment(e.newUser(), 0, addr, "USDT", big.NewInt(10_000_000))
	e.mine(last)
	e.run(func() bool { return e.deposit(e.findDeposit(last.Hash())).Status == domain.DepositCredited })

	if got, want := e.available("USDT"), big.NewInt(90_000_000); got.Cmp(want) != 0 || e.fundKinds(lost.ID) != "" {
		t.Errorf("%v USDT available, written-off fund entries %q; want the two later payments' %v, none", got, e.fundKinds(lost.ID), want)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bank0); got.Int64() != 90_000_000 || e.tokenBalance(addr).Sign() != 0 {
		t.Errorf("the bankroll received %v USDT units and the address keeps %v; want 90000000, nothing", got, e.tokenBalance(addr))
	}
	if n := e.count(`SELECT count(*) FROM sweeps s JOIN deposits d ON d.sweep_id = s.id WHERE d.tx_hash = $1 AND s.batched`,
		last.Hash().Hex()); n != 1 {
		t.Errorf("the payment after the carry was taken is in %d batched sweeps, want 1", n)
	}
	if n := e.count(`SELECT count(*) FROM (SELECT 1 FROM sweep_carries GROUP BY address, currency HAVING sum(bankroll) <> 0) x`); n != 0 {
		t.Errorf("%d carries not taken", n)
	}
	e.gasOnlySince(tank0)
	e.nothingPending()
	e.reconciled()
}

// serviceOn is another service on the env's database and chain, the chain's config changed by
// edit (a config change and restart).
func (e *env) serviceOn(edit func(*chain.Network)) *deposit.Service {
	e.t.Helper()
	n := e.network
	edit(&n)
	registry, client := testfactory.Dial(e.t, n)
	deps := e.deps
	deps.Chains = chain.Connected{Registry: registry, Clients: map[int64]*chain.Client{n.ChainID: client}}
	return deposit.New(deps, e.config)
}
