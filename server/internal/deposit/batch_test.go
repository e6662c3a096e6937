package deposit_test

import (
	"encoding/json"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// setupBatched is setup on an eip7702 chain: a Sweeper deployed for the gas tank and the
// bankroll, token deposits swept in batches.
func setupBatched(t *testing.T, feeBps int32) *env {
	t.Helper()
	return setupWith(t, options{feeBps: feeBps, batched: true})
}

// tokenAddress is the token-deposit address of the operator's user userID.
func (e *env) tokenAddress(userID string) common.Address {
	e.t.Helper()
	return e.userAddress(e.svc.TokenAddressFor, userID)
}

// paidAddress is where the tests have the operator's user userID pay: its token-deposit address
// on a chain that sweeps token deposits in batches (they pay it tokens), else its deposit address.
func (e *env) paidAddress(userID string, batched bool) common.Address {
	e.t.Helper()
	if batched {
		return e.tokenAddress(userID)
	}
	return e.address(userID)
}

// batchTxs are the batch transactions sent so far, oldest first.
func (e *env) batchTxs() []domain.ChainTx {
	e.t.Helper()
	txs, err := store.New(e.pool).ChainTxsByRefPrefix(e.ctx, deposit.PurposeSweepBatch, "batch:")
	if err != nil {
		e.t.Fatal(err)
	}
	return txs
}

// authorizations counts the EIP-7702 authorizations a stored transaction carries.
func authorizations(t *testing.T, tx domain.ChainTx) int {
	t.Helper()
	if len(tx.Authorizations) == 0 {
		return 0
	}
	var auths []types.SetCodeAuthorization
	if err := json.Unmarshal(tx.Authorizations, &auths); err != nil {
		t.Fatal(err)
	}
	return len(auths)
}

// checkBatchedCredit checks that every deposit is credited exactly once with the gross minus
// its fee, that the bankroll received every gross amount, and that no gas top-up was sent.
func (e *env) checkBatchedCredit(want int, bankroll0 *big.Int, feeBps int64) {
	e.t.Helper()
	ds := e.all()
	if len(ds) != want {
		e.t.Fatalf("%d deposits, want %d", len(ds), want)
	}
	gross := new(big.Int)
	for _, d := range ds {
		fee := new(big.Int).Div(new(big.Int).Mul(d.GrossAmount, big.NewInt(feeBps)), big.NewInt(10000))
		if d.Status != domain.DepositCredited || d.Amount.Cmp(new(big.Int).Sub(d.GrossAmount, fee)) != 0 || d.FeeAmount.Cmp(fee) != 0 {
			e.t.Fatalf("deposit %d: %s, amount %v fee %v of %v", d.ID, d.Status, d.Amount, d.FeeAmount, d.GrossAmount)
		}
		if d.ContractAddress != "" {
			gross.Add(gross, d.GrossAmount)
		}
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankroll0); got.Cmp(gross) != 0 {
		e.t.Fatalf("the bankroll received %v USDT units, the deposits were %v", got, gross)
	}
	if n := len(e.hooks.all()); n != want {
		e.t.Fatalf("%d DEPOSIT events, want %d", n, want)
	}
	if n := e.count(`SELECT count(*) FROM chain_txs WHERE purpose IN ('gas', 'sweep', 'sweep-fee')`); n != 0 {
		e.t.Fatalf("%d top-up or per-address sweep transactions on a batched chain", n)
	}
	if n := e.count(`SELECT count(*) FROM sweeps WHERE status <> 'DONE' OR NOT batched`); n != 0 {
		e.t.Fatalf("%d sweeps not done or not batched", n)
	}
	e.reconciled()
}

// Token deposits to five token-deposit addresses, confirmed together, are swept in one batch
// that delegates each address: no top-up, nothing left at the addresses, each deposit credited
// once with its fee left in the bankroll.
func TestTokenDepositsAreSweptInOneBatch(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 100) // 1% fee
	bankroll0 := e.tokenBalance(e.bankroll)
	var addrs []common.Address
	var amounts []int64
	for i := range 5 {
		addrs = append(addrs, e.tokenAddress(string(rune('a'+i))))
		amounts = append(amounts, int64(10_000_000*(i+1)))
	}
	e.mintTogether("USDT", addrs, amounts)
	e.run(func() bool { return len(e.hooks.all()) == 5 })
	e.checkBatchedCredit(5, bankroll0, 100)
	batches := e.batchTxs()
	if len(batches) != 1 || batches[0].State != domain.ChainTxMined || batches[0].From != e.gasTank.Hex() {
		t.Fatalf("batches %+v", batches)
	}
	for _, a := range addrs {
		if b := e.tokenBalance(a); b.Sign() != 0 {
			t.Fatalf("%s still holds %v", a.Hex(), b)
		}
		if eth := e.balance(a); eth.Sign() != 0 {
			t.Fatalf("%s holds %v wei: a batch leaves no dust", a.Hex(), eth)
		}
		code, err := e.client.CodeAt(e.ctx, a, nil)
		if err != nil || !batchsweep.Delegated(code, e.network.SweeperAddress) {
			t.Fatalf("%s is not delegated to the Sweeper: %x %v", a.Hex(), code, err)
		}
	}
	// The DEPOSIT names the batch transaction as the deposit's sweep.
	for _, d := range e.all() {
		if d.SweepTxHash != batches[0].MinedHash {
			t.Fatalf("deposit %d sweep tx %q, want %s", d.ID, d.SweepTxHash, batches[0].MinedHash)
		}
	}
	// A second deposit to a delegated address goes in a batch without an authorization.
	e.mint("USDT", addrs[0], 7_000_000)
	e.run(func() bool { return len(e.hooks.all()) == 6 })
	e.checkBatchedCredit(6, bankroll0, 100)
	batches = e.batchTxs()
	if len(batches) != 2 || authorizations(t, batches[1]) != 0 {
		t.Fatalf("second batch %+v", batches)
	}
}

