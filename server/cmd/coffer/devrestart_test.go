package main

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// What was seen (issue 14): after Ctrl-C, `coffer dev` on the same data directory never
// detected a deposit: the dev chain restarted empty at block 0 while PostgreSQL kept the
// cursor and the gas tank's nonce. The chain now lives in the data directory: a token deposit
// paid from the faucet, as from a user's wallet, is credited before and after a restart.
func TestDevRestartTakesDeposits(t *testing.T) {
	first, second, _ := devRestart(t, func(first devenv.File, _ string) {
		payTokenDeposit(t, first, "user-1", "USDT", 5_000_000) // the gas tank sweeps it: its nonce moves on
	})
	if second.Chains[0].Tokens[0] != first.Chains[0].Tokens[0] || second.FaucetAddress != first.FaucetAddress {
		t.Fatalf("restart changed the chain's contracts or faucet: %+v vs %+v", second.Chains[0].Tokens, first.Chains[0].Tokens)
	}
	if second.FaucetBalances["USDT"] != "999999995.000000" {
		t.Errorf("faucet USDT after the first deposit and a restart: %s, want 999999995.000000", second.FaucetBalances["USDT"])
	}
	payTokenDeposit(t, second, "user-2", "USDT", 7_000_000)
	payTokenDeposit(t, second, "user-3", "USDC", 3_000_000)

	// The operator's balances hold the demo float plus what the deposits credited.
	pool := devDB(t, second)
	var body struct {
		Data struct {
			Items []struct {
				Currency  string `json:"currency"`
				Available string `json:"available"`
			} `json:"items"`
		} `json:"data"`
	}
	callJSON(t, http.MethodGet, second.BaseURL+"/balances", second.Operator.Key, "", &body)
	for _, b := range body.Data.Items {
		if b.Currency != "USDT" && b.Currency != "USDC" {
			continue
		}
		var credited string
		if err := pool.QueryRow(context.Background(), `SELECT (100000000000 + COALESCE(sum(amount), 0))::text FROM deposits
			WHERE status = 'CREDITED' AND currency = $1`, b.Currency).Scan(&credited); err != nil {
			t.Fatal(err)
		}
		if got := strings.Replace(b.Available, ".", "", 1); got != credited {
			t.Errorf("%s available %s, want the float plus the credited deposits (%s base units)", b.Currency, b.Available, credited)
		}
	}
}

// What was seen (issue 14): with the chain reset under a kept database, `coffer dev` ran a
// stack that could take no deposit and logged only a deep reorg. It now refuses to start and
// says how to start over.
func TestDevRefusesAResetChain(t *testing.T) {
	bin, dataDir := devTest(t)
	f, stop := startDev(t, bin, dataDir)
	pool := devDB(t, f)
	waitFor(t, 60*time.Second, "the scanner's cursor", func() bool {
		var n int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM chain_blocks`).Scan(&n)
		return err == nil && n > 0
	})
	pool.Close()
	stop()

	for _, p := range []string{filepath.Join(dataDir, "chain"), filepath.Join(dataDir, "dev.json")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0",
		"--chain-addr", "127.0.0.1:0", "--block-time", "200ms")
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("coffer dev on a reset chain: %v, want exit status 1\n%s", err, stderr.String())
	}
	last := stderr.String()[strings.LastIndex(strings.TrimSpace(stderr.String()), "\n")+1:]
	for _, want := range []string{"the dev chain in " + filepath.Join(dataDir, "chain") + " was reset", "rm -rf " + dataDir} {
		if !strings.Contains(last, want) {
			t.Errorf("the error lacks %q:\n%s", want, last)
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "dev.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused start wrote dev.json (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "pg", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PostgreSQL still running after the refused start (postmaster.pid: %v)", err)
	}
}

// payTokenDeposit opens a deposit session for user, pays amount (base units) of symbol from
// the faucet to the session's deposit address with an ordinary ERC20 transfer over the chain's
// JSON-RPC, and waits until the deposit is CREDITED and its DEPOSIT webhook delivered.
func payTokenDeposit(t *testing.T, f devenv.File, user, symbol string, amount int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, to := sessionAddress(t, f, user, symbol)

	var token common.Address
	for _, tk := range f.Chains[0].Tokens {
		if tk.Symbol == symbol {
			token = common.HexToAddress(tk.ContractAddress)
		}
	}
	ec, err := ethclient.DialContext(ctx, f.Chains[0].RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	key, err := crypto.HexToECDSA(strings.TrimPrefix(f.FaucetPrivateKey, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	opts := bind.NewKeyedTransactor(key, big.NewInt(f.Chains[0].ChainID))
	opts.Context = ctx
	tt := contracts.NewTestToken()
	tx, err := bind.Transact(tt.Instance(ec, token), opts, tt.PackTransfer(common.HexToAddress(to), big.NewInt(amount)))
	if err != nil {
		t.Fatalf("transfer %s from the faucet: %v", symbol, err)
	}

	waitCredited(t, f, symbol, tx.Hash().Hex())
}

// waitCredited waits until the deposit paid by transaction hash is CREDITED and its DEPOSIT
// webhook delivered.
func waitCredited(t *testing.T, f devenv.File, symbol, hash string) {
	t.Helper()
	pool := devDB(t, f)
	defer pool.Close()
	var id int64
	var status, hook string
	defer func() {
		if t.Failed() {
			t.Logf("deposit %d: status %q, webhook %q", id, status, hook)
		}
	}()
	waitFor(t, 90*time.Second, symbol+" deposit "+hash+" credited and its webhook delivered", func() bool {
		err := pool.QueryRow(context.Background(), `SELECT d.id, d.status, COALESCE((SELECT w.state FROM webhook_events w
			WHERE w.event_type = 'DEPOSIT' AND w.subject_id = d.id::text AND NOT w.test LIMIT 1), '')
			FROM deposits d WHERE lower(d.tx_hash) = lower($1)`, hash).Scan(&id, &status, &hook)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return status == "CREDITED" && hook == "delivered"
	})
}

// devDB connects to the database of a running `coffer dev`.
func devDB(t *testing.T, f devenv.File) *pgxpool.Pool {
	t.Helper()
	return testdb.Open(t, f.DatabaseURL, 0)
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
