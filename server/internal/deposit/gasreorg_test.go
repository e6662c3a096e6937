package deposit_test

import (
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// topUps are the gas top-ups to an address, oldest first.
func (e *env) topUps(addr common.Address) []domain.ChainTx {
	e.t.Helper()
	ids := testfactory.Column[int64](e.ctx, e.t, e.pool, `SELECT id FROM chain_txs WHERE purpose = 'gas' AND to_address = $1 ORDER BY id`,
		addr.Hex())
	out := make([]domain.ChainTx, len(ids))
	for i, id := range ids {
		var err error
		if out[i], err = store.New(e.pool).ChainTx(e.ctx, id); err != nil {
			e.t.Fatal(err)
		}
	}
	return out
}

// takeGasTankNonce has the gas tank send a 0-value transfer to itself at nonce, unmined.
func (e *env) takeGasTankNonce(nonce uint64) *types.Transaction {
	e.t.Helper()
	key, tank := e.keys.GasTank()
	tip := big.NewInt(2e9)
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(e.dev.ChainID()), Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, big.NewInt(100e9)),
		Gas: 21000, To: &tank, Value: new(big.Int)})
	if err := e.client.Send(e.ctx, tx); err != nil {
		e.t.Fatal(err)
	}
	return tx
}

// creditedWithTopUp pays 40 USDC to a new address and waits for its DEPOSIT: the deposit, its
// transfer (to send again after a fork), its address's one gas top-up (mined) and the block
// before the transfer's (to fork from).
func (e *env) creditedWithTopUp(name string) (id int64, addr common.Address, transfer *types.Transaction, topUp domain.ChainTx,
	parent *types.Header,
) {
	e.t.Helper()
	addr = e.address(name)
	payer := e.newUser()
	e.mint("USDC", payer.addr, 50_000_000)
	usdc, _ := e.dev.Token("USDC")
	parent = e.latestHeader()
	transfer = e.send(payer, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	e.mine(transfer)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	id = e.findDeposit(transfer.Hash())
	topUps := e.topUps(addr)
	if len(topUps) != 1 || topUps[0].State != domain.ChainTxMined || e.deposit(id).Status != domain.DepositCredited {
		e.t.Fatalf("before the reorg: %d top-ups %+v, deposit %s", len(topUps), topUps, e.deposit(id).Status)
	}
	return id, addr, transfer, topUps[0], parent
}

// What was seen: a credited token deposit whose block, its sweep's gas top-up and its sweep
// left the chain in a reorg deeper than the confirmation depth, and whose transfer was mined
// again, never counted again when the top-up itself was not mined again (the node dropped it,
// or the gas tank's nonce went to another transaction on the new branch): its sweep was sent
// again, refused for want of gas, and waited silently for good (the tests passed only because
// the simulated chain puts the abandoned blocks' transactions back in its pool). The sweep sent
// again is now funded like any other, and a top-up that left the chain is sent again: its own
// bytes while its nonce is free (the same nonce: at most one top-up), or, once another
// transaction holds that nonce at depth, a new top-up (the old one marked failed).
func TestGasTopUpThatLeftTheChainIsSentAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		takeNonce bool // the gas tank's nonce goes to another transaction on the new branch
	}{
		{"dropped, its nonce free", false},
		{"its nonce taken by another transaction", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			id, addr, transfer, topUp, parent := e.creditedWithTopUp("gus")
			lost := []domain.ChainTx{topUp}
			usdc, _ := e.dev.Token("USDC")

			// The chain forks below the deposit and the node forgets the abandoned blocks'
			// transactions; the user's transfer is sent again, the top-up is not.
			if err := e.dev.Fork(parent.Hash()); err != nil {
				t.Fatal(err)
			}
			e.dev.Rollback()
			sent := []*types.Transaction{transfer}
			if c.takeNonce {
				sent = append(sent, e.takeGasTankNonce(lost[0].Nonce))
			}
			if err := e.client.Send(e.ctx, transfer); err != nil {
				t.Fatal(err)
			}
			e.mine(sent...)
			if _, err := e.client.Receipt(e.ctx, common.HexToHash(lost[0].MinedHash)); !errors.Is(err, ethereum.NotFound) {
				t.Fatalf("the top-up is still on the chain: %v", err)
			}
			e.scan() // rolls back
			if got := e.deposit(id); got.Status != domain.DepositReorged || e.available("USDC").Sign() != 0 {
				t.Fatalf("after the rollback: %s, %v USDC", got.Status, e.available("USDC"))
			}

			e.countsAgainOnce(id, "USDC", 40_000_000)
			if got := e.reorgActions(id); got != "DETECTED/system,REINCLUDED/system" {
				t.Fatalf("audit: %s", got)
			}
			if got := testfactory.TokenBalance(e.ctx, t, e.client, usdc.Address, e.bankroll); got.Int64() != 40_000_000 {
				t.Fatalf("the bankroll holds %v USDC", got)
			}
			// One top-up reached the address on this chain: the first sent again, or a new one
			// in place of the first, which is failed (its nonce is another transaction's).
			now := e.topUps(addr)
			mined := 0
			for _, tu := range now {
				if tu.State == domain.ChainTxMined {
					mined++
				}
			}
			switch {
			case !c.takeNonce && (len(now) != 1 || now[0].ID != lost[0].ID || mined != 1):
				t.Fatalf("top-ups %+v, want the first one mined again, no other", now)
			case c.takeNonce && (len(now) != 2 || now[0].State != domain.ChainTxFailed || now[1].State != domain.ChainTxMined):
				t.Fatalf("top-ups %+v, want the first failed and one new one mined", now)
			}
			nonce, err := e.client.Nonce(e.ctx, e.gasTank, false)
			want := uint64(mined)
			if c.takeNonce {
				want++ // the transaction that took the first one's nonce
			}
			if err != nil || nonce != want {
				t.Fatalf("the gas tank sent %d transactions (%v), want %d", nonce, err, want)
			}
			e.reconciled()
		})
	}
}