// ETH sent (with enough gas) to a token-deposit address on a batched chain is a native
// deposit: credited and swept by the next batch, with no top-up and no dust.
func TestETHToATokenAddressIsSweptInABatch(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	a := e.tokenAddress("eve")
	u := e.newUser()
	tx := e.send(u, 0, a, milliETH(20), nil, 2) // 100,000 gas: a wallet that estimates
	e.mine(tx)
	bankroll0 := e.balance(e.bankroll)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.all()[0]
	if d.Status != domain.DepositCredited || d.Amount.Cmp(milliETH(20)) != 0 || d.ContractAddress != "" {
		t.Fatalf("deposit %+v", d)
	}
	if got := new(big.Int).Sub(e.balance(e.bankroll), bankroll0); got.Cmp(milliETH(20)) != 0 {
		t.Fatalf("the bankroll received %v wei, want %v", got, milliETH(20))
	}
	if b := e.balance(a); b.Sign() != 0 {
		t.Fatalf("the token address keeps %v wei", b)
	}
}

// A delegation someone else cleared (the seed used in another wallet) is authorized again by
// the next batch; one replaced while a batch is on its way makes that batch skip the address,
// and the next batch re-authorizes and sweeps it. Each deposit is credited once, and nothing
// reaches anyone but the bankroll.
func TestBatchSurvivesAClearedOrReplacedDelegation(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	bankroll0 := e.tokenBalance(e.bankroll)
	a := e.tokenAddress("mallory")
	key, err := deposit.KeyRing{Keys: e.keys, Pool: e.pool}.Key(e.ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	pay := func(amount int64) {
		e.mint("USDT", a, amount)
	}
	// delegate sends, from the outside account u (funded beforehand: funding mines a block),
	// a SetCodeTx that delegates a to target.
	delegate := func(u user, target common.Address, tipGwei int64) *types.Transaction {
		nonce, err := e.client.Nonce(e.ctx, a, false)
		if err != nil {
			t.Fatal(err)
		}
		auth, err := types.SignSetCode(key, types.SetCodeAuthorization{ChainID: *uint256.NewInt(uint64(e.dev.ChainID())),
			Address: target, Nonce: nonce})
		if err != nil {
			t.Fatal(err)
		}
		tip := uint256.NewInt(uint64(tipGwei) * 1e9)
		tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.SetCodeTx{
			ChainID: uint256.NewInt(uint64(e.dev.ChainID())), Nonce: 0, GasTipCap: tip,
			GasFeeCap: new(uint256.Int).Add(tip, uint256.NewInt(100e9)), Gas: 100_000, To: u.addr,
			AuthList: []types.SetCodeAuthorization{auth}})
		if err := e.client.Send(e.ctx, tx); err != nil {
			t.Fatal(err)
		}
		return tx
	}

	pay(5_000_000)
	e.run(func() bool { return len(e.hooks.all()) == 1 })

	// Cleared between two batches: the next batch authorizes the address again.
	e.mine(delegate(e.newUser(), common.Address{}, 2))
	if code, _ := e.client.CodeAt(e.ctx, a, nil); len(code) != 0 {
		t.Fatalf("delegation not cleared: %x", code)
	}
	pay(6_000_000)
	e.run(func() bool { return len(e.hooks.all()) == 2 })
	if b := e.batchTxs(); len(b) != 2 || authorizations(t, b[1]) != 1 {
		t.Fatalf("%d batches after a cleared delegation", len(b))
	}

	// Replaced while a batch is on its way, by a Sweeper that pays a thief: the batch skips
	// the address (its tokens stay), the next one re-authorizes it.
	thief := common.HexToAddress("0x00000000000000000000000000000000000bad01")
	other, err := e.dev.DeploySweeper(e.ctx, e.gasTank, thief, common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	pay(7_000_000)
	for range 3 + confirmations {
		e.scan()
		e.dev.Commit()
	}
	e.scan()
	replacer := e.newUser()
	// Form the batch (stored and broadcast), then replace the delegation ahead of it.
	e.settleAll()
	if b := e.batchTxs(); len(b) != 3 || b[2].State != domain.ChainTxPending {
		t.Fatalf("third batch not on its way: %+v", b)
	}
	e.mine(delegate(replacer, other, 50))
	e.run(func() bool { return len(e.hooks.all()) == 3 })
	var skips int
	if err := e.pool.QueryRow(e.ctx, `SELECT max(skips) FROM sweeps`).Scan(&skips); err != nil || skips != 1 {
		t.Fatalf("skips %d (%v), want 1", skips, err)
	}
	if b := e.batchTxs(); len(b) != 4 || authorizations(t, b[3]) != 1 {
		t.Fatalf("batches after a replaced delegation: %d", len(b))
	}
	if got := e.tokenBalance(thief); got.Sign() != 0 {
		t.Fatalf("the thief got %v", got)
	}
	e.checkBatchedCredit(3, bankroll0, 0)
	e.checkListedSkip(a)
}

// checkListedSkip checks what the ops listing shows of TestBatchSurvivesAClearedOrReplacedDelegation's
// four batches of one address, newest first: the fourth re-authorized and swept the sweep the
// third skipped (the listing finds it by address, as it left the third), the second
// re-authorized the cleared delegation, the first authorized it.
func (e *env) checkListedSkip(a common.Address) {
	e.t.Helper()
	list := e.listBatches(0, false, 100)
	if len(list) != 4 {
		e.t.Fatalf("%d batches listed, want 4", len(list))
	}
	type want struct {
		outcome    deposit.BatchOutcome
		authorized bool
		amount     int64
	}
	for i, w := range []want{{deposit.BatchSwept, true, 7_000_000}, {deposit.BatchSkippedEntry, false, 7_000_000},
		{deposit.BatchSwept, true, 6_000_000}, {deposit.BatchSwept, true, 5_000_000}} {
		b := list[i]
		if b.Status != domain.BatchDone || len(b.Entries) != 1 {
			e.t.Fatalf("batch %d: %+v", b.ID, b)
		}
		en := b.Entries[0]
		if common.HexToAddress(en.Address) != a || en.Outcome != w.outcome || en.Authorized != w.authorized ||
			en.Assets[0].Amount.Int64() != w.amount || en.SweepStatus != domain.SweepDone || len(en.DepositIDs) != 1 {
			e.t.Fatalf("batch %d entry %+v, want %+v", b.ID, en, w)
		}
	}
	skipped, retried := list[1].Entries[0], list[0].Entries[0]
	if skipped.SweepID != retried.SweepID || skipped.Skips != 1 || skipped.CurrentBatchID != list[0].ID || list[1].Tx.State != domain.ChainTxMined {
		e.t.Fatalf("skipped entry %+v (batch %+v), retried %+v in batch %d", skipped, list[1].Tx, retried, list[0].ID)
	}
	if list[2].Entries[0].SweepID == skipped.SweepID || list[2].Entries[0].Skips != 0 {
		e.t.Fatalf("the second batch's sweep %+v", list[2].Entries[0])
	}
}

// crashOnce runs step, then mines a block, up to blocks times, with the engine and the service
// panicking at the first step (their named crash points) that crashesAt accepts: the crash of a
// process there. It reports whether the crash came; the crash points are off again after it.
func (e *env) crashOnce(blocks int, crashesAt func(step string) bool, step func()) bool {
	crashed := false
	crash := func(at string) {
		if !crashed && crashesAt(at) {
			crashed = true
			panic("crash at " + at)
		}
	}
	e.engine.Crash = crash
	deposit.SetCrash(e.svc, crash)
	defer func() {
		e.engine.Crash = nil
		deposit.SetCrash(e.svc, nil)
	}()
	for range blocks {
		func() {
			defer func() { _ = recover() }()
			step()
		}()
		if crashed {
			return true
		}
		e.dev.Commit()
	}
	return false
}

// A crash at each step of sending a batch, and between recording its outcome and crediting
// it, then a restart: one batch transaction (one gas-tank nonce), each deposit credited once.
func TestBatchSurvivesACrashAtEachStep(t *testing.T) {
	t.Parallel()
	steps := []struct {
		step string
		nth  int
	}{
		{chaintx.StepNonce, 1},
		{chaintx.StepSigned, 1},
		{deposit.StepBatchStored, 1},
		{chaintx.StepBroadcast, 1},
		{chaintx.StepReceipt, 2}, // broadcast and mined, its receipt not read
		{deposit.StepBatchSettled, 1},
	}
	for _, tc := range steps {
		t.Run(tc.step, func(t *testing.T) {
			t.Parallel()
			e := setupBatched(t, 50)
			bankroll0 := e.tokenBalance(e.bankroll)
			e.mintTogether("USDT", []common.Address{e.tokenAddress("p"), e.tokenAddress("q"), e.tokenAddress("r")},
				[]int64{3_000_000, 3_000_000, 3_000_000})
			reached := 0
			crashed := e.crashOnce(10+confirmations, func(step string) bool {
				if step == tc.step {
					reached++
				}
				return step == tc.step && reached == tc.nth
			}, func() {
				e.scan()
				e.settleAll()
			})
			if !crashed {
				t.Fatalf("never crashed (reached %d times)", reached)
			}
			// The restart.
			e.run(func() bool { return len(e.hooks.all()) == 3 })
			e.checkBatchedCredit(3, bankroll0, 50)
			// One batch normally; more only if the deposits were confirmed in different scan
			// passes (a loaded machine's log index can lag). Either way no address is in two
			// batches, each batch was signed once, and the gas tank used one nonce per batch.
			batches := e.batchTxs()
			seen := map[common.Address]int64{}
			for _, b := range batches {
				accounts, err := batchsweep.Accounts(b.Data)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range accounts {
					if other, ok := seen[a.Address]; ok {
						t.Fatalf("%s is in batch transactions %d and %d", a.Address.Hex(), other, b.ID)
					}
					seen[a.Address] = b.ID
				}
				if len(b.Attempts) != 1 || b.State != domain.ChainTxMined {
					t.Fatalf("batch transaction %d: %s with %d attempts", b.ID, b.State, len(b.Attempts))
				}
			}
			if len(seen) != 3 {
				t.Fatalf("%d addresses in %d batch transactions, want 3", len(seen), len(batches))
			}
			if len(batches) != 1 {
				t.Logf("%d batch transactions (the deposits were confirmed in different passes)", len(batches))
			}
			nonce, err := e.client.Nonce(e.ctx, e.gasTank, false)
			if err != nil || nonce != uint64(len(batches)) {
				t.Fatalf("gas tank nonce %d (%v), want %d", nonce, err, len(batches))
			}
		})
	}
}

// Native deposits never go to a delegated address: on a batched chain the address handed out
// for the native currency takes a 21,000-gas transfer and is swept by a top-up-free native
// sweep as before.
func TestBatchedChainKeepsPlainNativeAddresses(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	sess := e.openSession("nat")
	info, tokenInfo := e.addressFor(sess, "ETH"), e.addressFor(sess, "USDT")
	if info.Address == tokenInfo.Address {
		t.Fatal("native and token deposits share an address on a batched chain")
	}
	u := e.newUser()
	tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(e.dev.ChainID()), Nonce: 0, GasTipCap: big.NewInt(2e9), GasFeeCap: big.NewInt(200e9),
		Gas: 21_000, To: &info.Address, Value: milliETH(30)})
	if err := e.client.Send(e.ctx, tx); err != nil {
		t.Fatal(err)
	}
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	if d := e.all()[0]; d.Status != domain.DepositCredited || d.Address != info.Address.Hex() {
		t.Fatalf("native deposit %+v", d)
	}
	if n := e.count(`SELECT count(*) FROM sweeps WHERE batched`); n != 0 {
		t.Fatalf("%d batched sweeps of a native address", n)
	}
}

