package deposit_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// randomAddress is an address nobody holds a key of.
func randomAddress() common.Address {
	key, _ := crypto.GenerateKey()
	return crypto.PubkeyToAddress(key.PublicKey)
}

// assignElsewhere records a depositor's address the way another process (an API replica)
// does: in the database only, so this process learns of it on its next refresh.
func (e *env) assignElsewhere(userID string) common.Address {
	e.t.Helper()
	a := randomAddress()
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO depositors (operator_id, external_user_id, address_index, address)
		VALUES ($1, $2, nextval('deposit_address_index'), $3)`, e.op.ID, userID, a.Hex()); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// foundDeposits lists the deposits found, as "address currency", sorted.
func (e *env) foundDeposits() []string {
	e.t.Helper()
	out := testfactory.Column[string](e.ctx, e.t, e.pool, `SELECT address || ' ' || currency FROM deposits`)
	slices.Sort(out)
	return out
}

// TestWatchedSetIsExact pays watched addresses (assigned here, assigned by another process,
// assigned after the set was loaded) and addresses nobody watches, with the real filter and
// with one so small that every address passes it: only the watched ones are deposits.
func TestWatchedSetIsExact(t *testing.T) {
	t.Parallel()
	for _, tiny := range []bool{false, true} {
		t.Run(fmt.Sprintf("tiny=%v", tiny), func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0)
			if tiny {
				deposit.TinyWatchFilter(e.svc)
			}
			payer := e.newUser()
			nonce := uint64(0)
			pay := func(to common.Address, currency string) *types.Transaction {
				defer func() { nonce++ }()
				if currency == "USDT" {
					return e.send(payer, nonce, e.usdt.Address, nil, erc20Transfer(to, 5_000_000), 2)
				}
				return e.send(payer, nonce, to, milli(100), nil, 2)
			}
			var want []string
			expect := func(to common.Address, currency string) { want = append(want, to.Hex()+" "+currency) }

			here := e.address("here")
			elsewhere := e.assignElsewhere("elsewhere")
			outsiders := []common.Address{randomAddress(), randomAddress(), randomAddress()}
			e.scan() // loads the set (the tiny filter: rebuilds it)
			for _, o := range outsiders {
				if maybe := deposit.WatchMaybe(e.svc, o); maybe != tiny {
					t.Fatalf("filter answers %v for an outsider; the test needs %v", maybe, tiny)
				}
			}
			var txs []*types.Transaction
			for _, p := range []struct {
				to       common.Address
				currency string
				watched  bool
			}{
				{here, "ETH", true}, {here, "USDT", true}, {elsewhere, "ETH", true}, {elsewhere, "USDT", true},
				{outsiders[0], "ETH", false}, {outsiders[1], "USDT", false}, {outsiders[2], "ETH", false},
			} {
				txs = append(txs, pay(p.to, p.currency))
				if p.watched {
					expect(p.to, p.currency)
				}
			}
			e.mine(txs...)
			e.scan()
			slices.Sort(want)
			if got := e.foundDeposits(); !slices.Equal(got, want) {
				t.Fatalf("deposits found:\n%v\nwant:\n%v", got, want)
			}

			// Assigned after the set was loaded: by this process, and by another one.
			late := e.address("late")
			lateElsewhere := e.assignElsewhere("late-elsewhere")
			e.mine(pay(late, "USDT"), pay(lateElsewhere, "ETH"), pay(outsiders[0], "USDT"))
			e.scan()
			expect(late, "USDT")
			expect(lateElsewhere, "ETH")
			slices.Sort(want)
			if got := e.foundDeposits(); !slices.Equal(got, want) {
				t.Fatalf("deposits found after late assignments:\n%v\nwant:\n%v", got, want)
			}
			e.scan() // the tiny filter went over capacity: the refresh rebuilt it larger
			if count, capacity := deposit.WatchStats(e.svc); count != 4 || capacity < count {
				t.Fatalf("filter holds %d addresses, sized for %d; want 4 within capacity", count, capacity)
			}
		})
	}
}

// TestWatchedSetSeesOutOfOrderCommits: two assignments take indexes i and i+1, and i+1 commits
// (and is read by a scan) first. The scan after i commits watches i too.
func TestWatchedSetSeesOutOfOrderCommits(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	var first, second int64
	if err := e.pool.QueryRow(e.ctx, `SELECT nextval('deposit_address_index'), nextval('deposit_address_index')`).Scan(&first, &second); err != nil {
		t.Fatal(err)
	}
	assign := func(userID string, index int64) common.Address {
		a := randomAddress()
		if _, err := e.pool.Exec(e.ctx, `INSERT INTO depositors (operator_id, external_user_id, address_index, address) VALUES ($1, $2, $3, $4)`,
			e.op.ID, userID, index, a.Hex()); err != nil {
			t.Fatal(err)
		}
		return a
	}
	early := assign("committed-first", second)
	e.scan() // reads index `second`, skipping `first`
	late := assign("committed-second", first)
	payer := e.newUser()
	e.mine(e.send(payer, 0, late, milli(100), nil, 2), e.send(payer, 1, early, milli(100), nil, 2))
	e.scan()
	want := []string{early.Hex() + " ETH", late.Hex() + " ETH"}
	slices.Sort(want)
	if got := e.foundDeposits(); !slices.Equal(got, want) {
		t.Fatalf("deposits found:\n%v\nwant:\n%v", got, want)
	}
}
