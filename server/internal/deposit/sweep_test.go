package deposit_test

import (
	"math/big"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func (e *env) balance(a common.Address) *big.Int {
	e.t.Helper()
	b, err := e.client.Balance(e.ctx, a)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) funds(currency string) domain.Funds {
	e.t.Helper()
	f, err := store.New(e.pool).GetFunds(e.ctx, e.op.ID, e.dev.ChainID(), currency)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

// sweepStart is where a sweep test starts: the deposit address of user "u", the bankroll's
// ETH and USDT before any deposit, and a funded payer.
func (e *env) sweepStart() (addr common.Address, eth0, usdt0 *big.Int, payer user) {
	e.t.Helper()
	return e.address("u"), e.balance(e.bankroll), e.tokenBalance(e.bankroll), e.newUser()
}

// count runs a counting query.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	return testdb.Count(e.ctx, e.t, e.pool, sql, args...)
}

// onlyDepositAfterRateWait runs step every pause until a DEPOSIT event is queued, for at most
// within, and returns it: it must be the only one.
func (e *env) onlyDepositAfterRateWait(within, pause time.Duration, step func()) *cofferv1.DepositEvent {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for len(e.hooks.all()) == 0 && time.Now().Before(deadline) {
		step()
		time.Sleep(pause)
	}
	evs := e.hooks.all()
	if len(evs) != 1 {
		e.t.Fatal("no DEPOSIT after the rate wait")
	}
	return evs[0]
}

// checkCredited checks that every deposit is credited once, that amount + fee = gross, and
// that the operator's funds and the bankroll grew by exactly the credited amounts.
func (e *env) checkCredited(ds []domain.Deposit, bankrollETH, bankrollUSDT *big.Int) {
	e.t.Helper()
	sum := map[string]*big.Int{"ETH": new(big.Int), "USDT": new(big.Int)}
	for _, d := range ds {
		d = e.deposit(d.ID)
		if d.Status != "CREDITED" {
			e.t.Fatalf("deposit %d is %s", d.ID, d.Status)
		}
		if new(big.Int).Add(d.Amount, d.FeeAmount).Cmp(d.GrossAmount) != 0 || d.Amount.Sign() <= 0 {
			e.t.Fatalf("deposit %d: amount %v + fee %v != gross %v", d.ID, d.Amount, d.FeeAmount, d.GrossAmount)
		}
		sum[d.Currency].Add(sum[d.Currency], d.Amount)
	}
	if got := new(big.Int).Sub(e.balance(e.bankroll), bankrollETH); got.Cmp(sum["ETH"]) != 0 {
		e.t.Errorf("bankroll received %v wei, deposits credit %v", got, sum["ETH"])
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankrollUSDT); got.Cmp(sum["USDT"]) != 0 {
		e.t.Errorf("bankroll received %v USDT units, deposits credit %v", got, sum["USDT"])
	}
	for cur, want := range sum {
		if f := e.funds(cur); f.Available.Cmp(want) != 0 {
			e.t.Errorf("operator funds %s: %v available, deposits credit %v", cur, f.Available, want)
		}
	}
	events := map[int64]int{}
	for _, ev := range e.hooks.all() {
		events[ev.DepositId]++
	}
	for _, d := range ds {
		if events[d.ID] != 1 {
			e.t.Errorf("deposit %d has %d DEPOSIT events", d.ID, events[d.ID])
		}
	}
	e.reconciled()
}

func (e *env) all() []domain.Deposit {
	e.t.Helper()
	return e.depositsIn(`SELECT id FROM deposits ORDER BY id`)
}

func units(n int64) *big.Int { return big.NewInt(n) }

func milliETH(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e15)) }