// A reorg deeper than the depth after a batched token deposit was credited: the deposit is
// REORGED, its transfer and its batch go back to the pool and are mined again; it counts
// again once, after the batch that swept it is mined again and shows its address swept.
func TestReorgedBatchedDepositCountsOnceWhenItsBatchIsMinedAgain(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	addr := e.tokenAddress("dora")
	id, parent := e.creditedUSDC(addr)
	usdc, _ := e.dev.Token("USDC")
	if d := e.deposit(id); d.Status != domain.DepositCredited || e.available("USDC").Int64() != 40_000_000 {
		t.Fatalf("before the reorg: %s, %v", d.Status, e.available("USDC"))
	}
	batches := e.batchTxs()
	if len(batches) != 1 {
		t.Fatalf("%d batches", len(batches))
	}

	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Commit()
	e.scan() // rolls back
	if got := e.deposit(id); got.Status != domain.DepositReorged || e.available("USDC").Sign() != 0 {
		t.Fatalf("after the rollback: %s, %v USDC", got.Status, e.available("USDC"))
	}
	e.reconciled() // the credit the chain no longer backs is taken back
	e.countsAgainOnce(id, "USDC", 40_000_000)
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d DEPOSIT events, want the one", n)
	}
	// The same batch transaction was mined again (its stored bytes, the same nonce): one
	// batch, the bankroll holds the deposit once, the address nothing.
	if b := e.batchTxs(); len(b) != 1 || b[0].State != domain.ChainTxMined {
		t.Fatalf("batches after the reorg: %+v", b)
	}
	if got := testfactory.TokenBalance(e.ctx, t, e.client, usdc.Address, e.bankroll); got.Int64() != 40_000_000 {
		t.Fatalf("bankroll holds %v USDC", got)
	}
	if got := testfactory.TokenBalance(e.ctx, t, e.client, usdc.Address, addr); got.Sign() != 0 {
		t.Fatalf("the address keeps %v USDC", got)
	}
	e.reconciled()
}

