package store_test

import (
	"context"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestWatchedAddresses: the scanner's watched set merges depositors', treasuries' and
// token-deposit addresses in index order, skips depositors without one, and finds each by
// address and by index.
func TestWatchedAddresses(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	for _, u := range []string{"u1", "u2", "u3"} {
		if _, _, err := q.LockDepositor(ctx, op.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.AssignAddress(ctx, op.ID, "u1", 3, "0xA3"); err != nil {
		t.Fatal(err)
	}
	if err := q.AssignAddress(ctx, op.ID, "u2", 1, "0xA1"); err != nil {
		t.Fatal(err)
	}
	if err := q.InsertTreasury(ctx, op.ID, 2, "0xT2"); err != nil {
		t.Fatal(err)
	}
	if err := q.InsertTokenAddress(ctx, op.ID, "u1", 4, "0xB4"); err != nil {
		t.Fatal(err)
	}
	index, addr, err := q.LockDepositor(ctx, op.ID, "u1")
	if err != nil || index == nil || *index != 3 || addr != "0xA3" {
		t.Fatalf("lock depositor: %v %q %v", index, addr, err)
	}
	if index, addr, err := q.LockDepositor(ctx, op.ID, "u3"); err != nil || index != nil || addr != "" {
		t.Fatalf("depositor without address: %v %q %v", index, addr, err)
	}

	all, err := q.DepositAddressesAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.DepositAddress{
		{OperatorID: op.ID, ExternalUserID: "u2", Index: 1, Address: "0xA1"},
		{OperatorID: op.ID, Index: 2, Address: "0xT2", Treasury: true},
		{OperatorID: op.ID, ExternalUserID: "u1", Index: 3, Address: "0xA3"},
		{OperatorID: op.ID, ExternalUserID: "u1", Index: 4, Address: "0xB4", Token: true},
	}
	if len(all) != len(want) {
		t.Fatalf("watched %+v", all)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("watched[%d] = %+v, want %+v", i, all[i], want[i])
		}
	}
	if page, err := q.DepositAddressesAfter(ctx, 1, 1); err != nil || len(page) != 1 || page[0] != want[1] {
		t.Fatalf("page after 1: %+v %v", page, err)
	}

	for _, w := range want {
		got, err := q.DepositAddressByAddress(ctx, w.Address)
		if err != nil || got != w {
			t.Fatalf("by address %s: %+v %v", w.Address, got, err)
		}
	}
	if _, err := q.DepositAddressByAddress(ctx, "0xNone"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown address: %v", err)
	}
	if in, err := q.DepositAddressesIn(ctx, []string{"0xB4", "0xA1", "0xNone"}); err != nil || len(in) != 2 ||
		!slices.Contains(in, want[0]) || !slices.Contains(in, want[3]) {
		t.Fatalf("addresses in: %+v %v", in, err)
	}
	if at, err := q.DepositAddressesAt(ctx, []int64{4, 2, 9}); err != nil || len(at) != 2 ||
		!slices.Contains(at, want[1]) || !slices.Contains(at, want[3]) {
		t.Fatalf("addresses at: %+v %v", at, err)
	}
	if highest, err := q.MaxAddressIndex(ctx); err != nil || highest != 4 {
		t.Fatalf("max index %d %v, want the token-deposit address's 4", highest, err)
	}
	if got, err := q.Treasury(ctx, op.ID); err != nil || got != want[1] {
		t.Fatalf("treasury: %+v %v", got, err)
	}
	if got, err := q.DepositAddressOf(ctx, op.ID, "u3"); err != nil || got != "" {
		t.Fatalf("address of u3: %q %v", got, err)
	}
}

// TestTokenAddress: LockTokenAddress registers and locks the depositor and reads its
// token-deposit address (none at first); the address is one per user, its index and address
// unique, owned by a depositor, and streamed with the watched addresses.
func TestTokenAddress(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	const plain, token = "0x00000000000000000000000000000000000000A1", "0x00000000000000000000000000000000000000B2"
	if err := q.InsertTokenAddress(ctx, op.ID, "nobody", 9, "0x00000000000000000000000000000000000000C9"); err == nil {
		t.Fatal("token-deposit address of an unregistered depositor accepted")
	}
	if index, addr, err := q.LockTokenAddress(ctx, op.ID, "u1"); err != nil || index != nil || addr != "" {
		t.Fatalf("before assignment: %v %q %v", index, addr, err)
	}
	if err := q.AssignAddress(ctx, op.ID, "u1", 1, plain); err != nil {
		t.Fatal(err)
	}
	if err := q.InsertTokenAddress(ctx, op.ID, "u1", 2, token); err != nil {
		t.Fatal(err)
	}
	if index, addr, err := q.LockTokenAddress(ctx, op.ID, "u1"); err != nil || index == nil || *index != 2 || addr != token {
		t.Fatalf("after assignment: %v %q %v", index, addr, err)
	}
	if index, _, err := q.LockDepositor(ctx, op.ID, "u1"); err != nil || index == nil || *index != 1 {
		t.Fatalf("the depositor's own address moved: %v %v", index, err)
	}
	if _, _, err := q.LockDepositor(ctx, op.ID, "u2"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what, user string
		index      int64
		address    string
	}{
		{"a second for the user", "u1", 3, "0x00000000000000000000000000000000000000B3"},
		{"a taken index", "u2", 2, "0x00000000000000000000000000000000000000B4"},
		{"a taken address", "u2", 5, token},
	} {
		if err := q.InsertTokenAddress(ctx, op.ID, tc.user, tc.index, tc.address); err == nil {
			t.Errorf("%s accepted", tc.what)
		}
	}
	streamed := map[int64]string{}
	if err := q.EachWatchedAddress(ctx, func(index int64, addr []byte) error {
		streamed[index] = common.BytesToAddress(addr).Hex()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(streamed) != 2 || streamed[1] != common.HexToAddress(plain).Hex() || streamed[2] != common.HexToAddress(token).Hex() {
		t.Fatalf("streamed %v", streamed)
	}
}

// TestScannedBlocks: PutBlocks stores a batch and forgets blocks below keepFrom; the cursor
// round-trips and ChainHead is 0 before the first scan.
func TestScannedBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := store.New(testdb.New(t))
	const chain = 31337
	if head, err := q.ChainHead(ctx, chain); err != nil || head != 0 {
		t.Fatalf("head before scan: %d %v", head, err)
	}
	if _, err := q.GetCursor(ctx, chain); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cursor before scan: %v", err)
	}
	blocks := []store.BlockRef{{Number: 10, Hash: "h10", ParentHash: "h9"}, {Number: 11, Hash: "h11", ParentHash: "h10"},
		{Number: 12, Hash: "h12", ParentHash: "h11"}}
	if err := q.PutBlocks(ctx, chain, blocks, 0); err != nil {
		t.Fatal(err)
	}
	// A re-mined 12 replaces the stored one; 10 falls out of the window.
	if err := q.PutBlocks(ctx, chain, []store.BlockRef{{Number: 12, Hash: "h12b", ParentHash: "h11"}}, 11); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[uint64]string{10: "", 11: "h11", 12: "h12b", 13: ""} {
		if h, err := q.BlockHash(ctx, chain, n); err != nil || h != want {
			t.Fatalf("block %d: %q %v, want %q", n, h, err, want)
		}
	}
	if err := q.DeleteBlocksFrom(ctx, chain, 12); err != nil {
		t.Fatal(err)
	}
	if h, _ := q.BlockHash(ctx, chain, 12); h != "" {
		t.Fatalf("block 12 after delete: %q", h)
	}
	c := store.Cursor{ChainID: chain, GenesisHash: "g", NextBlock: 13, HeadBlock: 20}
	if err := q.PutCursor(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := q.GetCursor(ctx, chain); err != nil || got != c {
		t.Fatalf("cursor: %+v %v", got, err)
	}
	if head, err := q.ChainHead(ctx, chain); err != nil || head != 20 {
		t.Fatalf("head: %d %v", head, err)
	}
}

// TestDepositsRoundTrip: a deposit reads back with its session's values joined; a repeated
// transfer is no insert and revives an orphan; credit sets the amounts; the list filters
// combine, nil operators and empty statuses meaning no filter (callers pass statuses
// non-nil: a nil list is NULL, which matches nothing).
func TestDepositsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx, q, op := setupOperator(t)
	other := testfactory.Operator(ctx, t, q.DB(), nil)
	sess := testfactory.Session(ctx, t, q.DB(), op.ID, &testfactory.SessionOpts{ExternalUserID: "u1", Amount: "1",
		OperatorReference: "order-7", TTL: time.Hour})
	deposit := func(operatorID, user, sessionID, tx string) domain.Deposit {
		return domain.Deposit{OperatorID: operatorID, ExternalUserID: user, SessionID: sessionID, ChainID: 1, TxHash: tx, LogIndex: -1,
			BlockNumber: 5, BlockHash: "b5", Address: "0xA", AddressIndex: 7, Currency: "ETH", Decimals: 18,
			GrossAmount: big.NewInt(1000), Status: domain.DepositConfirming, IdempotencyKey: tx}
	}
	d, inserted, err := q.UpsertDeposit(ctx, deposit(op.ID, "u1", sess.ID, "0x1"))
	if err != nil || !inserted {
		t.Fatalf("insert: %v %v", inserted, err)
	}
	if d.SessionID != sess.ID || d.SessionRef != sess.SessionRef || d.OperatorReference != "order-7" || d.ContractAddress != "" ||
		d.GrossAmount.Int64() != 1000 || d.AddressIndex != 7 || d.LogIndex != -1 || d.FeeAmount != nil || d.SweepID != 0 {
		t.Fatalf("inserted deposit %+v", d)
	}
	if n, err := q.OrphanChainDeposits(ctx, 1); err != nil || n != 1 {
		t.Fatalf("orphan: %d %v", n, err)
	}
	moved := deposit(op.ID, "u1", sess.ID, "0x1")
	moved.BlockNumber, moved.BlockHash = 6, "b6"
	again, inserted, err := q.UpsertDeposit(ctx, moved)
	if err != nil || inserted || again.ID != d.ID || again.Status != domain.DepositConfirming || again.BlockNumber != 6 {
		t.Fatalf("re-mined: %+v %v %v", again, inserted, err)
	}
	if _, _, err := q.UpsertDeposit(ctx, deposit(other.ID, "u9", "", "0x2")); err != nil {
		t.Fatal(err)
	}
	if ids, err := q.ConfirmDeposits(ctx, 1, 6); err != nil || len(ids) != 2 {
		t.Fatalf("confirm: %v %v", ids, err)
	}
	if ids, err := q.ConfirmDeposits(ctx, 1, 6); err != nil || ids == nil || len(ids) != 0 {
		t.Fatalf("confirm none: %#v %v", ids, err)
	}
	credited, err := q.CreditDeposit(ctx, d.ID, store.Credit{FeeAmount: big.NewInt(10), Amount: big.NewInt(990), FiatCurrency: "EUR",
		Unpriced: true})
	if err != nil || credited.Status != domain.DepositCredited || credited.Amount.Int64() != 990 || credited.FeeAmount.Int64() != 10 ||
		credited.FiatCurrency != "EUR" || !credited.Unpriced || credited.CreditedAt == nil {
		t.Fatalf("credit: %+v %v", credited, err)
	}
	if _, err := q.CreditDeposit(ctx, d.ID, store.Credit{FeeAmount: big.NewInt(0), Amount: big.NewInt(1000)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second credit: %v", err)
	}

	anyStatus := []domain.DepositStatus{}
	for _, c := range []struct {
		name string
		f    domain.DepositFilter
		want int
	}{
		{"every operator", domain.DepositFilter{Statuses: anyStatus, Limit: 10}, 2},
		{"no status filter (nil)", domain.DepositFilter{Limit: 10}, 2},
		{"one operator", domain.DepositFilter{Statuses: anyStatus, OperatorIDs: []string{op.ID}, Limit: 10}, 1},
		{"no operator", domain.DepositFilter{Statuses: anyStatus, OperatorIDs: []string{}, Limit: 10}, 0},
		{"user", domain.DepositFilter{Statuses: anyStatus, ExternalUserID: "u9", Limit: 10}, 1},
		{"status", domain.DepositFilter{Statuses: []domain.DepositStatus{domain.DepositCredited}, Limit: 10}, 1},
		{"before", domain.DepositFilter{Statuses: anyStatus, BeforeID: d.ID + 1, Limit: 10}, 1},
		{"limit", domain.DepositFilter{Statuses: anyStatus, Limit: 1}, 1},
	} {
		got, err := q.ListDeposits(ctx, c.f)
		if err != nil || len(got) != c.want {
			t.Fatalf("%s: %d deposits (%v), want %d", c.name, len(got), err, c.want)
		}
	}
	if got, err := q.SessionDeposits(ctx, sess.ID); err != nil || len(got) != 1 || got[0].ID != d.ID {
		t.Fatalf("session deposits: %+v %v", got, err)
	}
	if _, err := q.GetDeposit(ctx, -1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing deposit: %v", err)
	}
}

// TestConcurrentHandoutsNeverOverlap: two sessions of one user that show the address at the
// same time leave runs of handouts that never overlap (the user's row lock orders them), so
// attribution picks, for any moment, the session that showed the address last before it.
func TestConcurrentHandoutsNeverOverlap(t *testing.T) {
	t.Parallel()
	ctx, pool, q, op := setupOperatorPool(t)
	sessions := make([]string, 2)
	for i := range sessions {
		s, err := q.InsertSession(ctx, domain.Session{ID: uuid.NewString(), OperatorID: op.ID, Kind: "DEPOSIT", SessionRef: "sr_" + strconv.Itoa(i),
			ExternalUserID: "tabs", Lang: "en", FiatCurrency: "USD", Amount: decimal.RequireFromString("10")}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = s.ID
	}
	var g errgroup.Group
	for i := range 40 {
		g.Go(func() error { return store.RecordHandout(ctx, pool, sessions[i%2], 1337, "USDT") })
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT session_id::text, started_at, last_at FROM handout_runs ORDER BY started_at`)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		Session       string
		Started, Last time.Time
	}
	runs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[run])
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(runs); i++ {
		if prev := runs[i-1]; !prev.Last.Before(runs[i].Started) || prev.Session == runs[i].Session {
			t.Fatalf("run %d %+v and run %d %+v: runs overlap, or one session's handouts were split though no other came between", i-1, prev, i, runs[i])
		}
	}
	last := runs[len(runs)-1]
	at := last.Last.Add(-store.HandoutSlack) // inside the last run: its session showed the address last
	if got, err := q.AttributedSession(ctx, op.ID, "tabs", 1337, "USDT", at); err != nil || got.ID != last.Session {
		t.Fatalf("attributed at the end of the last run: %s %v, want %s", got.ID, err, last.Session)
	}
}

// TestHandoutRunsMigration: 0033 turns what address_handouts knew (each session's first and
// latest handout) into runs of one handout each, so a deposit found after the upgrade is
// attributed as before it, or better.
func TestHandoutRunsMigration(t *testing.T) {
	t.Parallel()
	ctx, pool, q, op := setupOperatorPool(t)
	if _, err := pool.Exec(ctx, `DROP TABLE handout_runs`); err != nil { // the schema before 0033
		t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	older, newer := uuid.NewString(), uuid.NewString()
	for i, id := range []string{older, newer} {
		if _, err := q.InsertSession(ctx, domain.Session{ID: id, OperatorID: op.ID, Kind: "DEPOSIT", SessionRef: "sr_h" + strconv.Itoa(i),
			ExternalUserID: "upgraded", Lang: "en", FiatCurrency: "USD", Amount: decimal.NewFromInt(1)}, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// older showed the address at base and again at base+20m; newer once, at base+10m.
	if _, err := pool.Exec(ctx, `UPDATE sessions SET created_at = $1 WHERE operator_id = $2`, base, op.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO address_handouts (session_id, chain_id, currency, first_handed_at, handed_at)
		VALUES ($1, 1337, 'USDT', $3, $4), ($2, 1337, 'USDT', $5, $5)`, older, newer, base, base.Add(20*time.Minute), base.Add(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	sql, err := os.ReadFile(filepath.Join("migrations", "0033_handout_runs.sql"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(sql)); err != nil {
		t.Fatalf("0033 on existing rows: %v", err)
	}
	for _, c := range []struct {
		paid time.Duration
		want string
	}{{5 * time.Minute, older}, {15 * time.Minute, newer}, {25 * time.Minute, older}} {
		got, err := q.AttributedSession(ctx, op.ID, "upgraded", 1337, "USDT", base.Add(c.paid))
		if err != nil || got.ID != c.want {
			t.Errorf("paid at base+%v: session %s %v, want %s", c.paid, got.ID, err, c.want)
		}
	}
}