// What was seen: 0.01 ETH and a 5 USDT mint to one deposit address in the same block; the
// USDT deposit was never credited (its gas was the unswept ETH, which the native sweep then
// took, and every retry failed with "insufficient funds").
func TestSameBlockNativeAndTokenDepositsAreBothCredited(t *testing.T) {
	t.Parallel()
	e := setup(t, 100) // 1% fee
	addr, eth0, usdt0, u := e.sweepStart()
	native := e.send(u, 0, addr, milliETH(10), nil, 2)
	mint, err := e.dev.Mint(e.ctx, "USDT", addr, units(5_000_000))
	if err != nil {
		t.Fatal(err)
	}
	receipts, err := e.dev.Mine(e.ctx, native.Hash(), mint)
	if err != nil || receipts[0].BlockNumber.Cmp(receipts[1].BlockNumber) != 0 {
		t.Fatalf("want both in one block: %v", err)
	}
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	ds := e.all()
	e.checkCredited(ds, eth0, usdt0)
	for _, d := range ds {
		if d.Currency == "USDT" && (d.Amount.Int64() != 4_950_000 || d.FeeAmount.Int64() != 50_000) {
			t.Errorf("USDT deposit: amount %v fee %v", d.Amount, d.FeeAmount)
		}
	}
	// The token sweep's gas came from the gas tank, not from the ETH deposit.
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas' AND to_address = $1`, addr.Hex()); n == 0 {
		t.Error("no gas top-up: the token sweep must not spend the native deposit")
	}
}

// A token deposit confirmed while the address's native sweep is still pending waits for it,
// then gets its own sweep; both are credited.
func TestTokenDepositWhileNativeSweepPending(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, eth0, usdt0, u := e.sweepStart()
	e.mine(e.send(u, 0, addr, milliETH(500), nil, 2))
	// Confirm it and sign its sweep, then drop the sweep from the node's pool and hold its
	// re-broadcast: the sweep stays pending while blocks go by.
	e.engine.RebroadcastAfter = time.Hour
	for e.count(`SELECT count(*) FROM sweeps WHERE status = 'SENDING'`) == 0 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	e.dev.Rollback()
	token := e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 7_000_000), 2)
	e.mine(token)
	e.runBlocks(confirmations + 1)
	d := e.deposit(e.findDeposit(token.Hash()))
	if d.Status != "SWEEPING" || d.SweepID != 0 {
		t.Fatalf("the token deposit must wait for the pending native sweep: %s, sweep %d", d.Status, d.SweepID)
	}
	if len(e.hooks.all()) != 0 {
		t.Fatal("nothing is credited before its sweep is mined")
	}
	e.engine.RebroadcastAfter = 0
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	e.checkCredited(e.all(), eth0, usdt0)
	if n := e.count(`SELECT count(*) FROM sweeps WHERE status = 'DONE'`); n != 2 {
		t.Fatalf("%d sweeps done, want 2 (native, then token)", n)
	}
}

// Fee bumps: a native sweep's replacements lower its value (it pays its own gas), so they never
// cost more than the deposit; a token sweep's replacements need more gas, which the address is
// topped up with. Everything is credited once, at the amount the mined attempt delivered.
func TestFeeBumpsNeverStrandASweep(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, eth0, usdt0, u := e.sweepStart()
	e.mine(e.send(u, 0, addr, milliETH(20), nil, 2), e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 3_000_000), 2))
	for e.count(`SELECT count(*) FROM sweeps WHERE status = 'SENDING'`) == 0 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	// Every advance now replaces the pending attempts with higher fees; no block is mined.
	e.engine.StuckAfter = 0
	for range 6 {
		e.settleAll()
	}
	var attempts int
	if err := e.pool.QueryRow(e.ctx, `SELECT max(n) FROM (SELECT count(*) AS n FROM chain_tx_attempts a JOIN chain_txs t ON t.id = a.tx_id
		WHERE t.purpose = 'sweep' GROUP BY t.id) x`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts < 4 {
		t.Fatalf("the sweeps were replaced %d times; the test needs several bumps", attempts-1)
	}
	e.engine.StuckAfter = 2 * time.Minute
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	e.checkCredited(e.all(), eth0, usdt0)
	// The native sweep delivered the value of whichever attempt was mined, and that is what was credited.
	var minedValue, credited string
	if err := e.pool.QueryRow(e.ctx, `SELECT t.value::text, d.amount::text FROM chain_txs t JOIN deposits d ON t.ref = 'sweep:' || d.sweep_id || ':ETH'
		WHERE t.purpose = 'sweep'`).Scan(&minedValue, &credited); err != nil {
		t.Fatal(err)
	}
	if minedValue != credited {
		t.Fatalf("mined attempt sent %s, credited %s", minedValue, credited)
	}
}