// A sweeperAddress whose Sweeper pays someone other than the chain's bankroll is refused before
// anything is delegated to it: no batch is sent, the tokens stay at their address, and the
// deposit waits (SWEEPING, not credited).
func TestBatchRefusesASweeperOfAnotherBankroll(t *testing.T) {
	t.Parallel()
	thief := common.HexToAddress("0x00000000000000000000000000000000000bad02")
	e := setupWith(t, options{batched: true, sweeperPays: thief})
	a := e.tokenAddress("ivy")
	e.mint("USDT", a, 9_000_000)
	for range confirmations + 3 {
		e.scan()
		rows, _ := e.pool.Query(e.ctx, `SELECT id FROM deposits`)
		ids, _ := pgx.CollectRows(rows, pgx.RowTo[int64])
		for _, id := range ids {
			if _, err := e.svc.Settle(e.ctx, id); err != nil && !strings.Contains(err.Error(), "Sweeper") {
				t.Fatalf("settle: %v", err)
			}
		}
		e.dev.Commit()
	}
	if d := e.all(); len(d) != 1 || d[0].Status != domain.DepositSweeping {
		t.Fatalf("deposits %+v", d)
	}
	if n := len(e.batchTxs()); n != 0 {
		t.Fatalf("%d batches sent through a Sweeper of another bankroll", n)
	}
	if got := e.tokenBalance(a); got.Int64() != 9_000_000 {
		t.Fatalf("the address holds %v", got)
	}
	if code, _ := e.client.CodeAt(e.ctx, a, nil); len(code) != 0 {
		t.Fatalf("the address was delegated: %x", code)
	}
}

