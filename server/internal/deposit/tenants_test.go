package deposit_test

import (
	"math/big"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Sweeps land in their own operator's funds: operator A, its sub-operator, and operator B
// (different deposit fees), each with a user whose address was handed out at the same moment
// as the others' (same externalUserId), and each with a treasury; every address is paid USDT
// in the same block. Each deposit is credited once to its own operator at its own fee, each
// treasury payment once to its owner, no operator is credited another's money, and the
// bankroll holds what the ledger owes.
func TestSameBlockDepositsOfSeveralOperatorsCreditTheirOwn(t *testing.T) {
	t.Parallel()
	e := setup(t, 100) // A: 1%
	box, _ := secret.NewBox(secret.Random(32))
	ops := operator.New(e.pool, box)
	create := func(name string, fee int32, parent *string) domain.Operator {
		hook := "https://" + name + ".example/hook"
		op, _, err := ops.Create(e.ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook, DepositFeeBps: &fee, ParentID: parent})
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	a := e.op
	sub := create("sub", 250, &a.ID) // 2.5%
	b := create("b", 0, nil)
	tenants := []domain.Operator{a, sub, b}
	fees := map[string]int64{a.ID: 100, sub.ID: 250, b.ID: 0}

	// Every operator's user "same-user" asks for its address at once, and every treasury too.
	users := make([]common.Address, len(tenants))
	treasuries := make([]common.Address, len(tenants))
	var wg sync.WaitGroup
	for i, op := range tenants {
		wg.Go(func() {
			var err error
			if users[i], err = e.svc.AddressFor(e.ctx, op.ID, "same-user"); err != nil {
				t.Error(err)
			}
			if treasuries[i], err = e.svc.Treasury(e.ctx, op.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[common.Address]bool{}
	for _, addr := range append(append([]common.Address{}, users...), treasuries...) {
		if seen[addr] || addr == (common.Address{}) {
			t.Fatalf("address %s handed out twice (users %v, treasuries %v)", addr.Hex(), users, treasuries)
		}
		seen[addr] = true
	}

	// One block: 10, 20 and 40 USDT to the users, 1, 2 and 4 USDT to the treasuries.
	bankroll0 := e.tokenBalance(e.bankroll)
	var to []common.Address
	var amounts []int64
	for i := range tenants {
		to = append(to, users[i], treasuries[i])
		amounts = append(amounts, int64(10_000_000)<<i, int64(1_000_000)<<i)
	}
	e.mintTogether("USDT", to, amounts)
	e.run(func() bool { return len(e.depositsWhere("CREDITED")) == 2*len(tenants) })

	credited := new(big.Int)
	for i, op := range tenants {
		gross, pay := int64(10_000_000)<<i, int64(1_000_000)<<i
		net := gross - gross*fees[op.ID]/10000
		for _, d := range e.all() {
			switch d.Address {
			case users[i].Hex():
				if d.OperatorID != op.ID || d.Treasury || d.Amount.Int64() != net || d.GrossAmount.Int64() != gross {
					t.Errorf("operator %d's deposit: operator %s treasury %v amount %v gross %v, want %s net %d", i, d.OperatorID, d.Treasury,
						d.Amount, d.GrossAmount, op.ID, net)
				}
			case treasuries[i].Hex():
				if d.OperatorID != op.ID || !d.Treasury || d.Amount.Int64() != pay {
					t.Errorf("operator %d's treasury payment: operator %s treasury %v amount %v, want %s %d", i, d.OperatorID, d.Treasury,
						d.Amount, op.ID, pay)
				}
			}
		}
		f, err := store.New(e.pool).GetFunds(e.ctx, op.ID, e.dev.ChainID(), "USDT")
		if err != nil {
			t.Fatal(err)
		}
		if f.Available.Int64() != net+pay || f.Reserved.Sign() != 0 {
			t.Errorf("operator %d's USDT funds: %v available %v reserved, want %d", i, f.Available, f.Reserved, net+pay)
		}
		credited.Add(credited, f.Available)
		if n := e.count(`SELECT count(*) FROM fund_entries WHERE operator_id = $1`, op.ID); n != 2 {
			t.Errorf("operator %d has %d fund entries, want a DEPOSIT and a TREASURY", i, n)
		}
	}
	// The sub-operator's money is its own, not its parent's (the per-operator checks above),
	// and the bankroll received exactly what the ledger credits.
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankroll0); got.Cmp(credited) != 0 {
		t.Errorf("the bankroll received %v USDT units, the operators were credited %v", got, credited)
	}
	if n := len(e.hooks.all()); n != len(tenants) {
		t.Errorf("%d DEPOSIT events, want one per user deposit (none for treasury payments)", n)
	}
	e.reconciled()
}

// A chain that sweeps tokens in EIP-7702 batches (the dev chain's default) keeps the treasury a
// plain address swept with top-ups: USDT and ETH paid to it are credited once to its operator,
// with no deposit fee and no DEPOSIT, the treasury is never delegated, and the books reconcile.
func TestTreasuryOnABatchedChain(t *testing.T) {
	t.Parallel()
	e := setupBatched(t, 150)
	treasury := e.treasury()
	usdt0 := e.tokenBalance(e.bankroll)
	u := e.newUser()
	e.mine(e.send(u, 0, e.usdt.Address, nil, erc20Transfer(treasury, 30_000_000), 2), e.send(u, 1, treasury, milliETH(100), nil, 2))
	e.run(func() bool { return len(e.depositsWhere("CREDITED")) == 2 })
	if f := e.funds("USDT"); f.Available.Int64() != 30_000_000 {
		t.Fatalf("USDT funds %v, want the 30 USDT paid (no deposit fee on a treasury payment)", f.Available)
	}
	if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), usdt0); got.Int64() != 30_000_000 {
		t.Fatalf("the bankroll received %v USDT units", got)
	}
	if f := e.funds("ETH"); f.Available.Sign() <= 0 || f.Available.Cmp(milliETH(100)) >= 0 {
		t.Fatalf("ETH funds %v: the payment less its sweep's gas", f.Available)
	}
	if n := len(e.hooks.all()); n != 0 {
		t.Fatalf("%d DEPOSIT events for treasury payments", n)
	}
	if code, err := e.client.CodeAt(e.ctx, treasury, nil); err != nil || len(code) != 0 {
		t.Fatalf("the treasury has code %x (%v): it must stay a plain address", code, err)
	}
	if n := e.count(`SELECT count(*) FROM fund_entries WHERE kind = 'TREASURY'`); n != 2 {
		t.Fatalf("%d TREASURY entries, want 2", n)
	}
	e.reconciled()
}
