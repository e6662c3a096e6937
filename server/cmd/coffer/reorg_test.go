package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestDepositReorgCommands: `coffer deposit reorged` lists a reorged deposit and `coffer
// deposit resolve` settles it once, audited with the CLI actor; bad input changes nothing.
func TestDepositReorgCommands(t *testing.T) {
	ctx := context.Background()
	url, _ := cliDatabase(t)
	t.Setenv("USER", "eve")
	opID := createOperator(t)
	// A credited deposit whose block left the chain, as a rollback leaves it.
	pool := testdb.Open(t, url, 2)
	var depositID, reorgID int64
	hash := "0x" + strings.Repeat("ab", 32)
	if err := pool.QueryRow(ctx, `INSERT INTO deposits (operator_id, external_user_id, chain_id, tx_hash, log_index, block_number,
		block_hash, address, address_index, currency, decimals, gross_amount, fee_amount, amount, status, idempotency_key)
		VALUES ($1, 'u1', 1337, $2, 0, 10, $2, '0x00000000000000000000000000000000000000a1', 0, 'USDT', 6, 5000000, 0, 5000000,
		'REORGED', 'k1') RETURNING id`, opID, hash).Scan(&depositID); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO deposit_reorgs (deposit_id, chain_id, fork_block, block_number, block_hash, prior_status,
		reversed) VALUES ($1, 1337, 9, 10, $2, 'CREDITED', 5000000) RETURNING id`, depositID, hash).Scan(&reorgID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO deposit_reorg_actions (reorg_id, deposit_id, action, actor) VALUES ($1, $2, 'DETECTED', 'system')`, reorgID, depositID); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(depositID, 10)

	out, errOut, code := coffer(t, "deposit", "reorged", "--json")
	listed := &cofferv1.ListReorgedDepositsResponse{}
	if err := protojson.Unmarshal([]byte(out), listed); code != 0 || err != nil || len(listed.Items) != 1 ||
		listed.Items[0].GetDeposit().GetDepositId() != depositID || listed.Items[0].GetDeposit().GetStatus() != cofferv1.DepositStatus_DEPOSIT_STATUS_REORGED ||
		listed.Items[0].ReversedAmount != "5000000" || listed.Items[0].Resolution != cofferv1.ReorgResolution_REORG_RESOLUTION_UNSPECIFIED {
		t.Fatalf("reorged: %d %s %s", code, out, errOut)
	}
	if out, _, _ = coffer(t, "deposit", "reorged"); !strings.Contains(out, "unresolved") || !strings.Contains(out, hash) {
		t.Fatalf("reorged (table): %s", out)
	}

	// Bad input: refused, nothing changes.
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--id", id, "--resolution", "reinstate"}, 2, "--note"},
		{[]string{"--id", "987654", "--resolution", "reinstate", "--note", "x"}, 1, "not found"},
		{[]string{"--id", id, "--resolution", "maybe", "--note", "x"}, 1, "resolution"},
	} {
		if _, errOut, code := coffer(t, append([]string{"deposit", "resolve"}, c.args...)...); code != c.code || !strings.Contains(errOut, c.says) {
			t.Errorf("resolve %v: %d %s", c.args, code, errOut)
		}
	}
	var actions int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM deposit_reorg_actions`).Scan(&actions); err != nil {
		t.Fatal(err)
	}
	if actions != 1 {
		t.Fatalf("%d audit rows after refused resolutions", actions)
	}

	out, errOut, code = coffer(t, "deposit", "resolve", "--id", id, "--resolution", "reinstate", "--note", "the user paid again", "--json")
	resolved := &cofferv1.ResolveReorgedDepositResponse{}
	if err := protojson.Unmarshal([]byte(out), resolved); code != 0 || err != nil || resolved.Item.GetResolution() != cofferv1.ReorgResolution_REORG_RESOLUTION_REINSTATE ||
		resolved.Item.GetResolvedBy() != "service-team:cli:eve" || resolved.Item.GetDeposit().GetStatus() != cofferv1.DepositStatus_DEPOSIT_STATUS_CREDITED ||
		len(resolved.Item.GetHistory()) != 2 || resolved.Item.GetHistory()[1].GetNote() != "the user paid again" {
		t.Fatalf("resolve: %d %s %s", code, out, errOut)
	}
	f, err := store.New(pool).GetFunds(ctx, opID, 1337, "USDT")
	if err != nil || f.Available.Int64() != 5_000_000 {
		t.Fatalf("funds after reinstating: %v %v", f.Available, err)
	}
	if _, errOut, code = coffer(t, "deposit", "resolve", "--id", id, "--resolution", "write-off", "--note", "x"); code != 1 ||
		!strings.Contains(errOut, "already resolved") {
		t.Fatalf("resolve twice: %d %s", code, errOut)
	}
	if out, _, _ = coffer(t, "deposit", "reorged"); !strings.Contains(out, "no reorged deposits") {
		t.Fatalf("reorged after resolving: %s", out)
	}
	if out, _, _ = coffer(t, "deposit", "reorged", "--all"); !strings.Contains(out, "REINSTATE by service-team:cli:eve") {
		t.Fatalf("reorged --all: %s", out)
	}
}
