package deposit_test

import (
	"errors"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// ledger is the env's operator-funds service and reconciler.
func (e *env) ledger() (*funds.Ledger, *funds.Reconciler) {
	e.t.Helper()
	registry, err := chain.NewRegistry([]chain.Network{e.network})
	if err != nil {
		e.t.Fatal(err)
	}
	l := funds.New(e.pool, registry)
	_, hot := e.keys.HotWallet()
	return l, &funds.Reconciler{Ledger: l, Clients: map[int64]*chain.Client{e.dev.ChainID(): e.client}, HotWallet: hot}
}

// available is the operator's available funds in an asset, smallest unit.
func (e *env) available(currency string) *big.Int {
	e.t.Helper()
	f, err := store.New(e.pool).GetFunds(e.ctx, e.op.ID, e.dev.ChainID(), currency)
	if err != nil {
		e.t.Fatal(err)
	}
	return f.Available
}

// fundKinds lists the kinds of the operator's fund entries about a deposit, oldest first.
func (e *env) fundKinds(depositID int64) string {
	e.t.Helper()
	return strings.Join(testfactory.Column[string](e.ctx, e.t, e.pool,
		`SELECT kind FROM fund_entries WHERE ref = 'deposit:' || $1::bigint ORDER BY id`, depositID), ",")
}

// reorgActions lists a deposit's reorg audit trail as "ACTION/actor", oldest first.
func (e *env) reorgActions(depositID int64) string {
	e.t.Helper()
	return strings.Join(testfactory.Column[string](e.ctx, e.t, e.pool,
		`SELECT action || '/' || actor FROM deposit_reorg_actions WHERE deposit_id = $1 ORDER BY id`, depositID), ",")
}

// reserve queues a payout of amount from the operator's funds (what every payout path does
// first) and reports the error.
func (e *env) reserve(currency string, decimals int32, amount int64, settle bool) error {
	e.t.Helper()
	p := funds.Payout{WithdrawalID: uuid.NewString(), OperatorID: e.op.ID, ChainID: e.dev.ChainID(), Currency: currency,
		Decimals: decimals, Amount: big.NewInt(amount), Actor: "test"}
	return store.InTx(e.ctx, e.pool, func(tx pgx.Tx) error {
		if err := funds.Reserve(e.ctx, tx, p); err != nil || !settle {
			return err
		}
		return funds.Settle(e.ctx, tx, p)
	})
}

// creditedUSDC pays 40 USDC to addr from a new user, waits until the deposit is credited and
// returns it with the head block before its transfer (where a reorg forks to take it away).
func (e *env) creditedUSDC(addr common.Address) (id int64, parent *types.Header) {
	e.t.Helper()
	payer := e.newUser()
	e.mint("USDC", payer.addr, 50_000_000)
	usdc, _ := e.dev.Token("USDC")
	parent = e.latestHeader()
	tx := e.send(payer, 0, usdc.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	return e.findDeposit(tx.Hash()), parent
}

// creditedEther pays 1 ETH to addr from payer, waits until the deposit is credited and returns
// it with the head block before its transfer (where a reorg forks to take it away).
func (e *env) creditedEther(payer user, addr common.Address) (d domain.Deposit, parent *types.Header) {
	e.t.Helper()
	parent = e.latestHeader()
	tx := e.send(payer, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	return e.deposit(e.findDeposit(tx.Hash())), parent
}

// countsAgainOnce waits until a reincluded deposit is credited again, runs a few more blocks,
// and checks that it counts once: the operator's funds hold available of the currency, and
// its fund entries are its credit, its reversal and its reinstatement.
func (e *env) countsAgainOnce(id int64, currency string, available int64) {
	e.t.Helper()
	e.run(func() bool { return e.deposit(id).Status == domain.DepositCredited })
	e.runBlocks(confirmations + 2)
	if got := e.available(currency).Int64(); got != available {
		e.t.Fatalf("%s available %d after the re-inclusion, want %d", currency, got, available)
	}
	if got := e.fundKinds(id); got != "DEPOSIT,REORG,REINSTATE" {
		e.t.Fatalf("fund entries: %s", got)
	}
}

func reorgedCount(chainID int64, currency string) float64 {
	return testutil.ToFloat64(metrics.DepositsReorged.WithLabelValues(big.NewInt(chainID).String(), currency))
}

// A reorg deeper than the confirmation depth, after a token deposit and a native deposit were
// credited, takes both away for good (their senders spend the same nonces elsewhere): both are
// marked REORGED in the rollback, counted, listed, no longer count toward the operator's funds
// (which the operator had partly spent: a shortfall, and payouts are refused), the books still
// reconcile, and an engineer resolves them, audited; bad resolutions change nothing.
func TestDeepReorgAfterCreditMarksAndExcludesTheDeposit(t *testing.T) {
	// Not parallel: it checks how much coffer_deposits_reorged_total grew, a process-wide counter
	// that every parallel reorg test on the dev chain's id grows too (make stress saw 2 for 1).
	e := setup(t, 0)
	ledger, reconciler := e.ledger()
	addrA := e.address("alice")
	addrB := e.address("bob")
	alice, bob := e.newUser(), e.newUser()
	parent := e.latestHeader()
	tokenTx := e.send(alice, 0, e.usdt.Address, nil, erc20Transfer(addrA, 25_000_000), 2)
	nativeTx := e.send(bob, 0, addrB, testfactory.Ether(1), nil, 2)
	e.mine(tokenTx, nativeTx)
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	token, native := e.deposit(e.findDeposit(tokenTx.Hash())), e.deposit(e.findDeposit(nativeTx.Hash()))
	if token.Status != "CREDITED" || native.Status != "CREDITED" || e.available("USDT").Int64() != 25_000_000 ||
		e.available("ETH").Cmp(native.Amount) != 0 {
		t.Fatalf("before the reorg: %s %s, funds %v USDT %v ETH", token.Status, native.Status, e.available("USDT"), e.available("ETH"))
	}
	// The operator pays 10 USDT out of the deposit's credit before the reorg.
	if err := e.reserve("USDT", 6, 10_000_000, true); err != nil {
		t.Fatal(err)
	}
	usdtBefore, ethBefore := reorgedCount(e.dev.ChainID(), "USDT"), reorgedCount(e.dev.ChainID(), "ETH")
	head := e.latestHeader()
	if depth := head.Number.Uint64() - parent.Number.Uint64(); depth <= confirmations {
		t.Fatalf("the fork is only %d blocks deep", depth)
	}

	// The chain forks below both deposits; alice and bob spend the same nonces elsewhere.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	elsewhere := common.HexToAddress("0x00000000000000000000000000000000000000c0")
	e.mine(e.send(alice, 0, elsewhere, testfactory.Ether(1), nil, 50), e.send(bob, 0, elsewhere, testfactory.Ether(1), nil, 50))
	e.scan() // detects the reorg and rolls back

	for _, d := range []domain.Deposit{token, native} {
		if got := e.deposit(d.ID); got.Status != "REORGED" {
			t.Fatalf("deposit %d is %s after the reorg", d.ID, got.Status)
		}
		if got := e.fundKinds(d.ID); got != "DEPOSIT,REORG" {
			t.Errorf("deposit %d fund entries: %s", d.ID, got)
		}
		if got := e.reorgActions(d.ID); got != "DETECTED/system" {
			t.Errorf("deposit %d audit: %s", d.ID, got)
		}
	}
	if got := reorgedCount(e.dev.ChainID(), "USDT") - usdtBefore; got != 1 {
		t.Errorf("coffer_deposits_reorged_total{USDT} grew by %v", got)
	}
	if got := reorgedCount(e.dev.ChainID(), "ETH") - ethBefore; got != 1 {
		t.Errorf("coffer_deposits_reorged_total{ETH} grew by %v", got)
	}
	// The credit no longer counts: 15 USDT were left, the deposit took 25 back.
	if got := e.available("USDT").Int64(); got != -10_000_000 {
		t.Fatalf("USDT available %d after the reorg, want -10000000 (a shortfall)", got)
	}
	if got := e.available("ETH").Sign(); got != 0 {
		t.Fatalf("ETH available %v after the reorg", e.available("ETH"))
	}
	bal, err := ledger.Balances(e.ctx, domain.Operators(e.op.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bal {
		if b.Currency == "USDT" && b.Available.StringFixed(6) != "-10.000000" {
			t.Errorf("the operator's balance shows %s USDT", b.Available.StringFixed(6))
		}
	}
	// A payout it could have made before is refused now.
	var short *funds.Shortfall
	if err := e.reserve("USDT", 6, 1_000_000, false); !errors.As(err, &short) || short.Available.Int64() != -10_000_000 {
		t.Fatalf("a payout after the reorg: %v", err)
	}
	if err := e.reserve("ETH", 18, 1, false); !errors.As(err, &short) {
		t.Fatalf("a native payout after the reorg: %v", err)
	}
	// The books reconcile: the sweep left the chain with the deposit (its token transfer now
	// reverts), and the shortfall is not counted as cash.
	lines, err := reconciler.Reconcile(e.ctx, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Currency == "USDT" && (!l.OK || !l.Available.IsZero() || l.Shortfall.String() != "10" || !l.Holdings.IsZero()) {
			t.Errorf("USDT reconciliation: holdings %s available %s shortfall %s surplus %s", l.Holdings, l.Available, l.Shortfall, l.Surplus)
		}
	}

	// Listed for the service team, with where it was and what was reversed.
	list, next, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, "")
	if err != nil || next != "" || len(list) != 2 {
		t.Fatalf("list: %d items, next %q, %v", len(list), next, err)
	}
	for _, r := range list {
		want := map[int64]domain.Deposit{token.ID: token, native.ID: native}[r.DepositID]
		if r.Resolution != "" || r.PriorStatus != "CREDITED" || r.BlockHash != want.BlockHash || r.ForkBlock != parent.Number.Uint64() ||
			r.Reversed.Cmp(want.Amount) != 0 || r.Deposit.Status != "REORGED" || len(r.History) != 1 || r.OperatorID != e.op.ID {
			t.Errorf("listed %+v", r.Reorg)
		}
	}
	// The zero scope lists nothing (not everything); an operator's scope lists its own.
	if none, _, err := e.svc.ListReorgs(e.ctx, domain.Scope{}, "", false, 0, ""); err != nil || len(none) != 0 {
		t.Fatalf("zero scope lists %d reorgs, %v", len(none), err)
	}
	if own, _, err := e.svc.ListReorgs(e.ctx, domain.Operators(e.op.ID), "", false, 0, ""); err != nil || len(own) != 2 {
		t.Fatalf("operator's scope lists %d reorgs, %v", len(own), err)
	}
	if _, _, err := e.svc.ListReorgs(e.ctx, domain.Scope{}, e.op.ID, false, 0, ""); !fault.Is(err, fault.NotFound) {
		t.Fatalf("zero scope narrowed to an operator: %v", err)
	}
	// (An empty, not nil, status list: the store reads a nil one as "no status".)
	anyStatus := domain.DepositFilter{Statuses: []domain.DepositStatus{}, Limit: 1}
	if all, _, err := e.svc.List(e.ctx, domain.AllOperators(), anyStatus, ""); err != nil || len(all) != 1 {
		t.Fatalf("every operator's scope lists %d deposits, %v", len(all), err)
	}
	if none, _, err := e.svc.List(e.ctx, domain.Scope{}, anyStatus, ""); err != nil || len(none) != 0 {
		t.Fatalf("zero scope lists %d deposits, %v", len(none), err)
	}
	// Pages: a token walks the list, and one list's token is refused by another.
	first, next, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 1, "")
	if err != nil || len(first) != 1 || next == "" {
		t.Fatalf("first page: %d, %q, %v", len(first), next, err)
	}
	second, _, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 1, next)
	if err != nil || len(second) != 1 || second[0].ID >= first[0].ID {
		t.Fatalf("second page: %+v, %v", second, err)
	}
	if _, _, err := e.svc.List(e.ctx, domain.AllOperators(), anyStatus, next); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("a reorg page token on deposits: %v", err)
	}
	deps, depNext, err := e.svc.List(e.ctx, domain.AllOperators(), anyStatus, "")
	if err != nil || len(deps) != 1 || depNext == "" {
		t.Fatalf("first deposit page: %d, %q, %v", len(deps), depNext, err)
	}
	if more, _, err := e.svc.List(e.ctx, domain.AllOperators(), anyStatus, depNext); err != nil ||
		len(more) != 1 || more[0].ID >= deps[0].ID {
		t.Fatalf("second deposit page: %+v, %v", more, err)
	}
	if _, _, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, strconv.FormatInt(first[0].ID, 10)); !fault.Is(err, fault.InvalidArgument) {
		t.Fatalf("an old-format (bare id) token: %v", err)
	}

	// Bad resolutions are refused and change nothing.
	refused := []struct {
		in         deposit.Resolution
		code       fault.Code
		field, why string
	}{
		{deposit.Resolution{DepositID: 987654, Resolution: "WRITE_OFF", Note: "n", Actor: "t"}, fault.NotFound, "", ""},
		{deposit.Resolution{DepositID: token.ID, Resolution: "WRITE_OFF", Note: "  ", Actor: "t"}, fault.InvalidArgument, "note", ""},
		{deposit.Resolution{DepositID: token.ID, Resolution: "MAYBE", Note: "n", Actor: "t"}, fault.InvalidArgument, "resolution", ""},
		{deposit.Resolution{DepositID: token.ID, Resolution: "REINCLUDED", Note: "n", Actor: "t"}, fault.InvalidArgument, "resolution", ""},
		{deposit.Resolution{DepositID: 0, Resolution: "REINSTATE", Note: "n", Actor: "t"}, fault.InvalidArgument, "depositId", ""},
	}
	for _, c := range refused {
		_, err := e.svc.ResolveReorg(e.ctx, c.in)
		if fe := fault.As(err); err == nil || fe.Code != c.code || fe.Field != c.field {
			t.Errorf("resolve %+v: %v", c.in, err)
		}
	}
	if got := e.reorgActions(token.ID); got != "DETECTED/system" || e.available("USDT").Int64() != -10_000_000 {
		t.Fatalf("refused resolutions changed something: %s, %v", got, e.available("USDT"))
	}

	// The engineer writes the token deposit off and reinstates the native one (say bob paid
	// the service team again off-chain).
	off, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: token.ID, Resolution: "write-off", Note: "double-spent; the user was told", Actor: "service-team:cli:eve"})
	if err != nil || off.Resolution != "WRITE_OFF" || off.ResolvedBy != "service-team:cli:eve" || off.Deposit.Status != "REORGED" ||
		len(off.History) != 2 || off.History[1].Note != "double-spent; the user was told" {
		t.Fatalf("write-off: %+v %v", off.Reorg, err)
	}
	on, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: native.ID, Resolution: "REINSTATE", Note: "paid again by wire", Actor: "service-team:ops-api"})
	if err != nil || on.Resolution != "REINSTATE" || on.Deposit.Status != "CREDITED" {
		t.Fatalf("reinstate: %+v %v", on.Reorg, err)
	}
	if e.available("USDT").Int64() != -10_000_000 || e.available("ETH").Cmp(native.Amount) != 0 {
		t.Fatalf("after the resolutions: %v USDT, %v ETH", e.available("USDT"), e.available("ETH"))
	}
	if a, b := e.fundKinds(token.ID), e.fundKinds(native.ID); a != "DEPOSIT,REORG" || b != "DEPOSIT,REORG,REINSTATE" {
		t.Fatalf("fund entries after the resolutions: %s; %s", a, b)
	}
	if a, b := e.reorgActions(token.ID), e.reorgActions(native.ID); a != "DETECTED/system,WRITE_OFF/service-team:cli:eve" ||
		b != "DETECTED/system,REINSTATE/service-team:ops-api" {
		t.Fatalf("audit after the resolutions: %s; %s", a, b)
	}
	if open, _ := store.New(e.pool).OpenReorgsByChain(e.ctx); open[e.dev.ChainID()] != 0 {
		t.Fatalf("%d unresolved after the resolutions", open[e.dev.ChainID()])
	}
	// Resolving again is a conflict; a deposit never reorged has nothing to resolve.
	_, err = e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: token.ID, Resolution: "REINSTATE", Note: "oops", Actor: "t"})
	if fe := fault.As(err); fe.Code != fault.Conflict || fe.Details["reason"] != "ALREADY_RESOLVED" {
		t.Fatalf("resolve twice: %v", err)
	}
	carol := e.newUser()
	fresh := e.send(carol, 0, addrA, testfactory.Ether(1), nil, 2)
	e.mine(fresh)
	e.scan()
	_, err = e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: e.findDeposit(fresh.Hash()), Resolution: "WRITE_OFF", Note: "n", Actor: "t"})
	if fe := fault.As(err); fe.Code != fault.FailedPrecondition || fe.Details["reason"] != "NOT_REORGED" {
		t.Fatalf("resolve a deposit never reorged: %v", err)
	}
	if e.available("USDT").Int64() != -10_000_000 || e.reorgActions(token.ID) != "DETECTED/system,WRITE_OFF/service-team:cli:eve" {
		t.Fatal("refused resolutions changed something")
	}
	all, _, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), e.op.ID, true, 0, "")
	if err != nil || len(all) != 2 {
		t.Fatalf("list with resolved ones: %d, %v", len(all), err)
	}
	if open, _, _ := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, ""); len(open) != 0 {
		t.Fatalf("%d still listed as unresolved", len(open))
	}
	if n := len(e.hooks.all()); n != 2 {
		t.Fatalf("%d DEPOSIT events; a reorg sends none", n)
	}
}

