package deposit_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
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
