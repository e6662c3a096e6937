package main

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/contracts"
)

// TestOpsPauseCommands: pause, list, resume, each audited with the CLI actor and the reason;
// bad input is a usage error (exit 2) or the service's error (exit 1) and changes nothing.
func TestOpsPauseCommands(t *testing.T) {
	cliDatabase(t)
	t.Setenv("USER", "oncall")

	out, errOut, code := coffer(t, "ops", "pause", "--scope", "global", "--reason", "incident 7")
	if code != 0 || !strings.Contains(out, "all payouts are paused (by service-team:cli:oncall: incident 7)") {
		t.Fatalf("pause: %d %q %q", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ops", "pause", "--scope", "global"}, 2, "--reason is required"},
		{[]string{"ops", "pause", "--scope", "chain", "--reason", "x"}, 2, "--chain-id goes with"},
		{[]string{"ops", "pause", "--scope", "moon", "--reason", "x"}, 2, "--scope must be"},
		{[]string{"ops", "pause", "--scope", "global", "--reason", "again"}, 1, "already paused"},
		{[]string{"ops", "pause", "--scope", "operator", "--operator", "00000000-0000-4000-8000-000000000000", "--reason", "x"}, 1, "not found"},
		{[]string{"ops", "frobnicate"}, 2, "unknown subcommand"},
		{[]string{"ops", "tx", "resend", "--id", "5"}, 2, "--id and --reason are required"},
		{[]string{"ops", "tx", "fail", "--id", "987654", "--reason", "x"}, 1, "transaction 987654 not found"},
		{[]string{"ops", "tx", "cancel", "--id", "987654", "--reason", "x"}, 1, "transaction 987654 not found"},
		{[]string{"ops", "threshold", "set", "--chain-id", "999", "--wallet", "0x0000000000000000000000000000000000000001",
			"--currency", "ETH", "--amount", "1", "--reason", "x"}, 1, "chain 999 is not configured"},
		{[]string{"ops", "threshold", "set", "--chain-id", "999"}, 2, "are required"},
	} {
		if _, errOut, code := coffer(t, c.args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want %d %q", c.args, code, errOut, c.code, c.want)
		}
	}
	if out, _, code := coffer(t, "ops", "tx", "list", "--stuck"); code != 0 || !strings.Contains(out, "no transactions") {
		t.Fatalf("tx list --stuck: %d %s", code, out)
	}
	if out, _, code := coffer(t, "ops", "threshold", "list"); code != 0 || !strings.Contains(out, "no thresholds") {
		t.Fatalf("threshold list: %d %s", code, out)
	}
	out, _, code = coffer(t, "ops", "pauses", "--json")
	if code != 0 || strings.Count(out, `"scope":"PAUSE_SCOPE_GLOBAL"`) != 1 || !strings.Contains(out, `"reason":"incident 7"`) {
		t.Fatalf("pauses: %d %s", code, out)
	}
	out, _, code = coffer(t, "ops", "resume", "--scope", "global", "--reason", "fixed")
	if code != 0 || !strings.Contains(out, "lifted by service-team:cli:oncall: fixed") {
		t.Fatalf("resume: %d %s", code, out)
	}
	if out, _, _ = coffer(t, "ops", "pauses"); !strings.Contains(out, "not paused") {
		t.Fatalf("pauses after resume: %s", out)
	}
	if out, _, _ = coffer(t, "ops", "pauses", "--all"); !strings.Contains(out, "incident 7") || !strings.Contains(out, "fixed") {
		t.Fatalf("pauses --all: %s", out)
	}
}

// TestOpsBatches: `coffer ops batches` lists batch sweeps one line per address, as the
// OpsService answers them with --json; filters narrow it and bad flags are usage errors. The
// batch is written as the deposit package stores one (its transaction's call data carries the
// accounts); real batches are listed in deposit/batchlist_test.go.
func TestOpsBatches(t *testing.T) {
	dbURL, _ := cliDatabase(t)
	if out, _, code := coffer(t, "ops", "batches"); code != 0 || !strings.Contains(out, "no batches") {
		t.Fatalf("empty: %d %s", code, out)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	addr := common.HexToAddress("0x00000000000000000000000000000000000a11ce")
	token := common.HexToAddress("0x0000000000000000000000000000000000000010")
	data := contracts.NewSweeper().PackBatch([]common.Address{addr}, [][]common.Address{{token}}, [][]*big.Int{{big.NewInt(25_000_000)}},
		[][]*big.Int{{big.NewInt(250_000)}})
	var batchID, sweepID int64
	if err := conn.QueryRow(ctx, `INSERT INTO sweep_batches (chain_id) VALUES (31337) RETURNING id`).Scan(&batchID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO chain_txs (chain_id, from_address, nonce, to_address, value, data, gas_limit, purpose, ref)
		VALUES (31337, '0x0000000000000000000000000000000000000001', 0, '0x0000000000000000000000000000000000000002', 0, $1, 100000,
		'sweep-batch', 'batch:' || $2::bigint)`, data, batchID); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO sweeps (chain_id, address, batched, batch_id, status) VALUES (31337, $1, true, $2, 'SENDING')
		RETURNING id`, addr.Hex(), batchID).Scan(&sweepID); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := coffer(t, "ops", "batches", "--open")
	if code != 0 {
		t.Fatalf("batches --open: %d %s", code, errOut)
	}
	for _, want := range []string{"BATCH", addr.Hex(), "25000000 " + token.Hex() + " (fee 250000)", "waiting", "SENDING", "pending"} {
		if !strings.Contains(out, want) {
			t.Errorf("batches --open lacks %q:\n%s", want, out)
		}
	}
	out, _, code = coffer(t, "ops", "batches", "--chain-id", "31337", "--json")
	res := &cofferv1.ListSweepBatchesResponse{}
	if err := protojson.Unmarshal([]byte(out), res); code != 0 || err != nil || len(res.Batches) != 1 || len(res.Batches[0].Entries) != 1 {
		t.Fatalf("--json: %d %v %s", code, err, out)
	}
	b, en := res.Batches[0], res.Batches[0].Entries[0]
	if b.Id != batchID || b.Status != "SENDING" || en.SweepId != sweepID || en.Address != addr.Hex() || en.Outcome != "waiting" ||
		len(en.Assets) != 1 || en.Assets[0].Token != token.Hex() || en.Assets[0].Amount != "25000000" || en.Assets[0].Fee != "250000" {
		t.Fatalf("--json: %s", out)
	}
	if out, _, code := coffer(t, "ops", "batches", "--chain-id", "1"); code != 0 || !strings.Contains(out, "no batches") {
		t.Fatalf("another chain: %d %s", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ops", "batches", "--limit", "0"}, "-limit: must be 1..500"},
		{[]string{"ops", "batches", "--limit", "501"}, "-limit: must be 1..500"},
		{[]string{"ops", "batches", "--chain-id", "-1"}, "--chain-id must be positive"},
	} {
		if _, errOut, code := coffer(t, c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q, want 2 %q", c.args, code, errOut, c.want)
		}
	}
}
