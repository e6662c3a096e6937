package deposit_test

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// writeOffNote is the engineer's note on the first write-off.
const writeOffNote = "the transfer never came back; the operator was compensated by hand"

// writtenOffMinedAgain credits a deposit (1 ETH, or 40 USDC: a token sweep needs a gas
// top-up), takes its block (and its sweep's) away in a reorg deeper than the confirmation
// depth with nothing mined again, has an engineer write it off, then mines the same signed
// transfer again and confirms it. It returns the deposit as it was credited and as it is now.
func (e *env) writtenOffMinedAgain(name, currency string) (credited, now domain.Deposit) {
	e.t.Helper()
	addr := e.address(name)
	payer := e.newUser()
	var tx *types.Transaction
	parent := e.latestHeader()
	if currency == "ETH" {
		tx = e.send(payer, 0, addr, testfactory.Ether(1), nil, 2)
	} else {
		e.mint(currency, payer.addr, 50_000_000)
		token, _ := e.dev.Token(currency)
		parent = e.latestHeader()
		tx = e.send(payer, 0, token.Address, nil, erc20Transfer(addr, 40_000_000), 2)
	}
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	credited = e.deposit(e.findDeposit(tx.Hash()))
	if credited.Status != domain.DepositCredited || e.available(currency).Cmp(credited.Amount) != 0 {
		e.t.Fatalf("before the reorg: %s, %v %s", credited.Status, e.available(currency), currency)
	}

	// The chain forks below the deposit; its transfer and its sweep are dropped, not mined again.
	oldHead := e.forkDropping(parent)
	for e.latestHeader().Number.Uint64() <= oldHead+confirmations {
		e.dev.Commit()
		e.scan()
	}
	e.scan()
	if _, err := e.client.Receipt(e.ctx, tx.Hash()); !errors.Is(err, ethereum.NotFound) {
		e.t.Fatalf("the transfer is still on the chain: %v", err)
	}
	if got := e.deposit(credited.ID); got.Status != domain.DepositReorged || e.available(currency).Sign() != 0 {
		e.t.Fatalf("after the reorg: %s, %v %s", got.Status, e.available(currency), currency)
	}
	if _, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: credited.ID, Resolution: "WRITE_OFF", Note: writeOffNote,
		Actor: "service-team:cli:eve"}); err != nil {
		e.t.Fatal(err)
	}
	e.reconciled()

	// The same signed transfer is mined again, and its block reaches the confirmation depth.
	if err := e.client.Send(e.ctx, tx); err != nil {
		e.t.Fatal(err)
	}
	e.mine(tx)
	// Its confirmations accrue (reopenedIncident checks what came of it).
	for range 4 * confirmations {
		if e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1 AND resolution IS NULL`, credited.ID) > 0 {
			break
		}
		e.scan()
		e.settleAll()
		e.dev.Commit()
	}
	now = e.deposit(credited.ID)
	if now.BlockHash == credited.BlockHash {
		e.t.Fatalf("the transfer was not mined again in a new block")
	}
	return credited, now
}

// reopenedIncident checks what the scanner did with a written-off deposit mined again: it is
// not credited (the funds and the DEPOSIT events are as the write-off left them) and a new
// incident is open for it, detected by the system, noting the new block, listed with it.
func (e *env) reopenedIncident(d domain.Deposit) {
	e.t.Helper()
	if d.Status != domain.DepositReorged || e.available(d.Currency).Sign() != 0 || e.fundKinds(d.ID) != "DEPOSIT,REORG" {
		e.t.Fatalf("mined again after the write-off: %s, %v %s, fund entries %s: credited by itself", d.Status,
			e.available(d.Currency), d.Currency, e.fundKinds(d.ID))
	}
	if n := len(e.hooks.all()); n != 1 {
		e.t.Fatalf("%d DEPOSIT events, want the one", n)
	}
	if got := e.reorgActions(d.ID); got != "DETECTED/system,WRITE_OFF/service-team:cli:eve,DETECTED/system" {
		e.t.Fatalf("audit after the transfer was mined again: %s (want a new incident)", got)
	}
	e.reconciled()
	if open, err := store.New(e.pool).OpenReorgsByChain(e.ctx); err != nil || open[e.dev.ChainID()] != 1 {
		e.t.Fatalf("%d unresolved reorgs (the gauge's source), want the new incident: %v", open[e.dev.ChainID()], err)
	}
	list, _, err := e.svc.ListReorgs(e.ctx, domain.AllOperators(), "", false, 0, "")
	if err != nil || len(list) != 1 {
		e.t.Fatalf("listed %d unresolved, %v", len(list), err)
	}
	r := list[0]
	want := fmt.Sprintf("the written-off transfer was mined again in block %d", d.BlockNumber)
	if r.DepositID != d.ID || r.ReincludedBlock != d.BlockNumber || r.PriorStatus != domain.DepositCredited ||
		r.Reversed.Cmp(d.Amount) != 0 || len(r.History) != 1 || !strings.HasPrefix(r.History[0].Note, want) {
		e.t.Fatalf("the new incident: %+v, history %+v", r.Reorg, r.History)
	}
}

// leftToTheEngineer checks that the scanner, block after block, leaves the new incident to
// the engineer: never resolved, never credited. With swept, it first waits until the
// deposit's sweep, which left the chain with its first block, is sent again and mined: the
// bankroll then holds the money whatever the engineer decides.
func (e *env) leftToTheEngineer(d domain.Deposit, swept bool) {
	e.t.Helper()
	if swept {
		e.run(func() bool { return e.sweepMined(d) })
	}
	e.runBlocks(confirmations + 2)
	if got := e.reorgActions(d.ID); got != "DETECTED/system,WRITE_OFF/service-team:cli:eve,DETECTED/system" {
		e.t.Fatalf("audit after more blocks: %s (resolved without the engineer)", got)
	}
	if e.available(d.Currency).Sign() != 0 {
		e.t.Fatalf("%v %s available before the engineer decided", e.available(d.Currency), d.Currency)
	}
	e.reconciled()
}

// What was seen: a credited deposit whose block a reorg deeper than the confirmation depth took
// away, written off by an engineer (the transfer was gone), was later mined again — the same
// transfer in a new block, its money back at the deposit address — and stayed written off:
// nothing counted it, listed it or alerted on it (a WARN line), and the user's money sat
// uncredited for good. The scanner now opens a new incident for it once the new block is
// confirmed, never crediting it by itself (the engineer may have compensated the operator by
// hand), and sends its sweep again meanwhile (the money reaches the bankroll whatever the
// engineer decides); the engineer decides: REINSTATE (credited back once, no second DEPOSIT)
// or WRITE_OFF again. Each decision counts once; a second one is a conflict, and further
// passes open nothing more.
func TestWrittenOffDepositMinedAgainReopens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, currency, resolution string
		kinds                      string
		status                     domain.DepositStatus
		credited                   bool
	}{
		{"reinstated", "ETH", "REINSTATE", "DEPOSIT,REORG,REINSTATE", domain.DepositCredited, true},
		{"written off again", "ETH", "WRITE_OFF", "DEPOSIT,REORG", domain.DepositReorged, false},
		// A token deposit's incident opens all the same. Its gas top-up left the chain with it and
		// was dropped: it is sent again (TestGasTopUpThatLeftTheChainIsSentAgain), then its sweep.
		{"token written off again", "USDC", "WRITE_OFF", "DEPOSIT,REORG", domain.DepositReorged, false},
		{"token reinstated", "USDC", "REINSTATE", "DEPOSIT,REORG,REINSTATE", domain.DepositCredited, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			credited, now := e.writtenOffMinedAgain("wo-"+strings.ReplaceAll(c.name, " ", "-"), c.currency)
			e.reopenedIncident(now)
			e.leftToTheEngineer(now, c.credited)

			got, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: now.ID, Resolution: c.resolution,
				Note: "the user's transfer is back", Actor: "service-team:cli:eve"})
			if err != nil || got.Resolution != domain.ReorgResolution(c.resolution) || got.Deposit.Status != c.status {
				t.Fatalf("%s: %+v, %v", c.resolution, got.Reorg, err)
			}
			check := func(when string) {
				t.Helper()
				want := new(big.Int)
				if c.credited {
					want.Set(credited.Amount)
				}
				if d := e.deposit(now.ID); d.Status != c.status || e.available(c.currency).Cmp(want) != 0 || e.fundKinds(now.ID) != c.kinds {
					t.Fatalf("%s: %s, %v %s (want %v), fund entries %s", when, d.Status, e.available(c.currency), c.currency, want,
						e.fundKinds(now.ID))
				}
				if got := e.reorgActions(now.ID); got != "DETECTED/system,WRITE_OFF/service-team:cli:eve,DETECTED/system,"+
					c.resolution+"/service-team:cli:eve" {
					t.Fatalf("%s: audit %s", when, got)
				}
				if n := len(e.hooks.all()); n != 1 {
					t.Fatalf("%s: %d DEPOSIT events, want the one", when, n)
				}
				if open, _ := store.New(e.pool).OpenReorgsByChain(e.ctx); open[e.dev.ChainID()] != 0 {
					t.Fatalf("%s: %d unresolved", when, open[e.dev.ChainID()])
				}
				e.reconciled()
			}
			check("resolved")
			// A second decision, either way, is a conflict and changes nothing.
			for _, again := range []string{"REINSTATE", "WRITE_OFF"} {
				_, err := e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: now.ID, Resolution: again, Note: "again",
					Actor: "service-team:test"})
				if fe := fault.As(err); err == nil || fe.Code != fault.Conflict || fe.Details["reason"] != "ALREADY_RESOLVED" {
					t.Fatalf("a second %s: %v", again, err)
				}
			}
			// The scanner goes on: the same block opens nothing more.
			e.runBlocks(confirmations + 2)
			check("after more blocks")
		})
	}
}

// Engineers deciding the reopened incident at the same moment, in opposite ways, while the
// scanner runs: exactly one decision wins, and the operator's funds move at most once.
func TestWrittenOffDepositMinedAgainRacingResolutionsCountOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	credited, now := e.writtenOffMinedAgain("wo-race", "ETH")
	e.reopenedIncident(now)
	e.leftToTheEngineer(now, true)
	var wg sync.WaitGroup
	scanErrs := make(chan error, 2*confirmations)
	wg.Go(func() {
		for range 2 * confirmations {
			if err := e.svc.Scan(e.ctx, e.dev.ChainID()); err != nil {
				scanErrs <- err
			}
			e.dev.Commit()
		}
	})
	resolutions := []string{"REINSTATE", "WRITE_OFF", "REINSTATE", "WRITE_OFF"}
	errs := make([]error, len(resolutions))
	for i, r := range resolutions {
		wg.Go(func() {
			_, errs[i] = e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: now.ID, Resolution: r, Note: "race",
				Actor: "service-team:test"})
		})
	}
	wg.Wait()
	close(scanErrs)
	for err := range scanErrs {
		t.Errorf("scan pass: %v", err)
	}
	won := ""
	for i, err := range errs {
		switch {
		case err == nil && won == "":
			won = resolutions[i]
		case err == nil:
			t.Fatalf("two decisions won: %s and %s", won, resolutions[i])
		case !fault.Is(err, fault.Conflict):
			t.Errorf("resolution %d (%s): %v, want success or CONFLICT", i, resolutions[i], err)
		}
	}
	want, kinds := new(big.Int), "DEPOSIT,REORG"
	if won == "REINSTATE" {
		want, kinds = credited.Amount, "DEPOSIT,REORG,REINSTATE"
	}
	if won == "" || e.available("ETH").Cmp(want) != 0 || e.fundKinds(now.ID) != kinds || len(e.hooks.all()) != 1 {
		t.Fatalf("won %q: %v ETH (want %v), fund entries %s, %d DEPOSIT events", won, e.available("ETH"), want,
			e.fundKinds(now.ID), len(e.hooks.all()))
	}
	if got := e.count(`SELECT count(*) FROM deposit_reorgs WHERE deposit_id = $1`, now.ID); got != 2 {
		t.Fatalf("%d reorgs, want the write-off and the one reopened", got)
	}
	e.reconciled()
}

// sweepMined reports whether the deposit's sweep transaction is on the chain.
func (e *env) sweepMined(d domain.Deposit) bool {
	e.t.Helper()
	_, err := e.client.Receipt(e.ctx, common.HexToHash(e.deposit(d.ID).SweepTxHash))
	return err == nil
}

// What was seen: an engineer could REINSTATE a written-off deposit mined again as soon as its
// new incident opened, before its sweep (which left the chain with it) was mined again: the
// operator was credited while the money still sat at the deposit address, so the books
// (funds.Reconciler) were short until the sweep was mined, and for good had it never been.
// REINSTATE is now refused with FAILED_PRECONDITION (reason SWEEP_NOT_MINED, naming the sweep),
// changing nothing, until the sweep is mined again at the confirmation depth; then it counts
// once.
func TestReinstateWaitsForTheSweepMinedAgain(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	credited, now := e.writtenOffMinedAgain("wo-early", "ETH")
	e.reopenedIncident(now)
	reinstate := func() (deposit.Reorged, error) {
		return e.svc.ResolveReorg(e.ctx, deposit.Resolution{DepositID: now.ID, Resolution: "REINSTATE",
			Note: "the user's transfer is back", Actor: "service-team:cli:eve"})
	}
	refused := func(when string) {
		t.Helper()
		_, err := reinstate()
		if fe := fault.As(err); err == nil || fe.Code != fault.FailedPrecondition || fe.Details["reason"] != "SWEEP_NOT_MINED" ||
			!strings.Contains(fe.Message, fmt.Sprintf("sweep %d", now.SweepID)) {
			t.Fatalf("%s: REINSTATE answered %v, want FAILED_PRECONDITION SWEEP_NOT_MINED naming sweep %d", when, err, now.SweepID)
		}
		if d := e.deposit(now.ID); d.Status != domain.DepositReorged || e.available("ETH").Sign() != 0 || e.fundKinds(now.ID) != "DEPOSIT,REORG" ||
			e.reorgActions(now.ID) != "DETECTED/system,WRITE_OFF/service-team:cli:eve,DETECTED/system" {
			t.Fatalf("%s: the refused REINSTATE changed something: %s, %v ETH, fund entries %s, audit %s", when, d.Status,
				e.available("ETH"), e.fundKinds(now.ID), e.reorgActions(now.ID))
		}
		e.reconciled()
	}
	if e.sweepMined(now) {
		t.Fatal("the test needs the sweep not mined again yet")
	}
	refused("before the sweep is sent again")
	e.run(func() bool { return e.sweepMined(now) })
	refused("the sweep mined again, not at the confirmation depth")
	e.runBlocks(confirmations + 1)
	got, err := reinstate()
	if err != nil || got.Resolution != domain.ReorgReinstate || got.Deposit.Status != domain.DepositCredited {
		t.Fatalf("REINSTATE once the sweep is at depth: %+v, %v", got.Reorg, err)
	}
	if e.available("ETH").Cmp(credited.Amount) != 0 || e.fundKinds(now.ID) != "DEPOSIT,REORG,REINSTATE" || len(e.hooks.all()) != 1 {
		t.Fatalf("after REINSTATE: %v ETH (want %v), fund entries %s, %d DEPOSIT events", e.available("ETH"), credited.Amount,
			e.fundKinds(now.ID), len(e.hooks.all()))
	}
	e.reconciled()
}