// A backlog after the scanner was down: 300 deposits, ETH and USDT, over 40 addresses, several
// per address and per block, settled by 8 concurrent workers, are all credited once.
func TestBacklogOf300DepositsOver40Addresses(t *testing.T) {
	t.Parallel()
	e := setup(t, 50)
	eth0, usdt0 := e.balance(e.bankroll), e.tokenBalance(e.bankroll)
	addrs := make([]common.Address, 40)
	for i := range addrs {
		addrs[i] = e.address("backlog-" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
	}
	payers := make([]user, 20)
	for i := range payers {
		payers[i] = e.newUser()
	}
	var txs []*types.Transaction
	for i := range 300 {
		p, to := payers[i%20], addrs[(i*7)%40]
		if i%3 == 0 {
			txs = append(txs, e.send(p, uint64(i/20), to, milliETH(int64(1+i%5)), nil, 2))
		} else {
			txs = append(txs, e.send(p, uint64(i/20), e.usdt.Address, nil, erc20Transfer(to, int64(1_000_000+i*1000)), 2))
		}
		if i%20 == 19 {
			e.dev.Commit() // at most 15 per payer in the pool at a time
		}
	}
	e.mine(txs...)
	e.confirm()
	// Settled as River's workers do: many at once, several on one address.
	for i := 0; i < 60 && len(e.hooks.all()) < 300; i++ {
		e.scan()
		e.settleConcurrently(8)
		e.dev.Commit()
	}
	ds := e.all()
	if len(ds) != 300 || len(e.hooks.all()) != 300 {
		t.Fatalf("%d deposits, %d credited", len(ds), len(e.hooks.all()))
	}
	e.checkCredited(ds, eth0, usdt0)
	if n := e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE'`); n != 0 {
		t.Fatalf("%d sweeps left open", n)
	}
}