// A reorg deeper than the confirmation depth after a credit, where the same transfer is mined
// again in the new chain: the deposit is marked and stops counting at once, counts again (with
// no second credit and no second DEPOSIT) once its new block is confirmed, and the audit trail
// says so.
func TestReorgedDepositMinedAgainCountsOnce(t *testing.T) {
	// Not parallel: it checks how much coffer_deposits_reorged_total grew, a process-wide counter
	// that every parallel reorg test on the dev chain's id grows too (make stress saw 2 for 1).
	e := setup(t, 0)
	id, parent := e.creditedUSDC(e.address("dora"))
	first := e.deposit(id)
	if first.Status != "CREDITED" || e.available("USDC").Int64() != 40_000_000 {
		t.Fatalf("before the reorg: %s, %v", first.Status, e.available("USDC"))
	}
	before := reorgedCount(e.dev.ChainID(), "USDC")

	// The chain forks below the deposit; the abandoned blocks' transactions (the deposit, the
	// gas top-up, the sweep) go back to the pool and are mined again in the new branch.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	e.scan() // rolls back
	if got := e.deposit(id); got.Status != "REORGED" || e.available("USDC").Sign() != 0 {
		t.Fatalf("after the rollback: %s, %v USDC", got.Status, e.available("USDC"))
	}
	if got := reorgedCount(e.dev.ChainID(), "USDC") - before; got != 1 {
		t.Errorf("coffer_deposits_reorged_total{USDC} grew by %v", got)
	}
	e.scan() // reads the new branch: the same transfer, in a new block
	again := e.deposit(id)
	if again.Status != "REORGED" || again.BlockHash == first.BlockHash || e.available("USDC").Sign() != 0 {
		t.Fatalf("re-detected: %s in %s (was %s), %v USDC", again.Status, again.BlockHash, first.BlockHash, e.available("USDC"))
	}
	list, _, _ := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, "")
	if len(list) != 1 || list[0].ReincludedBlock != again.BlockNumber {
		t.Fatalf("listed: %+v", list)
	}
	// Confirmations accrue: it counts again, once.
	e.countsAgainOnce(id, "USDC", 40_000_000)
	if got := e.reorgActions(id); got != "DETECTED/system,REINCLUDED/system" {
		t.Fatalf("audit: %s", got)
	}
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d DEPOSIT events, want the one", n)
	}
	// Its sweep left the chain with it and was sent again: the bankroll holds the deposit again
	// and the books reconcile exactly.
	_, reconciler := e.ledger()
	lines, err := reconciler.Reconcile(e.ctx, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Currency == "USDC" && (!l.OK || l.Holdings.String() != "40" || !l.Surplus.IsZero()) {
			t.Errorf("USDC reconciliation: holdings %s owed %s surplus %s", l.Holdings, l.Owed, l.Surplus)
		}
	}
	if open, _, _ := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, ""); len(open) != 0 {
		t.Fatalf("%d still unresolved", len(open))
	}
	all, _, _ := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", true, 0, "")
	if len(all) != 1 || all[0].Resolution != "REINCLUDED" || all[0].ResolvedBy != "system" {
		t.Fatalf("resolved: %+v", all)
	}
	// The engineer cannot resolve it again.
	_, err = e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: id, Resolution: "WRITE_OFF", Note: "late", Actor: "t"})
	if !fault.Is(err, fault.Conflict) {
		t.Fatalf("resolve after re-inclusion: %v", err)
	}
}

