package deposit_test

import (
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// listBatches is the ops listing, failing the test on an error.
func (e *env) listBatches(chainID int64, open bool, limit int) []deposit.ListedBatch {
	e.t.Helper()
	list, err := e.svc.ListBatches(e.ctx, chainID, open, limit)
	if err != nil {
		e.t.Fatalf("ListBatches(%d, %v, %d): %v", chainID, open, limit, err)
	}
	return list
}

// depositIDsAt lists the ids of the deposits to an address, ascending.
func (e *env) depositIDsAt(a common.Address) []int64 {
	e.t.Helper()
	var ids []int64
	for _, d := range e.all() {
		if common.HexToAddress(d.Address) == a {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// formBatch scans a deposit to a until it is confirmed and forms its batch (stored and
// broadcast), without mining it.
func (e *env) formBatch() {
	e.t.Helper()
	for range 3 + confirmations { // as the replaced-delegation test: confirmed with a margin
		e.scan()
		e.dev.Commit()
	}
	e.scan()
	e.settleAll()
}

// The ops listing of batch sweeps (OpsService.ListSweepBatches): a mined batch shows its
// transaction and, per address, the sweep, the exact amount and its fee, the authorization, the
// outcome and the deposits; a batch on its way shows its entries waiting; the open, chain and size
// filters narrow it, newest first.
func TestListBatchesShowsSweptAndWaitingBatches(t *testing.T) {
	t.Parallel()
	// A 1% fee and a fee address: the batch pays each amount's fee there.
	e := setupWith(t, options{feeBps: 100, batched: true, network: func(n *chain.Network) {
		n.FeeAddress = common.HexToAddress("0x00000000000000000000000000000000000fee07")
	}})
	usdt, _ := e.network.Asset("USDT")
	if got := e.listBatches(0, false, 100); len(got) != 0 {
		t.Fatalf("batches before any: %+v", got)
	}
	a, b := e.tokenAddress("ann"), e.tokenAddress("bob")
	amounts := map[common.Address]int64{a: 12_000_000, b: 34_000_000}
	e.mintTogether("USDT", []common.Address{a, b}, []int64{amounts[a], amounts[b]})
	e.run(func() bool { return len(e.hooks.all()) == 2 })

	txs := e.batchTxs()
	list := e.listBatches(0, false, 100)
	if len(list) != 1 || len(txs) != 1 {
		t.Fatalf("%d batches listed, %d batch transactions; want 1", len(list), len(txs))
	}
	first := list[0]
	if first.Status != domain.BatchDone || first.DoneAt == nil || first.ChainID != e.network.ChainID || first.Tx.ID != txs[0].ID ||
		first.Tx.State != domain.ChainTxMined || first.Tx.MinedHash != txs[0].MinedHash || first.Tx.MinedBlock == 0 ||
		first.Authorizations != 2 || len(first.Entries) != 2 {
		t.Fatalf("mined batch %+v", first)
	}
	for _, en := range first.Entries {
		addr := common.HexToAddress(en.Address)
		want, ok := amounts[addr]
		if !ok || en.SweepID == 0 || !en.Authorized || en.Outcome != deposit.BatchSwept || en.Skips != 0 ||
			en.SweepStatus != domain.SweepDone || en.CurrentBatchID != first.ID || !slices.Equal(en.DepositIDs, e.depositIDsAt(addr)) {
			t.Fatalf("entry %+v", en)
		}
		if len(en.Assets) != 1 || en.Assets[0].Currency != "USDT" || en.Assets[0].Token != usdt.Contract || en.Assets[0].Amount.Int64() != want ||
			en.Assets[0].Fee.Int64() != want/100 {
			t.Fatalf("entry %s assets %+v, want %d USDT, fee %d", en.Address, en.Assets, want, want/100)
		}
	}
	// Every deposit names the listed hash as its sweep transaction.
	for _, d := range e.all() {
		if d.SweepTxHash != first.Tx.MinedHash {
			t.Fatalf("deposit %d swept by %s, the listing says %s", d.ID, d.SweepTxHash, first.Tx.MinedHash)
		}
	}

	// A second deposit to ann: its batch is on its way (stored and broadcast, not mined).
	e.mint("USDT", a, 5_000_000)
	e.formBatch()
	open := e.listBatches(0, true, 100)
	if len(open) != 1 || open[0].ID <= first.ID || open[0].Status != domain.BatchSending || open[0].DoneAt != nil ||
		open[0].Tx.State != domain.ChainTxPending || open[0].Tx.MinedHash != "" || open[0].Authorizations != 0 || len(open[0].Entries) != 1 {
		t.Fatalf("open batches %+v", open)
	}
	if en := open[0].Entries[0]; common.HexToAddress(en.Address) != a || en.Authorized || en.Outcome != deposit.BatchWaiting ||
		en.SweepStatus != domain.SweepSending || en.CurrentBatchID != open[0].ID || en.Assets[0].Amount.Int64() != 5_000_000 || en.Assets[0].Fee.Int64() != 50_000 ||
		len(en.DepositIDs) != 1 || en.SweepID == first.Entries[0].SweepID {
		t.Fatalf("waiting entry %+v", en)
	}
	all := e.listBatches(0, false, 100)
	if len(all) != 2 || all[0].ID != open[0].ID || all[1].ID != first.ID {
		t.Fatalf("all batches, newest first: %+v", all)
	}
	if one := e.listBatches(0, false, 1); len(one) != 1 || one[0].ID != open[0].ID {
		t.Fatalf("limit 1: %+v", one)
	}
	if got := e.listBatches(e.network.ChainID, false, 100); len(got) != 2 {
		t.Fatalf("this chain: %d batches, want 2", len(got))
	}
	if got := e.listBatches(e.network.ChainID+1, false, 100); len(got) != 0 {
		t.Fatalf("another chain: %+v", got)
	}

	e.run(func() bool { return len(e.hooks.all()) == 3 })
	if got := e.listBatches(0, true, 100); len(got) != 0 {
		t.Fatalf("open batches once all are mined: %+v", got)
	}
	if got := e.listBatches(0, false, 100); got[0].Status != domain.BatchDone || got[0].Entries[0].Outcome != deposit.BatchSwept {
		t.Fatalf("second batch once mined: %+v", got[0])
	}
}