// On a chain with a feeAddress, a batch pays each deposit's fee to it and the rest to the
// bankroll in the same sweep: the DEPOSIT's amount is what reached the bankroll (the spec's
// "net raw amount that reached the bankroll"), its feeAmount what the fee address received.
func TestBatchedFeesGoToTheFeeAddress(t *testing.T) {
	t.Parallel()
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee07")
	e := setupWith(t, options{feeBps: 250, batched: true, network: func(n *chain.Network) { n.FeeAddress = feeAddress }})
	bankroll0 := e.tokenBalance(e.bankroll)
	e.mintTogether("USDT", []common.Address{e.tokenAddress("a"), e.tokenAddress("b"), e.tokenAddress("c")},
		[]int64{4_000_000, 8_000_000, 12_000_000})
	e.run(func() bool { return len(e.hooks.all()) == 3 })
	amounts, fees := new(big.Int), new(big.Int)
	for _, ev := range e.hooks.all() {
		gross, _ := new(big.Int).SetString(ev.GrossAmount, 10)
		amount, _ := new(big.Int).SetString(ev.Amount, 10)
		fee, _ := new(big.Int).SetString(ev.FeeAmount, 10)
		if want := new(big.Int).Div(new(big.Int).Mul(gross, big.NewInt(250)), big.NewInt(10000)); fee.Cmp(want) != 0 ||
			new(big.Int).Add(amount, fee).Cmp(gross) != 0 {
			t.Fatalf("DEPOSIT gross %v amount %v fee %v", gross, amount, fee)
		}
		amounts.Add(amounts, amount)
		fees.Add(fees, fee)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankroll0); got.Cmp(amounts) != 0 {
		t.Fatalf("the bankroll received %v, the DEPOSITs' amounts add up to %v", got, amounts)
	}
	if got := e.tokenBalance(feeAddress); got.Cmp(fees) != 0 || fees.Int64() != 600_000 {
		t.Fatalf("the fee address received %v, the fees add up to %v (want 600000)", got, fees)
	}
	if n := len(e.batchTxs()); n != 1 {
		t.Fatalf("%d batches, want 1", n)
	}
}