// Dust: a deposit below its asset's minimum is recorded and not swept alone (no top-up, no
// sweep); the next deposit that brings the address's unswept balance to the minimum sweeps
// both, and each gets its DEPOSIT.
func TestDepositsBelowTheMinimumWaitForMore(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{network: func(n *chain.Network) { n.Tokens[1].MinDeposit = "10" }}) // USDC: 10; others $1
	addr, eth0, usdt0, u := e.sweepStart()
	usdc, _ := e.dev.Token("USDC")
	dustUSDT := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 1), 2)                   // 0.000001 USDT
	dustETH := e.send(u, 1, addr, new(big.Int).Mul(big.NewInt(100), big.NewInt(1e12)), nil, 2) // 0.0001 ETH = $0.30
	mint, _ := e.dev.Mint(e.ctx, "USDC", addr, units(5_000_000))                               // 5 USDC, below its 10
	e.mine(dustUSDT, dustETH)
	if _, err := e.dev.Mine(e.ctx, mint); err != nil {
		t.Fatal(err)
	}
	e.runBlocks(confirmations + 2)
	if got := e.depositsWhere("BELOW_MINIMUM"); len(got) != 3 {
		for _, d := range e.all() {
			t.Logf("%d %s %s %v", d.ID, d.Currency, d.Status, d.GrossAmount)
		}
		t.Fatalf("%d deposits below the minimum, want 3", len(got))
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE from_address = $1 OR to_address = $1`, addr.Hex()); n != 0 {
		t.Fatalf("%d transactions for dust: no top-up, no sweep", n)
	}
	if len(e.hooks.all()) != 0 {
		t.Fatal("dust is not credited alone")
	}
	// More USDT and ETH arrive: both assets reach their minimum; USDC stays parked.
	more := e.send(u, 2, e.usdt.Address, nil, erc20Transfer(addr, 2_000_000), 2)
	moreETH := e.send(u, 3, addr, milliETH(1), nil, 2)
	e.mine(more, moreETH)
	e.run(func() bool { return len(e.hooks.all()) == 4 })
	var credited []domain.Deposit
	for _, d := range e.all() {
		if d.ContractAddress != usdc.Address.Hex() {
			credited = append(credited, d)
		}
	}
	e.checkCredited(credited, eth0, usdt0)
	if got := e.depositsWhere("BELOW_MINIMUM"); len(got) != 1 || got[0].Currency != "USDC" {
		t.Fatalf("USDC must still wait: %+v", got)
	}
}

// Attribution: a deposit belongs to the user's live session that most recently handed out the
// address for that chain and currency; with none live, its session fields are null.
func TestDepositAttribution(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	older := e.openSession("u")
	info, err := e.svc.Address(e.ctx, older, "USDT", e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	newer := e.openSession("u") // a newer session that showed only the ETH address
	if _, err := e.svc.Address(e.ctx, newer, "ETH", e.dev.ChainID()); err != nil {
		t.Fatal(err)
	}
	e.openSession("u") // and one that showed nothing
	u := e.newUser()
	pay := func(nonce uint64) domain.Deposit {
		tx := e.send(u, nonce, e.usdt.Address, nil, erc20Transfer(info.Address, 2_000_000), 2)
		e.mine(tx)
		e.scan()
		return e.deposit(e.findDeposit(tx.Hash()))
	}
	if d := pay(0); d.SessionID != older.ID {
		t.Fatalf("USDT paid after only the older session showed the USDT address: session %q, want %q", d.SessionID, older.ID)
	}
	if _, err := e.svc.Address(e.ctx, newer, "USDT", e.dev.ChainID()); err != nil {
		t.Fatal(err)
	}
	if d := pay(1); d.SessionID != newer.ID {
		t.Fatalf("after the newer session showed it too: session %q, want %q", d.SessionID, newer.ID)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE sessions SET expires_at = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	if d := pay(2); d.SessionID != "" {
		t.Fatalf("no live session: session %q, want none", d.SessionID)
	}
	e.run(func() bool { return len(e.hooks.all()) == 3 })
	refs := map[string]bool{}
	for _, ev := range e.hooks.all() {
		refs[ev.GetSessionRef()] = true
	}
	if !refs[older.SessionRef] || !refs[newer.SessionRef] || !refs[""] {
		t.Fatalf("session refs on the DEPOSIT events: %v", refs)
	}
}

// Attribution holds when the session shows the address again after the payment: a user whose
// payment does not show (the scanner missed it, or is behind) goes back and asks again, and
// the deposit found later (a replay, a late scan) still belongs to the session that handed
// out the address before the payment, not to none. Among several, the one that handed it out
// most recently before the payment wins, whatever came after.
func TestDepositAttributionSurvivesALaterHandout(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	only := e.openSession("asks-again")
	payOnly := e.addressFor(only, "USDT").Address
	first, second := e.openSession("two-sessions"), e.openSession("two-sessions")
	payTwo := e.addressFor(first, "USDT").Address
	e.addressFor(second, "USDT")
	u := e.newUser()
	a := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(payOnly, 2_000_000), 2)
	b := e.send(u, 1, e.usdt.Address, nil, erc20Transfer(payTwo, 3_000_000), 2)
	e.mine(a, b)
	e.waitPastSlack(a) // a handout now is clearly after the payment
	e.addressFor(only, "USDT")
	e.addressFor(first, "USDT")
	e.scan()
	if d := e.deposit(e.findDeposit(a.Hash())); d.SessionID != only.ID {
		t.Errorf("paid after the session's handout, found after it showed the address again: session %q, want %q", d.SessionID, only.ID)
	}
	if d := e.deposit(e.findDeposit(b.Hash())); d.SessionID != second.ID {
		t.Errorf("paid after the second session's handout: session %q, want %q (the first showed it again only after)", d.SessionID, second.ID)
	}
}

// waitPastSlack waits until a handout now is clearly after the mined transaction: past its
// block's time plus the slack allowed for clocks.
func (e *env) waitPastSlack(tx *types.Transaction) {
	e.t.Helper()
	time.Sleep(time.Until(e.blockTime(tx).Add(store.HandoutSlack + time.Second)))
}

// blockTime is the time of the block that mined tx.
func (e *env) blockTime(tx *types.Transaction) time.Time {
	e.t.Helper()
	r, err := e.client.Receipt(e.ctx, tx.Hash())
	if err != nil {
		e.t.Fatal(err)
	}
	h, err := e.client.Header(e.ctx, r.BlockNumber)
	if err != nil {
		e.t.Fatal(err)
	}
	return time.Unix(int64(h.Time), 0)
}

// Attribution keeps every handout, not only a session's first and latest: a user shows the
// address in one tab, then in another, goes back to the first and pays from there, and that
// tab shows the address once more before the payment is found (the scanner is behind, or the
// deposit is replayed later). The payment is the first session's, which had shown the
// address most recently before it; it went to the second, whose one handout fell between the
// first session's first and latest.
func TestDepositAttributionKeepsEveryHandout(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	paid, other := e.openSession("switches-tabs"), e.openSession("switches-tabs")
	addr := e.addressFor(paid, "USDT").Address
	e.addressFor(other, "USDT")
	e.addressFor(paid, "USDT") // back in the first tab, which the user pays from
	tx := e.send(e.newUser(), 0, e.usdt.Address, nil, erc20Transfer(addr, 2_000_000), 2)
	e.mine(tx)
	e.waitPastSlack(tx)
	e.addressFor(paid, "USDT") // shown again before the scanner reads the payment
	e.scan()
	if d := e.deposit(e.findDeposit(tx.Hash())); d.SessionID != paid.ID {
		t.Fatalf("paid from the session that showed the address last before the payment: session %q, want %q (the other is %q)",
			d.SessionID, paid.ID, other.ID)
	}
}

// A cancelled session owns what was paid before the cancel, and nothing after it: the later
// payment is still swept and credited, with null session fields (DESIGN.md: addresses are
// watched forever).
func TestCancelledSessionAttribution(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	sess := e.openSession("cancels")
	addr := e.addressFor(sess, "USDT").Address
	u := e.newUser()
	before := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 2_000_000), 2)
	e.mine(before)
	time.Sleep(time.Until(e.blockTime(before).Add(time.Second))) // the cancel comes after the payment's block
	if status, err := e.sessions.Cancel(e.ctx, sess.ID); err != nil || status != domain.SessionCancelled {
		t.Fatalf("cancel: %s %v", status, err)
	}
	time.Sleep(1100 * time.Millisecond) // block times are whole seconds: the next one is clearly after the cancel
	after := e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 3_000_000), 2)
	e.mine(after)
	e.scan()
	if d := e.deposit(e.findDeposit(before.Hash())); d.SessionID != sess.ID {
		t.Errorf("paid before the cancel: session %q, want %q", d.SessionID, sess.ID)
	}
	if d := e.deposit(e.findDeposit(after.Hash())); d.SessionID != "" {
		t.Errorf("paid after the cancel: session %q, want none", d.SessionID)
	}
	e.run(func() bool { return len(e.depositsWhere("CREDITED")) == 2 })
	refs := map[string]bool{}
	for _, ev := range e.hooks.all() {
		refs[ev.GetSessionRef()] = true
	}
	if len(e.hooks.all()) != 2 || !refs[sess.SessionRef] || !refs[""] {
		t.Fatalf("DEPOSIT session refs %v, want the session's and none", refs)
	}
}

// A rate source that stays down does not hold a swept deposit forever: after Config.RateWait
// its DEPOSIT goes out with null USD and local values; before that it waits.
func TestRateOutageEndsInADepositWithNulls(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64
	e := setupWith(t, options{
		config: deposit.Config{RateWait: 3 * time.Second},
		prices: func(dev *devchain.Chain) deposit.Prices {
			feed, _ := dev.Aggregator("USDT/USD")
			agg := rates.NewAggregator(dev.Client(), map[string]common.Address{"USDT": feed.Address},
				rates.AggregatorOptions{TTL: -1, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
			return rates.NewChain([]*rates.Aggregator{agg}, rates.DevStatic())
		},
	})
	sess := e.openSession("u")
	info, _ := e.svc.Address(e.ctx, sess, "USDT", e.dev.ChainID())
	// The USDT feed goes stale (its last update is older than the 1 h it is trusted for).
	skew.Store(int64(2 * time.Hour))
	u := e.newUser()
	e.mine(e.send(u, 0, e.usdt.Address, nil, erc20Transfer(info.Address, 4_000_000), 2))
	for e.count(`SELECT count(*) FROM sweeps WHERE mined_at IS NOT NULL`) == 0 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	if len(e.hooks.all()) != 0 || len(e.depositsWhere("SWEEPING")) != 1 {
		t.Fatal("within the wait, a deposit without a rate waits")
	}
	ev := e.onlyDepositAfterRateWait(10*time.Second, 100*time.Millisecond, e.settleAll)
	if ev.AmountInDollar != nil || ev.AmountInLocalCurrency != nil || ev.FeeInDollar != nil || ev.CurrentRate != "0.92" ||
		ev.LocalCurrencyCode != "EUR" || ev.Amount != "4000000" {
		t.Fatalf("DEPOSIT without a price: %+v", ev)
	}
	if d := e.deposit(ev.DepositId); !d.Unpriced || d.Status != "CREDITED" {
		t.Fatalf("deposit %+v", d)
	}
}

// An unknown platform currency (a session from before currencies were checked) ends the same
// way: the USD values are there, the local ones and the rate are null.
func TestUnknownFiatEndsInADepositWithNullLocalValues(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{config: deposit.Config{RateWait: time.Second}})
	sess := e.openSession("u")
	if _, err := e.pool.Exec(e.ctx, `UPDATE sessions SET fiat_currency = 'XYZ' WHERE id = $1`, sess.ID); err != nil {
		t.Fatal(err)
	}
	sess.FiatCurrency = "XYZ"
	addr := e.address("u")
	if err := store.RecordHandout(e.ctx, e.pool, sess.ID, e.dev.ChainID(), "USDT"); err != nil {
		t.Fatal(err)
	}
	u := e.newUser()
	e.mine(e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 4_000_000), 2))
	ev := e.onlyDepositAfterRateWait(15*time.Second, 50*time.Millisecond, func() {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	})
	if ev.GetAmountInDollar() != "4.000000" || ev.AmountInLocalCurrency != nil || ev.CurrentRate != "null" || ev.LocalCurrencyCode != "XYZ" ||
		ev.GetSessionRef() != sess.SessionRef {
		t.Fatalf("DEPOSIT with an unknown local currency: %+v", ev)
	}
}

// treasury is the operator's treasury address.
func (e *env) treasury() common.Address {
	e.t.Helper()
	a, err := e.svc.Treasury(e.ctx, e.op.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// A payment to an operator's treasury address funds its payouts: swept like a deposit,
// credited to its funds with no deposit fee, and no DEPOSIT webhook.
func TestTreasuryPaymentsFundTheOperator(t *testing.T) {
	t.Parallel()
	e := setup(t, 150)
	treasury := e.treasury()
	if again, _ := e.svc.Treasury(e.ctx, e.op.ID); again != treasury {
		t.Fatal("one treasury address per operator")
	}
	u := e.newUser()
	e.mine(e.send(u, 0, e.usdt.Address, nil, erc20Transfer(treasury, 100_000_000), 2), e.send(u, 1, treasury, milliETH(200), nil, 2))
	e.run(func() bool { return len(e.depositsWhere("CREDITED")) == 2 })
	if len(e.hooks.all()) != 0 {
		t.Fatal("a treasury payment sends no DEPOSIT")
	}
	if f := e.funds("USDT"); f.Available.Int64() != 100_000_000 {
		t.Fatalf("USDT funds %v, want 100 USDT (no deposit fee on a treasury payment)", f.Available)
	}
	native := e.depositsWhere("CREDITED")
	for _, d := range native {
		if !d.Treasury || d.ExternalUserID != "" || d.SessionID != "" {
			t.Fatalf("treasury deposit %+v", d)
		}
	}
	if f := e.funds("ETH"); f.Available.Sign() <= 0 || f.Available.Cmp(milliETH(200)) >= 0 {
		t.Fatalf("ETH funds %v: the payment less its sweep's gas", f.Available)
	}
	if n := e.count(`SELECT count(*) FROM fund_entries WHERE kind = 'TREASURY'`); n != 2 {
		t.Fatalf("%d TREASURY entries", n)
	}
}

// gasBurner fills blocks with calls that burn all their gas, from a rich account of its own,
// to drive the base fee up.
type gasBurner struct {
	e     *env
	from  user
	fwd   common.Address
	nonce uint64
}

// newGasBurner deploys the Forwarder whose burn it calls and funds its account.
func (e *env) newGasBurner() *gasBurner {
	e.t.Helper()
	fwd, err := e.dev.DeployForwarder(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	b := &gasBurner{e: e, from: e.newUser(), fwd: fwd}
	rich, err := e.dev.SendNative(e.ctx, b.from.addr, testfactory.Ether(1000))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.dev.Mine(e.ctx, rich); err != nil {
		e.t.Fatal(err)
	}
	return b
}

// raiseBaseFee seals full blocks (4 × 15M gas of a 60M block, a 30 gwei tip), each raising the
// base fee 12.5%, until it reaches target.
func (b *gasBurner) raiseBaseFee(target *big.Int) {
	e := b.e
	e.t.Helper()
	burn := contracts.NewForwarder().PackBurn()
	for e.baseFee().Cmp(target) < 0 {
		for range 4 {
			tip := big.NewInt(30e9)
			tx := types.MustSignNewTx(b.from.key, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
				ChainID: big.NewInt(e.dev.ChainID()), Nonce: b.nonce, GasTipCap: tip, GasFeeCap: big.NewInt(60e9), Gas: 15_000_000,
				To: &b.fwd, Data: burn})
			if err := e.client.Send(e.ctx, tx); err != nil {
				e.t.Fatal(err)
			}
			b.nonce++
		}
		e.dev.Commit()
	}
}

// Bumps under a rising base fee: a native and a token sweep (two addresses) are signed and
// broadcast, then full blocks push the base fee past their fee caps, so they cannot be mined;
// their replacements pay more. The native sweep's replacement sends less (it pays its own gas),
// the token sweep's needs more gas, which its address is topped up with. Both are credited
// once, at what the mined attempts delivered.
func TestSweepsSurviveARisingBaseFee(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	burner := e.newGasBurner()
	addr := e.address("u")
	nativeAddr := e.address("v")
	eth0, usdt0 := e.balance(e.bankroll), e.tokenBalance(e.bankroll)
	u := e.newUser()
	e.mine(e.send(u, 0, nativeAddr, milliETH(50), nil, 2), e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 3_000_000), 2))
	for e.count(`SELECT count(*) FROM sweeps WHERE status = 'SENDING'`) < 2 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	signedAt := e.baseFee()
	var lastBeforeBurn int64
	if err := e.pool.QueryRow(e.ctx, `SELECT max(id) FROM chain_txs`).Scan(&lastBeforeBurn); err != nil {
		t.Fatal(err)
	}
	// Their fee caps are soon too low: nodes drop such transactions from their pools; so does
	// this one, and the engine does not re-broadcast them while the fees climb.
	e.engine.RebroadcastAfter = time.Hour
	e.dev.Rollback()
	// Full blocks raise the base fee until it passes the sweeps' fee caps (2 × base + tip).
	burnFrom := e.head()
	burner.raiseBaseFee(new(big.Int).Mul(signedAt, big.NewInt(3)))
	burnTo := e.head()
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'sweep' AND state = 'mined'`); n != 0 {
		t.Fatalf("%d sweeps mined while blocks were full; the test needs them stuck", n)
	}
	// The sweeps are stuck: one round of replacements at the new fees (the token sweep's needs
	// more gas than the address holds: a top-up follows), then they run to the end.
	e.engine.StuckAfter = 0
	e.settleAll()
	e.engine.StuckAfter, e.engine.RebroadcastAfter = time.Hour, 0
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	e.checkCredited(e.all(), eth0, usdt0)
	// Every sweep transaction signed before the rise was replaced; a token one needed more gas.
	rows, _ := e.pool.Query(e.ctx, `SELECT t.id <= $1, t.data IS NOT NULL AND length(t.data) > 0,
		(SELECT count(*) FROM chain_tx_attempts a WHERE a.tx_id = t.id), t.ref || ' block ' || coalesce(t.mined_block, 0)
		FROM chain_txs t WHERE t.purpose = 'sweep' ORDER BY t.id`, lastBeforeBurn)
	type sweepTx struct {
		Before, Token bool
		Attempts      int
		What          string
	}
	txs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[sweepTx])
	if err != nil {
		t.Fatal(err)
	}
	stuckToken := false
	for _, tx := range txs {
		if tx.Before && tx.Attempts < 2 {
			t.Errorf("%s was signed before the rise and never replaced (%d attempts; burn blocks %d-%d)", tx.What, tx.Attempts, burnFrom, burnTo)
		}
		stuckToken = stuckToken || (tx.Before && tx.Token)
	}
	if len(txs) != 2 || !txs[0].Before || !txs[1].Before || !stuckToken {
		t.Fatalf("want a native and a token sweep signed before the rise: %+v", txs)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas' AND to_address = $1`, addr.Hex()); n < 2 {
		t.Fatalf("%d gas top-ups: the token sweep's replacement needs more gas than the first top-up", n)
	}
}