// What was seen: an engineer reinstated a reorged deposit whose transfer never came back (the
// payer spent its nonce elsewhere; the service team was paid another way), and a later reorg
// that forked below that deposit's block again marked it REORGED a second time, reversing the
// engineer's decision (the operator's funds lost the credit again) and opening a second
// incident for a block already known to be gone. The rollback now leaves a deposit alone whose
// recorded block an earlier reorg already found gone, as a scan pass does (leftTheChain): its
// resolution stands. Its transfer mined again in a new block that then leaves the chain is news,
// and is reorged as usual.
func TestReinstatedDepositIsNotReorgedAgainForTheSameBlock(t *testing.T) {
	// Not parallel: it checks how much coffer_deposits_reorged_total grew, a process-wide counter
	// that every parallel reorg test on the dev chain's id grows too (make stress saw 2 for 1).
	e := setup(t, 0)
	payer := e.newUser()
	d, parent := e.creditedEther(payer, e.address("erin"))
	if d.Status != "CREDITED" || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("before the reorg: %s, %v ETH", d.Status, e.available("ETH"))
	}
	elsewhere := common.HexToAddress("0x00000000000000000000000000000000000000c1")
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.mine(e.send(payer, 0, elsewhere, testfactory.Ether(1), nil, 50))
	for range confirmations + 2 { // rolls back, then reads the new branch past the deposit's height
		e.scan()
		e.dev.Commit()
	}
	if got := e.deposit(d.ID); got.Status != "REORGED" || e.available("ETH").Sign() != 0 {
		t.Fatalf("after the reorg: %s, %v ETH", got.Status, e.available("ETH"))
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: d.ID, Resolution: "REINSTATE", Note: "paid again by wire",
		Actor: "service-team:cli:eve"}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.scan()
		e.dev.Commit()
	}
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("after the reinstatement: %s, %v ETH", got.Status, e.available("ETH"))
	}

	// Another reorg forks below the deposit's (long gone) block.
	before := reorgedCount(e.dev.ChainID(), "ETH")
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	for range confirmations + 2 {
		e.scan()
		e.dev.Commit()
	}
	if got := e.deposit(d.ID); got.Status != "CREDITED" || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("after the second reorg: %s, %v ETH available (want %v)", got.Status, e.available("ETH"), d.Amount)
	}
	if got := e.fundKinds(d.ID); got != "DEPOSIT,REORG,REINSTATE" {
		t.Fatalf("fund entries: %s", got)
	}
	if got := e.reorgActions(d.ID); got != "DETECTED/system,REINSTATE/service-team:cli:eve" {
		t.Fatalf("audit: %s", got)
	}
	if got := reorgedCount(e.dev.ChainID(), "ETH") - before; got != 0 {
		t.Fatalf("coffer_deposits_reorged_total{ETH} grew by %v", got)
	}
}