// Two workers' planners read the same waiting sweeps at once and both plan a batch: only the
// first is stored and sent; the second finds its sweeps taken and sends nothing. (It used to
// be signed and sent as well: the second batch swept the same exact amounts from the same
// addresses again, out of the next deposits, which then never had enough to be swept. Seen in
// the chaos suite with two workers.)
func TestTwoWorkersNeverBatchASweepTwice(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	other := deposit.New(e.deps, e.config) // another worker process on the same database
	bankroll0 := e.tokenBalance(e.bankroll)
	addrs := []common.Address{e.tokenAddress("a"), e.tokenAddress("b")}
	e.mintTogether("USDT", addrs, []int64{7_000_000, 7_000_000})
	for range confirmations + 1 {
		e.scan()
		e.dev.Commit()
	}
	e.scan()
	var first int64
	if err := e.pool.QueryRow(e.ctx, `SELECT min(id) FROM deposits`).Scan(&first); err != nil {
		t.Fatal(err)
	}
	// Both planners stop after planning until the other has planned too (or 3 s passed).
	// Meanwhile a third deposit, larger than the planned amount, arrives at the first address:
	// a second batch sweeping the same amount again would take it from that deposit.
	var planned sync.WaitGroup
	planned.Add(2)
	both := make(chan struct{})
	go func() {
		planned.Wait()
		defer close(both)
		h, err := e.dev.Mint(e.ctx, "USDT", addrs[0], big.NewInt(8_000_000))
		if err != nil {
			t.Error(err)
			return
		}
		if rs, err := e.dev.Mine(e.ctx, h); err != nil || rs[0].Status != types.ReceiptStatusSuccessful {
			t.Errorf("the third deposit's mint: %v", err)
		}
	}()
	meet := func(step string) {
		if step == deposit.StepBatchPlanned {
			planned.Done()
			select {
			case <-both:
			case <-time.After(time.Minute):
				t.Error("the other worker's planner never planned")
			}
		}
	}
	deposit.SetCrash(e.svc, meet)
	deposit.SetCrash(other, meet)
	var wg sync.WaitGroup
	for _, s := range []*deposit.Service{e.svc, other} {
		wg.Go(func() {
			if _, err := s.Settle(e.ctx, first); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	deposit.SetCrash(e.svc, nil)
	deposit.SetCrash(other, nil)
	if b := e.batchTxs(); len(b) != 1 {
		t.Errorf("%d batch transactions for the same sweeps, want 1", len(b))
	}
	e.run(func() bool { return len(e.hooks.all()) == 3 })
	e.checkBatchedCredit(3, bankroll0, 0)
	if n := e.count(`SELECT count(*) FROM sweeps WHERE skips > 0`); n != 0 {
		t.Fatalf("%d sweeps skipped", n)
	}
}

// A sweep its batches keep skipping (here its address holds less than its deposit says, as
// after a double sweep) joins the next three batches, then backs off: 5 s after its fourth
// skip, 10 s after its fifth (doubling, at most 10 minutes), instead of costing the gas tank
// a batch every block forever.
func TestSkippedSweepBacksOff(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 0)
	a := e.tokenAddress("short")
	e.mint("USDT", a, 5_000_000)
	for range confirmations + 1 {
		e.scan()
		e.dev.Commit()
	}
	e.scan()
	// The deposit now claims more than the address holds: every sweep of it reverts.
	if _, err := e.pool.Exec(e.ctx, `UPDATE deposits SET gross_amount = 6000000 WHERE address = $1`, a.Hex()); err != nil {
		t.Fatal(err)
	}
	skips := func() (n int, waitS float64) {
		t.Helper()
		err := e.pool.QueryRow(e.ctx, `SELECT COALESCE(max(skips), 0)::int, COALESCE(extract(epoch FROM max(batch_after) - now()), 0)::float8 FROM sweeps`).Scan(&n, &waitS)
		if err != nil {
			t.Fatal(err)
		}
		return n, waitS
	}
	step := func() {
		e.scan()
		e.settleAll()
		e.dev.Commit()
	}
	for i := 0; ; i++ {
		if n, _ := skips(); n >= 4 {
			break
		}
		if i > 40 {
			t.Fatal("the sweep was not skipped four times")
		}
		step()
	}
	n, wait := skips()
	if n != 4 || wait < 3 || wait > 6 {
		t.Fatalf("after its fourth skip: %d skips, next batch in %.1f s; want 4 and ~5 s", n, wait)
	}
	batches := len(e.batchTxs())
	if batches != 4 {
		t.Fatalf("%d batch transactions for four skips", batches)
	}
	// While it waits, no batch takes it.
	if _, err := e.pool.Exec(e.ctx, `UPDATE sweeps SET batch_after = now() + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		step()
	}
	if n, _ := skips(); n != 4 || len(e.batchTxs()) != batches {
		t.Fatalf("while it waits: %d skips, %d batch transactions (want 4, %d)", n, len(e.batchTxs()), batches)
	}
	// Its wait over, the next batch takes it again, and the next wait doubles.
	if _, err := e.pool.Exec(e.ctx, `UPDATE sweeps SET batch_after = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if n, _ := skips(); n == 5 {
			break
		}
		if i > 10 {
			t.Fatal("the sweep was not batched again after its wait")
		}
		step()
	}
	if _, wait := skips(); wait < 8 || wait > 11 {
		t.Fatalf("after its fifth skip the next batch is in %.1f s, want ~10 s", wait)
	}
}
