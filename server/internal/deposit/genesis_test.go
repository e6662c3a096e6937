package deposit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestScanRefusesAnotherGenesis: a node whose genesis is not the one the chain was scanned on
// (another network behind the chain id, or a node answering block 0 wrongly) is refused: the
// scan stops with ErrGenesisChanged and changes nothing. Before, it orphaned every CONFIRMING
// deposit, forgot the scanned blocks and started again from block 1 (on a real chain, never
// reaching the head again), and did it again when the right node answered.
func TestScanRefusesAnotherGenesis(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("genesis-user")
	e.send(e.newUser(), 0, addr, testfactory.Ether(1), nil, 2)
	e.dev.Commit()
	e.scan()
	if got := e.depositsWhere("CONFIRMING"); len(got) != 1 {
		t.Fatalf("deposits CONFIRMING: %d, want the one just mined", len(got))
	}
	// The chain was scanned on another genesis: the node now serves another network.
	const seen = "0x00000000000000000000000000000000000000000000000000000000000000aa"
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET genesis_hash = $1`, seen); err != nil {
		t.Fatal(err)
	}
	state := func() (next, blocks int) {
		next = testdb.Count(e.ctx, t, e.pool, `SELECT next_block::int FROM chain_cursors`)
		return next, testdb.Count(e.ctx, t, e.pool, `SELECT count(*) FROM chain_blocks`)
	}
	next0, blocks0 := state()
	for range 2 {
		err := e.svc.Scan(e.ctx, e.dev.ChainID())
		if !errors.Is(err, deposit.ErrGenesisChanged) || !strings.Contains(err.Error(), seen) {
			t.Fatalf("scan on another genesis: %v, want ErrGenesisChanged naming %s", err, seen)
		}
	}
	if next, blocks := state(); next != next0 || blocks != blocks0 {
		t.Fatalf("cursor %d → %d, scanned blocks %d → %d: a refused scan changed them", next0, next, blocks0, blocks)
	}
	if got := e.depositsWhere("CONFIRMING"); len(got) != 1 {
		t.Fatalf("deposits CONFIRMING: %d, want the one still waiting (none orphaned)", len(got))
	}
}