// Engineers resolving a reorged deposit at the same moment, in opposite ways, while the scanner
// resolves it REINCLUDED (its transfer came back and reaches its depth): exactly one resolution
// wins, the others are refused CONFLICT (a REINSTATE before the sweep is back at depth
// FAILED_PRECONDITION), and the operator's funds move once — credited again
// (REINSTATE, REINCLUDED) or left reversed (WRITE_OFF), never twice.
func TestConcurrentReorgResolutionsCountOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	id, parent := e.creditedUSDC(e.address("fay"))
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	e.scan() // rolls back
	e.scan() // the transfer again, in a new block
	if got := e.deposit(id); got.Status != "REORGED" || e.available("USDC").Sign() != 0 {
		t.Fatalf("after the reorg: %s, %v USDC", got.Status, e.available("USDC"))
	}
	var wg sync.WaitGroup
	scanErrs := make(chan error, 40)
	wg.Go(func() {
		for range 2 * confirmations {
			if err := e.svc.Scan(e.ctx, e.dev.ChainID()); err != nil {
				scanErrs <- err
			}
			e.dev.Commit()
		}
	})
	resolutions := []string{"REINSTATE", "WRITE_OFF", "REINSTATE", "WRITE_OFF", "REINSTATE", "WRITE_OFF"}
	errs := make([]error, len(resolutions))
	for i, r := range resolutions {
		wg.Go(func() {
			// Spread over the scanner's passes, so some runs resolve before it and some race it.
			time.Sleep(time.Duration(rand.IntN(250)) * time.Millisecond)
			_, errs[i] = e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: id, Resolution: r, Note: "race " + strconv.Itoa(i),
				Actor: "service-team:test"})
		})
	}
	wg.Wait()
	close(scanErrs)
	for err := range scanErrs {
		t.Errorf("scan pass: %v", err)
	}
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case resolutions[i] == "REINSTATE" && fault.Is(err, fault.FailedPrecondition) && fault.As(err).Details["reason"] == "SWEEP_NOT_MINED":
			// Before the sweep that left the chain with it is mined again at depth (TestReinstateWaitsForTheSweepMinedAgain).
		case !fault.Is(err, fault.Conflict):
			t.Errorf("resolution %d (%s): %v, want success, CONFLICT or (REINSTATE) SWEEP_NOT_MINED", i, resolutions[i], err)
		}
	}
	var resolution string
	if err := e.pool.QueryRow(e.ctx, `SELECT string_agg(resolution, ',') FROM deposit_reorgs WHERE deposit_id = $1`, id).Scan(&resolution); err != nil {
		t.Fatal(err)
	}
	if won > 1 || (won == 1) == (resolution == "REINCLUDED") {
		t.Fatalf("%d engineers' resolutions succeeded; the reorg is resolved %q", won, resolution)
	}
	kinds, avail := e.fundKinds(id), e.available("USDC").Int64()
	switch resolution {
	case "REINSTATE", "REINCLUDED":
		if kinds != "DEPOSIT,REORG,REINSTATE" || avail != 40_000_000 || e.deposit(id).Status != "CREDITED" {
			t.Fatalf("%s: fund entries %s, %d USDC available, deposit %s", resolution, kinds, avail, e.deposit(id).Status)
		}
	case "WRITE_OFF":
		if kinds != "DEPOSIT,REORG" || avail != 0 || e.deposit(id).Status != "REORGED" {
			t.Fatalf("%s: fund entries %s, %d USDC available, deposit %s", resolution, kinds, avail, e.deposit(id).Status)
		}
	default:
		t.Fatalf("resolved %q", resolution)
	}
	if got := e.reorgActions(id); strings.Count(got, ",") != 1 {
		t.Fatalf("audit: %s, want the detection and one resolution", got)
	}
	t.Logf("resolved %s", resolution)
}

