package deposit_test

import (
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// What was seen: a native deposit above its asset's minimum, confirmed while gas was dear (its
// sweep's gas was more than it held), was parked BELOW_MINIMUM; the gas fell, the address held
// enough to sweep it many times over, and it stayed BELOW_MINIMUM for good: only a later
// deposit to the same address looked at it again.
func TestParkedDepositIsSweptWhenItBecomesSweepable(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{network: func(n *chain.Network) { n.NativeMinDeposit = "0.00001" },
		config: deposit.Config{ParkedRecheck: time.Nanosecond}})
	burner := e.newGasBurner()
	addr, eth0, usdt0, u := e.sweepStart()
	// Full blocks raise the base fee to over 40 gwei.
	burner.raiseBaseFee(big.NewInt(40e9))
	// 0.001 ETH: a hundred times the minimum, but less than a 21,000-gas transfer at today's
	// fee cap (2 × base fee + a 30 gwei tip, the tip the blocks paid).
	dep := e.send(u, 0, addr, milliETH(1), nil, 40)
	e.mine(dep)
	// The base fee falls 12.5% a block while it confirms: still over 20 gwei.
	id := e.parked(dep)
	e.settleQueued() // the jobs the confirmation queued; parked, the deposit is done for now
	// Empty blocks: the base fee falls back to a fraction of a gwei; the address now holds far
	// more than its sweep's gas.
	for e.baseFee().Cmp(big.NewInt(1e9)) > 0 {
		e.dev.Commit()
	}
	// The scan looks at the parked deposit again and queues its settle job, which sweeps it.
	e.creditedByRecheck(id, "after the gas fell", eth0, usdt0)
}

// creditedByRecheck runs a scan pass, which must queue deposit id's settle job (and only
// it), then works the jobs until the deposit is credited, once, and the books reconcile.
func (e *env) creditedByRecheck(id int64, when string, eth0, usdt0 *big.Int) {
	e.t.Helper()
	e.scan()
	if queued := e.queuedSettles(); len(queued) != 1 || queued[0] != id {
		e.t.Fatalf("settle jobs queued %s: %v, want deposit %d's", when, queued, id)
	}
	for range 20 {
		if len(e.hooks.all()) == 1 {
			break
		}
		e.settleQueued()
		e.settleAll()
		e.dev.Commit()
		e.scan()
	}
	e.checkCredited(e.all(), eth0, usdt0)
	e.reconciled()
}

// parked confirms the mined tx's deposit (scanning and settling each block) and returns its id;
// the test needs it parked: BELOW_MINIMUM.
func (e *env) parked(tx *types.Transaction) int64 {
	e.t.Helper()
	e.runBlocks(confirmations + 1)
	id := e.findDeposit(tx.Hash())
	if d := e.deposit(id); d.Status != "BELOW_MINIMUM" {
		e.t.Fatalf("the deposit is %s, want BELOW_MINIMUM (the test needs it parked)", d.Status)
	}
	return id
}

// queuedSettles are the deposits whose settle job waits to run.
func (e *env) queuedSettles() []int64 {
	e.t.Helper()
	return testfactory.Column[int64](e.ctx, e.t, e.pool, `SELECT (args->>'depositId')::bigint FROM river_job
		WHERE kind = 'deposit.settle' AND state IN ('available', 'scheduled') ORDER BY id`)
}

// settleQueued works the queued settle jobs once, as a worker would, and completes them.
func (e *env) settleQueued() {
	e.t.Helper()
	for _, id := range e.queuedSettles() {
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			e.t.Fatalf("settle %d: %v", id, err)
		}
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE river_job SET state = 'completed', finalized_at = now()
		WHERE kind = 'deposit.settle' AND state IN ('available', 'scheduled')`); err != nil {
		e.t.Fatal(err)
	}
}

// What was seen: a token deposit whose sweep could not be funded (the gas tank was empty) failed
// its settle job on every attempt; River discards a job after its attempts, and nothing queued
// a confirmed deposit's job again, so once the tank was refilled the deposit stayed SWEEPING,
// never credited. The scan queues the job of such a deposit again. (An empty tank is now a wait,
// TestEmptyGasTankIsAWaitNotAFailure; a node down for days still spends a job's attempts.)
func TestDepositWhoseSettleJobWasDiscardedIsSweptOnceTheTankIsRefilled(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{config: deposit.Config{ParkedRecheck: time.Nanosecond}})
	id, tank, eth0, usdt0 := e.emptyTankDeposit()
	for range confirmations + 1 {
		e.dev.Commit()
		e.scan()
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			t.Fatalf("settle with an empty gas tank: %v", err)
		}
	}
	if d := e.deposit(id); d.Status != "SWEEPING" || e.count(`SELECT count(*) FROM sweeps`) != 1 {
		t.Fatalf("the deposit is %s; the test needs it confirmed and its sweep waiting for gas", d.Status)
	}
	// River gives up on its settle job after its attempts (days of backoff with the tank empty).
	if _, err := e.pool.Exec(e.ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE kind = 'deposit.settle'`); err != nil {
		t.Fatal(err)
	}
	// The tank is refilled; the next scan queues the deposit's job again, which credits it.
	e.refill(tank)
	e.creditedByRecheck(id, "after the refill", eth0, usdt0)
	if queued := e.queuedSettles(); len(queued) != 0 {
		t.Fatalf("settle jobs queued for a credited deposit: %v", queued)
	}
}

// The parked recheck never sweeps dust because a rate source is down: a USD minimum without a
// price is no minimum to the sweep, so dust parked against it would be swept, each address
// topped up with more gas than it holds, chain-wide, for as long as the outage lasts.
func TestParkedDustStaysParkedDuringARateOutage(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	e := setupWith(t, options{
		config: deposit.Config{ParkedRecheck: time.Nanosecond},
		prices: func(dev *devchain.Chain) deposit.Prices {
			feed, _ := dev.Aggregator("USDT/USD")
			agg := rates.NewAggregator(dev.Client(), map[string]common.Address{"USDT": feed.Address},
				rates.AggregatorOptions{TTL: -1, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
			return rates.NewChain([]*rates.Aggregator{agg}, rates.DevStatic())
		},
	})
	addr, _, _, u := e.sweepStart()
	dust := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 500_000), 2) // 0.50 USDT: below the $1 minimum
	e.mine(dust)
	id := e.parked(dust)
	e.settleQueued()
	// The USDT feed goes stale: no price, so no USD minimum.
	skew.Store(int64(2 * time.Hour))
	for range 3 {
		e.dev.Commit()
		e.scan()
		if queued := e.queuedSettles(); len(queued) != 0 {
			t.Fatalf("settle jobs queued for parked dust during a rate outage: %v", queued)
		}
	}
	if d := e.deposit(id); d.Status != "BELOW_MINIMUM" || e.count(`SELECT count(*) FROM chain_txs`) != 0 {
		t.Fatalf("the dust is %s with %d transactions; want it parked, untouched", d.Status, e.count(`SELECT count(*) FROM chain_txs`))
	}
}
