package deposit_test

import (
	"errors"
	"fmt"
	"math/big"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestTwoWorkersPrefundAnAddressOnce: two token payments to one address in one block get a
// settle job each, which two workers run at once while the deposits confirm. Each job tops the
// address up with the gas of the address's sweep; the address is topped up once, never once
// per job (the second top-up would leave the gas tank's ETH at the deposit address).
func TestTwoWorkersPrefundAnAddressOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	other := deposit.New(e.deps, e.config) // another worker's service on the same database and chain
	workers := []*deposit.Service{e.svc, other}
	const rounds = 20
	for round := range rounds {
		addr := e.address(fmt.Sprintf("prefund-race-%d", round))
		e.mintTogether("USDT", []common.Address{addr, addr}, []int64{40_000_000, 60_000_000})
		e.scan()
		ids := e.depositsIn(`SELECT id FROM deposits WHERE address = $1 AND status = 'CONFIRMING' ORDER BY id`, addr.Hex())
		if len(ids) != 2 {
			t.Fatalf("round %d: %d confirming deposits at %s, want 2", round, len(ids), addr.Hex())
		}
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make([]error, len(ids))
		for i, d := range ids {
			done.Go(func() {
				start.Wait()
				_, errs[i] = workers[i].Settle(e.ctx, d.ID)
			})
		}
		start.Done()
		done.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: settle %d: %v", round, ids[i].ID, err)
			}
		}
		if got := e.topUps(addr); len(got) != 1 {
			t.Fatalf("round %d: %d gas top-ups sent to %s for its two deposits, want 1", round, len(got), addr.Hex())
		}
	}
	e.run(func() bool { return len(e.depositsWhere(string(domain.DepositCredited))) == 2*rounds })
}

// TestTwoScannersRecordEachTransferOnce: River keeps one scan per chain, but a scan its rescuer
// gave to another worker while the first still ran (a pass slower than the rescue delay)
// overlaps it. Two services scanning the same blocks at once record each transfer once: a
// pass whose cursor moved under it is refused (ErrRaced) and the next one starts over. Each
// payment is credited once, with one DEPOSIT.
func TestTwoScannersRecordEachTransferOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	scanners := []*deposit.Service{e.svc, deposit.New(e.deps, e.config)}
	const rounds = 20
	for round := range rounds {
		eth, payer := e.payer(fmt.Sprintf("scan-race-eth-%d", round))
		token := e.address(fmt.Sprintf("scan-race-usdt-%d", round))
		e.send(payer, 0, eth, big.NewInt(1e17), nil, 2)
		e.mintTogether("USDT", []common.Address{token}, []int64{40_000_000})
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make([]error, len(scanners))
		for i, s := range scanners {
			done.Go(func() {
				start.Wait()
				errs[i] = s.Scan(e.ctx, e.dev.ChainID())
			})
		}
		start.Done()
		done.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, deposit.ErrRaced) {
				t.Fatalf("round %d: scanner %d: %v", round, i, err)
			}
		}
	}
	e.run(func() bool { return len(e.depositsWhere(string(domain.DepositCredited))) == 2*rounds })
	if n := e.count(`SELECT count(*) FROM deposits`); n != 2*rounds {
		t.Fatalf("%d deposits recorded for %d payments", n, 2*rounds)
	}
	if n := e.count(`SELECT count(*) FROM fund_entries WHERE kind = 'DEPOSIT'`); n != 2*rounds {
		t.Fatalf("%d DEPOSIT fund entries for %d payments", n, 2*rounds)
	}
	if n := len(e.hooks.all()); n != 2*rounds {
		t.Fatalf("%d DEPOSIT events for %d payments", n, 2*rounds)
	}
}

