package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// drainGasTank has the gas tank send all it holds but a 21,000-gas transfer's worth away, and
// returns its address.
func (e *env) drainGasTank() common.Address {
	e.t.Helper()
	tankKey, tank := e.keys.GasTank()
	nonce, err := e.client.Nonce(e.ctx, tank, true)
	if err != nil {
		e.t.Fatal(err)
	}
	tip := big.NewInt(1e9)
	feeCap := new(big.Int).Add(new(big.Int).Mul(e.baseFee(), big.NewInt(2)), tip)
	value := new(big.Int).Sub(e.balance(tank), new(big.Int).Mul(big.NewInt(21000), feeCap))
	sink := e.newUser().addr
	drain := types.MustSignNewTx(tankKey, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(e.dev.ChainID()), Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 21000, To: &sink, Value: value})
	if err := e.client.Send(e.ctx, drain); err != nil {
		e.t.Fatal(err)
	}
	e.mine(drain)
	return tank
}

// emptyTankDeposit drains the gas tank, then a user pays 5 USDT to a deposit address and the
// scanner sees it. It returns the deposit, the tank (to refill), and the bankroll's ETH and
// USDT before.
func (e *env) emptyTankDeposit() (id int64, tank common.Address, eth0, usdt0 *big.Int) {
	e.t.Helper()
	addr, eth0, usdt0, u := e.sweepStart()
	tank = e.drainGasTank()
	dep := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 5_000_000), 2)
	e.mine(dep)
	e.scan()
	return e.findDeposit(dep.Hash()), tank, eth0, usdt0
}

// refill sends the gas tank 10 ETH, mined.
func (e *env) refill(tank common.Address) {
	e.t.Helper()
	h, err := e.dev.SendNative(e.ctx, tank, testfactory.Ether(10))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dev.Mine(e.ctx, h); err != nil {
		e.t.Fatal(err)
	}
}

// What was seen: with the gas tank empty, a token deposit's settle step failed (its gas
// top-up refused for want of funds) instead of waiting, so River retried its job with a
// growing backoff (attempt⁴ seconds: over two hours between tries after ten of them) and, the
// tank refilled, the deposit waited that long; the engine meant the top-up to be offered again
// every 5 s. A refused top-up is a wait, like a refused sweep transaction: the step reports
// "not done" (its job snoozes and comes back within the settle poll), never an error.
func TestEmptyGasTankIsAWaitNotAFailure(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	id, tank, eth0, usdt0 := e.emptyTankDeposit()
	for i := range confirmations + 3 { // confirming (its top-up goes out early), then confirmed
		done, err := e.svc.Settle(e.ctx, id)
		if err != nil {
			t.Fatalf("settle %d with the gas tank empty: %v; want a wait", i, err)
		}
		if done && e.deposit(id).Status == "SWEEPING" {
			t.Fatalf("settle %d: done while the deposit waits for its sweep's gas", i)
		}
		e.dev.Commit()
		e.scan()
	}
	if d := e.deposit(id); d.Status != "SWEEPING" || e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`) != 1 {
		t.Fatalf("the deposit is %s with %d top-ups; the test needs it waiting for its one top-up", d.Status,
			e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`))
	}
	e.refill(tank)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	e.checkCredited(e.all(), eth0, usdt0)
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 1 {
		t.Fatalf("%d gas top-ups: the refused one is the one sent once the tank is refilled", n)
	}
}