// What was seen: a sweep waiting for its gas top-up (the gas tank empty, the top-up stuck or
// its nonce blocked behind one that left the chain) waited without a word: each step found the
// top-up pending and tried again later, and nothing named the sweep, its address or its chain.
// Past Config.GasWaitAlert each step that still finds it waiting logs an ERROR naming them and
// counts it in coffer_gas_topup_overdue_total{chain_id}, which an alert watches.
func TestSweepWaitingForGasTooLongIsAnError(t *testing.T) {
	t.Parallel()
	var logs proctest.Buffer
	e := setupWith(t, options{config: deposit.Config{GasWaitAlert: time.Nanosecond},
		log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	before := testutil.ToFloat64(metrics.GasTopUpOverdue.WithLabelValues(strconv.FormatInt(e.dev.ChainID(), 10)))
	id, tank, eth0, usdt0 := e.emptyTankDeposit()
	for range confirmations + 2 {
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			t.Fatalf("settle with the gas tank empty: %v", err)
		}
		e.dev.Commit()
		e.scan()
	}
	d := e.deposit(id)
	if d.Status != domain.DepositSweeping || d.SweepID == 0 {
		t.Fatalf("the deposit is %s in sweep %d; the test needs its sweep waiting for gas", d.Status, d.SweepID)
	}
	want := []string{"level=ERROR", "waited for its gas top-up", fmt.Sprintf("sweep=%d ", d.SweepID), "address=" + d.Address,
		fmt.Sprintf("chain=%d ", e.dev.ChainID())}
	for _, w := range want {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("no ERROR log with %q:\n%s", w, logs.String())
		}
	}
	if after := testutil.ToFloat64(metrics.GasTopUpOverdue.WithLabelValues(strconv.FormatInt(e.dev.ChainID(), 10))); after <= before {
		t.Errorf("coffer_gas_topup_overdue_total did not grow (%v, then %v)", before, after)
	}
	// Once the tank is refilled the sweep goes on: the alert was about a wait, never a failure.
	e.refill(tank)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	e.checkCredited(e.all(), eth0, usdt0)
}