func (e *env) head() uint64 {
	e.t.Helper()
	n, err := e.client.BlockNumber(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// latestHeader is the header of the chain's head block.
func (e *env) latestHeader() *types.Header {
	e.t.Helper()
	h, err := e.client.Header(e.ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) baseFee() *big.Int {
	e.t.Helper()
	return e.latestHeader().BaseFee
}

// settleConcurrently settles every unsettled deposit with n workers at once.
func (e *env) settleConcurrently(n int) {
	e.t.Helper()
	ids := e.unsettled()
	work := make(chan int64)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for id := range work {
				if _, err := e.svc.Settle(e.ctx, id); err != nil {
					e.t.Errorf("settle %d: %v", id, err)
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// What was seen (CI, TestBatchedDepositsEndToEndOnGeth on geth --dev): a gas top-up sent to a
// native deposit address whose sweep was mined just after the step looked for its receipt;
// the balance then read was what the sweep had left (its unused gas), so the gas tank topped
// up an address with nothing left to move. fund reads the balance and the address's nonce at one
// block and sends nothing once one of the transactions the caller saw pending is mined.
func TestNoTopUpForASweepMinedMeanwhile(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, _, _, u := e.sweepStart()
	e.mine(e.send(u, 0, addr, milliETH(500), nil, 2))
	for e.count(`SELECT count(*) FROM sweeps WHERE status = 'SENDING'`) == 0 {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
	var sweepID int64
	var nonce uint64
	var maxCost string
	if err := e.pool.QueryRow(e.ctx, `SELECT sw.id, t.nonce, (a.value + t.gas_limit * a.gas_fee_cap)::text
		FROM sweeps sw JOIN chain_txs t ON t.ref LIKE 'sweep:' || sw.id || ':%' AND t.purpose = 'sweep'
		JOIN chain_tx_attempts a ON a.tx_id = t.id WHERE t.state = 'pending'`).Scan(&sweepID, &nonce, &maxCost); err != nil {
		t.Fatal(err)
	}
	need, _ := new(big.Int).SetString(maxCost, 10)
	// The sweep is mined; the step that saw it pending now checks the address's gas.
	e.dev.Commit()
	if bal := e.balance(addr); bal.Cmp(need) >= 0 {
		t.Fatalf("the address still holds %v wei of the %v the sweep could cost", bal, need)
	}
	ready, err := deposit.FundSweep(e.ctx, e.svc, e.dev.ChainID(), addr.Hex(), sweepID, need, nonce)
	if err != nil || ready {
		t.Fatalf("fund: ready %v, %v", ready, err)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 0 {
		t.Fatalf("%d gas top-ups for a sweep already mined", n)
	}
	// Without the nonces seen pending, the same check tops the empty address up: the race.
	if _, err := deposit.FundSweep(e.ctx, e.svc, e.dev.ChainID(), addr.Hex(), sweepID, need); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'gas'`); n != 1 {
		t.Fatalf("%d gas top-ups without the pending nonces, want the 1 the race sent", n)
	}
}

// reconciled checks the ops reconciliation's invariant on the test's chain: for every asset,
// the bankroll and the hot wallet hold at least every operator's available + reserved funds.
func (e *env) reconciled() {
	e.t.Helper()
	_, hot := e.keys.HotWallet()
	r := &funds.Reconciler{Ledger: funds.New(e.pool, e.deps.Chains.Registry), Clients: map[int64]*chain.Client{e.dev.ChainID(): e.client},
		HotWallet: hot}
	lines, err := r.Reconcile(e.ctx, e.dev.ChainID())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range lines {
		if !l.OK {
			e.t.Errorf("reconciliation: %s holdings %s, owed %s (short %s)", l.Currency, l.Holdings, l.Owed, l.Surplus.Neg())
		}
	}
}