// What was seen: an engineer's resolution and the scanner's REINCLUDED deadlocked (SQLSTATE
// 40P01: the pass failed, or the engineer got INTERNAL). The scanner locked the re-included
// reorgs first and then each deposit; ResolveReorg locks the deposit and then its reorg. Here
// the scanner's pass resolving two re-included deposits waits on the first (another
// transaction holds it) while the engineer writes the second off: both now complete, the
// scanner leaves the second as the engineer resolved it, and each counts once.
func TestReorgResolutionRacingTheScannerDoesNotDeadlock(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	usdc, _ := e.dev.Token("USDC")
	var ids [2]int64
	var payers []user
	for range ids {
		payers = append(payers, e.newUser())
		e.mint("USDC", payers[len(payers)-1].addr, 50_000_000)
	}
	parent := e.latestHeader()
	var txs []*types.Transaction
	for i, payer := range payers {
		txs = append(txs, e.send(payer, 0, usdc.Address, nil, erc20Transfer(e.address("race-"+strconv.Itoa(i)), 40_000_000), 2))
	}
	e.mine(txs...)
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	for i, tx := range txs {
		ids[i] = e.findDeposit(tx.Hash())
	}
	// The chain forks below both; their transfers are mined again in the new branch.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	e.scan() // rolls back
	e.scan() // both transfers again, in a new block
	for _, id := range ids {
		if got := e.deposit(id); got.Status != "REORGED" {
			t.Fatalf("deposit %d after the reorg: %s", id, got.Status)
		}
	}

	// Another transaction holds the first deposit; the scanner runs until its pass that counts
	// them again waits on it.
	held, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(e.ctx) //nolint:errcheck // committed below; a failed test rolls back
	if _, err := held.Exec(e.ctx, `SELECT 1 FROM deposits WHERE id = $1 FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	waiting := func() int {
		var n int
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stop := make(chan struct{})
	scanned := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				scanned <- nil
				return
			default:
			}
			if err := e.svc.Scan(e.ctx, e.dev.ChainID()); err != nil {
				scanned <- err
				return
			}
			e.dev.Commit()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for waiting() == 0 {
		if len(scanned) > 0 {
			t.Fatalf("the scanner stopped: %v", <-scanned)
		}
		if time.Now().After(deadline) {
			t.Fatal("the scanner never came to count the deposits again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The engineer writes the second one off meanwhile.
	resolved := make(chan error, 1)
	go func() {
		_, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: ids[1], Resolution: "WRITE_OFF", Note: "double-spent",
			Actor: "service-team:test"})
		resolved <- err
	}()
	for waiting() < 2 && len(resolved) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := held.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-resolved; err != nil {
		t.Fatalf("the engineer's WRITE_OFF: %v", err)
	}
	close(stop)
	if err := <-scanned; err != nil {
		t.Fatalf("the scanner's pass: %v", err)
	}
	e.run(func() bool { return e.deposit(ids[0]).Status == "CREDITED" })
	if got := e.reorgActions(ids[0]); got != "DETECTED/system,REINCLUDED/system" {
		t.Fatalf("first deposit's audit: %s", got)
	}
	if got := e.reorgActions(ids[1]); got != "DETECTED/system,WRITE_OFF/service-team:test" || e.deposit(ids[1]).Status != "REORGED" {
		t.Fatalf("second deposit's audit: %s (%s)", got, e.deposit(ids[1]).Status)
	}
	if a, b := e.fundKinds(ids[0]), e.fundKinds(ids[1]); a != "DEPOSIT,REORG,REINSTATE" || b != "DEPOSIT,REORG" {
		t.Fatalf("fund entries: %s; %s", a, b)
	}
	if got := e.available("USDC").Int64(); got != 40_000_000 {
		t.Fatalf("USDC available %d, want the first deposit's 40 once", got)
	}
}

// The other side of TestReinstatedDepositIsNotReorgedAgainForTheSameBlock: a reorged deposit
// that counted again because its transfer was mined again (REINCLUDED) is in a new block, and
// when that block leaves the chain too, it is news: reorged again (its credit reversed again, a
// second incident), and counted once more when the transfer comes back a third time.
func TestReincludedDepositWhoseNewBlockLeavesIsReorgedAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	id, parent := e.creditedUSDC(e.address("gus"))
	for round := 1; round <= 2; round++ {
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Fatal(err)
		}
		e.dev.Commit()
		e.scan() // rolls back
		if got := e.deposit(id); got.Status != "REORGED" || e.available("USDC").Sign() != 0 {
			t.Fatalf("round %d, after the rollback: %s, %v USDC", round, got.Status, e.available("USDC"))
		}
		e.run(func() bool { return e.deposit(id).Status == domain.DepositCredited })
		if got := e.available("USDC").Int64(); got != 40_000_000 {
			t.Fatalf("round %d: %d USDC available after the re-inclusion", round, got)
		}
	}
	if got := e.fundKinds(id); got != "DEPOSIT,REORG,REINSTATE,REORG,REINSTATE" {
		t.Fatalf("fund entries: %s", got)
	}
	if got := e.reorgActions(id); got != "DETECTED/system,REINCLUDED/system,DETECTED/system,REINCLUDED/system" {
		t.Fatalf("audit: %s", got)
	}
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d DEPOSIT events, want the one", n)
	}
}

// A reinstated deposit whose original block comes back (the chain returns to the branch it left)
// is on the chain again; when that block then leaves once more, it is news: the deposit is
// reorged again (its credit reversed), not left credited because an earlier reorg had found
// the same block gone.
func TestReinstatedDepositWhoseBlockCameBackAndLeftAgainIsReorged(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	payer := e.newUser()
	d, parent := e.creditedEther(payer, e.address("hal"))
	branchA := e.latestHeader()
	elsewhere := common.HexToAddress("0x00000000000000000000000000000000000000c2")
	leave := func(what string) {
		t.Helper()
		if err := e.dev.Fork(parent.Hash()); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// The payer spends its nonce elsewhere (replacing the transfer if the pool took it back).
		e.mine(e.send(payer, 0, elsewhere, testfactory.Ether(1), nil, 50))
		for range confirmations + 2 {
			e.scan()
			e.dev.Commit()
		}
	}
	leave("first reorg")
	if got := e.deposit(d.ID); got.Status != "REORGED" {
		t.Fatalf("after the first reorg: %s", got.Status)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: d.ID, Resolution: "REINSTATE", Note: "n", Actor: "t"}); err != nil {
		t.Fatal(err)
	}
	// The chain goes back to the branch that holds the deposit's block.
	if err := e.dev.Fork(branchA.Hash()); err != nil {
		t.Fatal(err)
	}
	for range 2 * confirmations {
		e.dev.Commit()
		e.scan()
	}
	if got := e.deposit(d.ID); got.Status != "CREDITED" || got.BlockHash != d.BlockHash || e.available("ETH").Cmp(d.Amount) != 0 {
		t.Fatalf("back on its branch: %s in %s (was %s), %v ETH", got.Status, got.BlockHash, d.BlockHash, e.available("ETH"))
	}
	// And that block leaves again: the deposit's money is gone again.
	leave("second reorg")
	if got := e.deposit(d.ID); got.Status != "REORGED" || e.available("ETH").Sign() != 0 {
		t.Fatalf("after its block left again: %s, %v ETH", got.Status, e.available("ETH"))
	}
	if got := e.fundKinds(d.ID); got != "DEPOSIT,REORG,REINSTATE,REORG" {
		t.Fatalf("fund entries: %s", got)
	}
}