// TestReplayRacingTheScannerCreditsOnce: an admin replays a confirmed payment while a scan pass
// reads its block. Either may record it first; the other finds it known (the replay waits on
// the chain's cursor, the pass is refused when the cursor moved). Each payment is recorded
// once, credited once, with one DEPOSIT, and no replay fails.
func TestReplayRacingTheScannerCreditsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	const rounds = 20
	for round := range rounds {
		addr, payer := e.payer(fmt.Sprintf("replay-race-%d", round))
		paid := e.send(payer, 0, addr, big.NewInt(1e17), nil, 2)
		e.mine(paid)
		e.confirm()
		var start, done sync.WaitGroup
		start.Add(1)
		var scanErr, replayErr error
		var replayed deposit.Replayed
		done.Go(func() {
			start.Wait()
			scanErr = e.svc.Scan(e.ctx, e.dev.ChainID())
		})
		done.Go(func() {
			start.Wait()
			replayed, replayErr = e.svc.Replay(e.ctx, replayer, domain.AllOperators(), e.dev.ChainID(), paid.Hash())
		})
		start.Done()
		done.Wait()
		if scanErr != nil && !errors.Is(scanErr, deposit.ErrRaced) {
			t.Fatalf("round %d: scan: %v", round, scanErr)
		}
		if replayErr != nil || len(replayed.Deposits) != 1 {
			t.Fatalf("round %d: replay: %+v %v", round, replayed, replayErr)
		}
	}
	e.run(func() bool { return len(e.depositsWhere(string(domain.DepositCredited))) == rounds })
	if n := e.count(`SELECT count(*) FROM deposits`); n != rounds {
		t.Fatalf("%d deposits recorded for %d payments", n, rounds)
	}
	if n := e.count(`SELECT count(*) FROM fund_entries WHERE kind = 'DEPOSIT'`); n != rounds {
		t.Fatalf("%d DEPOSIT fund entries for %d payments", n, rounds)
	}
	if n := len(e.hooks.all()); n != rounds {
		t.Fatalf("%d DEPOSIT events for %d payments", n, rounds)
	}
}

// TestStaleRollbackOfAnOverlappingScanTakesNothing: two scans of one chain overlap (River's
// rescuer gave a slow pass to another worker). Both find a reorg; the second rolls back, reads
// the new branch a block a pass and moves the cursor back to where it was, while the new
// branch's payment is confirmed and credited. The first pass's rollback, for the old branch,
// then finds the cursor where it left it: it must not roll back again (a deposit on the chain
// marked REORGED, its credit reversed), but start over.
func TestStaleRollbackOfAnOverlappingScanTakesNothing(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{config: deposit.Config{LogWindow: 1}})
	slow, fast := e.svc, deposit.New(e.deps, e.config)
	addr, payer := e.payer("overlap")
	parent := e.latestHeader()
	for range 2 { // the old branch, read by the scanner
		e.dev.Commit()
	}
	e.scanToHead()
	stale, err := store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.mine(e.send(payer, 0, addr, testfactory.Ether(1), nil, 2))
	for range confirmations + 2 {
		e.dev.Commit()
	}

	found, release := make(chan struct{}), make(chan struct{})
	deposit.SetCrash(slow, func(step string) {
		if step == deposit.StepForkFound {
			close(found)
			<-release
		}
	})
	slowErr := make(chan error, 1)
	go func() { slowErr <- slow.Scan(e.ctx, e.dev.ChainID()) }()
	<-found
	deposit.SetCrash(slow, nil)
	// The overlapping pass rolls back and reads the new branch up to the old cursor, confirming
	// the payment.
	for cur := (store.Cursor{}); cur.NextBlock != stale.NextBlock; {
		if err := fast.Scan(e.ctx, e.dev.ChainID()); err != nil {
			t.Fatal(err)
		}
		if cur, err = store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID()); err != nil || cur.NextBlock > stale.NextBlock {
			t.Fatalf("the overlapping pass moved the cursor to %d, past %d (%v)", cur.NextBlock, stale.NextBlock, err)
		}
	}
	confirmed := e.depositsWhere(string(domain.DepositSweeping))
	if len(confirmed) != 1 {
		t.Fatalf("%d confirmed deposits before the stale rollback, want 1", len(confirmed))
	}
	close(release)
	if err := <-slowErr; err != nil && !errors.Is(err, deposit.ErrRaced) {
		t.Fatalf("the stale pass: %v", err)
	}
	id := confirmed[0].ID
	if d := e.deposit(id); d.Status != domain.DepositSweeping || e.count(`SELECT count(*) FROM deposit_reorgs`) != 0 {
		t.Fatalf("after the stale rollback the deposit on the chain is %s, with %d reorg incidents", d.Status,
			e.count(`SELECT count(*) FROM deposit_reorgs`))
	}
	e.run(func() bool { return e.deposit(id).Status == domain.DepositCredited })
	if got, n := e.fundKinds(id), len(e.hooks.all()); got != "DEPOSIT" || n != 1 {
		t.Fatalf("fund entries %s, %d DEPOSIT events; want one of each", got, n)
	}
}

// TestStalePassOfAnOverlappingScanRecordsNothing: an overlapping pass (as above) read a block
// with a payment, which a reorg then took away; the other pass rolled back and read the new
// branch up to the same cursor. The first pass's blocks no longer link to the kept ones: it
// records nothing (ErrRaced), where it recorded the gone payment and its block on top of the
// new branch's.
func TestStalePassOfAnOverlappingScanRecordsNothing(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{config: deposit.Config{LogWindow: 1}})
	slow, fast := e.svc, deposit.New(e.deps, e.config)
	addr, payer := e.payer("overlap")
	parent := e.latestHeader()
	for range 2 {
		e.dev.Commit()
	}
	e.scanToHead()
	stale, err := store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	gone := e.send(payer, 0, addr, testfactory.Ether(1), nil, 2) // in the block the slow pass reads
	e.mine(gone)
	for range confirmations {
		e.dev.Commit()
	}

	read, release := make(chan struct{}), make(chan struct{})
	deposit.SetCrash(slow, func(step string) {
		if step == deposit.StepBlocksRead {
			close(read)
			<-release
		}
	})
	slowErr := make(chan error, 1)
	go func() { slowErr <- slow.Scan(e.ctx, e.dev.ChainID()) }()
	<-read
	deposit.SetCrash(slow, nil)
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	// A longer branch without the payment: its payer spent the same nonce elsewhere.
	e.mine(e.send(payer, 0, common.HexToAddress("0x00000000000000000000000000000000000000c0"), testfactory.Ether(1), nil, 50))
	for range confirmations + 6 {
		e.dev.Commit()
	}
	for cur := (store.Cursor{}); cur.NextBlock != stale.NextBlock; {
		if err := fast.Scan(e.ctx, e.dev.ChainID()); err != nil {
			t.Fatal(err)
		}
		if cur, err = store.New(e.pool).GetCursor(e.ctx, e.dev.ChainID()); err != nil || cur.NextBlock > stale.NextBlock {
			t.Fatalf("the overlapping pass moved the cursor to %d, past %d (%v)", cur.NextBlock, stale.NextBlock, err)
		}
	}
	close(release)
	if err := <-slowErr; !errors.Is(err, deposit.ErrRaced) {
		t.Fatalf("the stale pass: %v, want ErrRaced", err)
	}
	if n := e.count(`SELECT count(*) FROM deposits WHERE tx_hash = $1`, gone.Hash().Hex()); n != 0 {
		t.Fatalf("the stale pass recorded the payment its block took away (%d deposits)", n)
	}
	e.scanToHead()
	if n := e.count(`SELECT count(*) FROM deposits`) + e.count(`SELECT count(*) FROM deposit_reorgs`); n != 0 {
		t.Fatalf("%d deposits and reorg incidents after the scanner caught up, want none", n)
	}
}
