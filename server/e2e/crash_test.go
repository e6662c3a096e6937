package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// buildCoffer compiles the coffer binary once per test.
func buildCoffer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coffer")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../cmd/coffer").CombinedOutput(); err != nil {
		t.Fatalf("build coffer: %v\n%s", err, out)
	}
	return bin
}

// process is a running `coffer serve`.
type process struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func serve(t *testing.T, bin, baseURL string, env []string) *process {
	t.Helper()
	//nolint:noctx // stopped by its cleanup (SIGTERM, then kill), which runs after t.Context ends
	p := &process{cmd: exec.Command(bin, "serve"), stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("coffer serve exited: %v\n%s", p.err, p.stderr)
		default:
		}
		if res, err := get(t, baseURL+"/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("coffer serve not ready\n%s", p.stderr)
	return nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The process is killed right after it broadcast a sweep, before the sweep confirmed, and then
// restarted: the sweep is on-chain once, and the operator receives one DEPOSIT.
func TestSweepSurvivesAKillAfterBroadcast(t *testing.T) {
	ctx := context.Background()
	node := gethdev.Start(t, time.Second)
	user, err := node.NewAccount(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildCoffer(t)
	bankroll := crypto.PubkeyToAddress(mustKey(t).PublicKey)
	chains, err := json.Marshal([]map[string]any{{"chainId": node.ChainID, "name": "geth dev", "rpcUrls": []string{node.URL},
		"confirmations": 2, "nativeSymbol": "ETH", "nativeDecimals": 18, "bankrollAddress": bankroll.Hex()}})
	if err != nil {
		t.Fatal(err)
	}
	chainsFile := filepath.Join(t.TempDir(), "chains.json")
	if err := os.WriteFile(chainsFile, chains, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, internalAddr := freeAddr(t), freeAddr(t)
	base, internal := "http://"+addr, "http://"+internalAddr
	opsToken := secret.Token("ops_")
	dbURL := testdb.URL(t)
	env := []string{"DATABASE_URL=" + dbURL, "COFFER_MASTER_KEY=" + secret.NewMasterKey(), "COFFER_OPS_TOKEN=" + opsToken,
		"COFFER_CHAINS_FILE=" + chainsFile, "COFFER_ADDR=" + addr, "COFFER_INTERNAL_ADDR=" + internalAddr, "COFFER_BASE_URL=" + base, "COFFER_AUTO_MIGRATE=true",
		"COFFER_WEBHOOK_ALLOW=loopback", "COFFER_STATIC_PRICES=ETH=3000", "COFFER_SCAN_INTERVAL=200ms", "COFFER_LOG_LEVEL=info",
		// A job the killed process was running is rescued after this long (production: 2m).
		"COFFER_JOB_RESCUE_AFTER=5s"}

	first := serve(t, bin, base, append(env, "COFFER_FAILPOINT="+chaintx.StepBroadcast))
	recv := newReceiver(t)
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, internal, connect.WithInterceptors(bearer(opsToken)))
	created, err := ops.CreateOperator(ctx, &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: new("Acme"), WebhookUrl: &recv.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	key := created.OperatorKey
	recv.setKey(key)
	data := rest(t, "POST", base+"/session/deposit", key, `{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"10"}`)
	sid := strings.TrimPrefix(data["url"].(string), base+"/widget/?sid=")
	depositAddr := common.HexToAddress(rest(t, "POST", base+"/depositor/address", "", `{"sid":"`+sid+`","currency":"ETH","chainId":1337}`)["address"].(string))
	if _, err := node.Transact(ctx, user, &depositAddr, eth(1000), nil); err != nil {
		t.Fatal(err)
	}

	select {
	case <-first.done:
		var exit *exec.ExitError
		if !errors.As(first.err, &exit) || exit.ExitCode() != app.FailpointExitCode {
			t.Fatalf("first process ended with %v, want the failpoint's exit\n%s", first.err, first.stderr)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the failpoint was not reached\n%s\n%s", first.stderr, jobsReport(t, dbURL))
	}
	if len(recv.all()) != 0 {
		t.Fatal("a DEPOSIT was sent before the sweep confirmed")
	}
	// The sweep was broadcast before the kill, so it is mined without Coffer.
	waitNonce(t, node, depositAddr, 1)

	serve(t, bin, base, env)
	events := recv.waitFor(1, 90*time.Second) // River rescues the killed job (rescue window + its 30 s sweep)
	time.Sleep(3 * time.Second)               // time for a duplicate, if there were one
	if n := len(recv.all()); n != 1 {
		t.Fatalf("%d DEPOSIT webhooks, want exactly 1", n)
	}
	if events[0].form.Get("event") != "DEPOSIT" || events[0].form.Get("grossAmount") != eth(1000).String() {
		t.Fatalf("DEPOSIT %v", events[0].form)
	}
	if n, _ := node.Client.NonceAt(ctx, depositAddr, nil); n != 1 {
		t.Fatalf("the deposit address sent %d transactions, want exactly one sweep", n)
	}
	bal, _ := node.Client.BalanceAt(ctx, bankroll, nil)
	if bal.String() != events[0].form.Get("amount") {
		t.Fatalf("bankroll holds %s, the DEPOSIT says %s", bal, events[0].form.Get("amount"))
	}
	// The credited deposit is the operator's, and the bankroll covers it.
	funds, err := ops.ListOperatorBalances(ctx, &cofferv1.ListOperatorBalancesRequest{OperatorId: created.Operator.Id})
	if err != nil {
		t.Fatal(err)
	}
	if b := funds.Items[0]; b.Currency != "ETH" || b.Available != weiToETH(bal) {
		t.Fatalf("operator funds %v, bankroll %s wei", b, bal)
	}
	assertReconciled(t, ops)
}

func weiToETH(wei *big.Int) string {
	return new(big.Rat).SetFrac(wei, big.NewInt(1e18)).FloatString(18)
}

// jobsReport describes the scan cursor and the latest River jobs, for failure messages.
func jobsReport(t *testing.T, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(ctx)
	var b strings.Builder
	var next, head int64
	if err := conn.QueryRow(ctx, `SELECT next_block, head_block FROM chain_cursors`).Scan(&next, &head); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "cursor: next %d head %d\n", next, head)
	rows, _ := conn.Query(ctx, `SELECT id, kind, state, attempt, COALESCE(errors::text, ''), scheduled_at FROM river_job ORDER BY id DESC LIMIT 15`)
	for rows.Next() {
		var id int64
		var kind, state, errs string
		var attempt int
		var at time.Time
		if err := rows.Scan(&id, &kind, &state, &attempt, &errs, &at); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "job %d %s %s attempt %d at %s %s\n", id, kind, state, attempt, at.Format("15:04:05.000"), errs[:min(len(errs), 300)])
	}
	rows.Close()
	return b.String()
}

func waitNonce(t *testing.T, node *gethdev.Node, addr common.Address, want uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := node.Client.NonceAt(context.Background(), addr, nil); err == nil && n >= want {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("nonce of %s did not reach %d", addr.Hex(), want)
}

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}

// stop ends a process gracefully and waits for it.
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// awaitFailpoint waits for a process to exit at its failpoint.
func (p *process) awaitFailpoint(t *testing.T, dbURL string) {
	t.Helper()
	select {
	case <-p.done:
		var exit *exec.ExitError
		if !errors.As(p.err, &exit) || exit.ExitCode() != app.FailpointExitCode {
			t.Fatalf("process ended with %v, want the failpoint's exit\n%s", p.err, p.stderr)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the failpoint was not reached\n%s\n%s", p.stderr, jobsReport(t, dbURL))
	}
}

// The payout worker's process is killed at each step of sending (after the nonce is allocated,
// after signing, after the signed transaction is stored, after it is broadcast, before its
// receipt is read), each time while an admin's COMPLETED waits for the payout, and started
// again: each withdrawal is paid by exactly one transaction, the hot wallet's nonces have no
// gap, and the operator receives exactly one WITHDRAW_COMPLETE per withdrawal.
func TestPayoutSurvivesKillsAtEveryStep(t *testing.T) {
	ctx := context.Background()
	node := gethdev.Start(t, time.Second)
	treasury, err := node.NewAccount(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	usdt, err := node.DeployToken(ctx, treasury, "USDT", 6, big.NewInt(1_000_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildCoffer(t)
	chains, err := json.Marshal([]map[string]any{{"chainId": node.ChainID, "name": "geth dev", "rpcUrls": []string{node.URL},
		"confirmations": 2, "nativeSymbol": "ETH", "nativeDecimals": 18,
		"tokens": []map[string]any{{"symbol": "USDT", "contractAddress": usdt.Hex(), "decimals": 6}}}})
	if err != nil {
		t.Fatal(err)
	}
	chainsFile := filepath.Join(t.TempDir(), "chains.json")
	if err := os.WriteFile(chainsFile, chains, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, internalAddr := freeAddr(t), freeAddr(t)
	base, internal := "http://"+addr, "http://"+internalAddr
	opsToken := secret.Token("ops_")
	dbURL := testdb.URL(t)
	env := []string{"DATABASE_URL=" + dbURL, "COFFER_MASTER_KEY=" + secret.NewMasterKey(), "COFFER_OPS_TOKEN=" + opsToken,
		"COFFER_CHAINS_FILE=" + chainsFile, "COFFER_ADDR=" + addr, "COFFER_INTERNAL_ADDR=" + internalAddr, "COFFER_BASE_URL=" + base, "COFFER_AUTO_MIGRATE=true",
		"COFFER_WEBHOOK_ALLOW=loopback", "COFFER_STATIC_PRICES=ETH=3000,USDT=1", "COFFER_SCAN_INTERVAL=200ms",
		"COFFER_LOG_LEVEL=info", "COFFER_LOG_FORMAT=text", "COFFER_JOB_RESCUE_AFTER=3s"}

	p := serve(t, bin, base, env)
	hot := regexp.MustCompile(`hot_wallet=(0x[0-9a-fA-F]{40})`).FindStringSubmatch(p.stderr.String())
	if hot == nil {
		t.Fatalf("no hot wallet in the start-up log\n%s", p.stderr)
	}
	hotWallet := common.HexToAddress(hot[1])
	if err := node.Fund(ctx, hotWallet, eth(10_000)); err != nil {
		t.Fatal(err)
	}
	tok := contracts.NewTestToken()
	if _, err := node.Transact(ctx, treasury, &usdt, nil, tok.PackTransfer(hotWallet, big.NewInt(1_000_000_000))); err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, internal, connect.WithInterceptors(bearer(opsToken)))
	created, err := ops.CreateOperator(ctx, &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: new("Acme"), WebhookUrl: &recv.srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	key := created.OperatorKey
	recv.setKey(key)
	// The operator's float, backed by the 1,000 USDT the hot wallet holds.
	if _, err := ops.AdjustOperatorFunds(ctx, &cofferv1.AdjustOperatorFundsRequest{OperatorId: created.Operator.Id, ChainId: node.ChainID,
		Currency: "USDT", Amount: "100", Note: "float"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.CreateAdmin(ctx, &cofferv1.CreateAdminRequest{Email: "ops@acme.test", Password: "a long admin password"}); err != nil {
		t.Fatal(err)
	}
	login := func() string {
		res, err := post(t, base+"/admin/login", `{"email":"ops@acme.test","password":"a long admin password"}`)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct {
			Token string `json:"token"`
		}
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Token
	}
	p.stop(t)
	startNonce, err := node.Client.NonceAt(ctx, hotWallet, nil)
	if err != nil {
		t.Fatal(err)
	}

	steps := []string{chaintx.StepNonce, chaintx.StepSigned, chaintx.StepStored, chaintx.StepBroadcast, chaintx.StepReceipt}
	dests := map[string]common.Address{}
	for i, step := range steps {
		p = serve(t, bin, base, append(env, "COFFER_FAILPOINT="+step))
		admin := login()
		data := rest(t, "POST", base+"/session/withdraw", key,
			fmt.Sprintf(`{"externalUserId":"u%d","lang":"en","platformFiatCurrency":"USD","userBalance":"50","amount":"%d.00"}`, i, i+1))
		sid := strings.TrimPrefix(data["url"].(string), base+"/widget/?sid=")
		dest := crypto.PubkeyToAddress(mustKey(t).PublicKey)
		id := rest(t, "POST", base+"/withdraw/direct-transfer", "",
			`{"sid":"`+sid+`","address":"`+dest.Hex()+`","currency":"USDT","chainId":1337}`)["withdrawRequestId"].(string)
		dests[id] = dest
		rawJSON(t, "PATCH", base+"/admin/withdrawals/"+id+"/status", admin, `{"status":"PROCESSING"}`)
		go func() { // the answer never comes: the process dies while the payout is in flight
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPatch, base+"/admin/withdrawals/"+id+"/status", strings.NewReader(`{"status":"COMPLETED"}`))
			req.Header.Set("Authorization", "Bearer "+admin)
			req.Header.Set("Content-Type", "application/json")
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}()
		p.awaitFailpoint(t, dbURL)
		p = serve(t, bin, base, env)
		recv.waitForEvent(t, "WITHDRAW_COMPLETE", id, 90*time.Second)
		p.stop(t)
	}
	time.Sleep(2 * time.Second) // a duplicate, if there were one
	completes := map[string]int{}
	for _, e := range recv.all() {
		if e.form.Get("event") == "WITHDRAW_COMPLETE" {
			completes[e.form.Get("withdrawRequestId")]++
		}
	}
	for id, dest := range dests {
		if completes[id] != 1 {
			t.Errorf("%s: %d WITHDRAW_COMPLETE", id, completes[id])
		}
		out, _ := node.Client.CallContract(ctx, ethereum.CallMsg{To: &usdt, Data: tok.PackBalanceOf(dest)}, nil)
		if got, _ := tok.UnpackBalanceOf(out); got.Sign() == 0 {
			t.Errorf("%s: the destination received nothing", id)
		}
	}
	if n, _ := node.Client.NonceAt(ctx, hotWallet, nil); n != startNonce+uint64(len(steps)) {
		t.Fatalf("the hot wallet sent %d transactions for %d withdrawals", n-startNonce, len(steps))
	}
	// The books after 5 crashes: the operator paid 1+2+3+4+5 USDT from its 100, nothing stays
	// reserved, and the hot wallet still covers every operator's funds.
	p = serve(t, bin, base, env)
	defer p.stop(t)
	bal, err := ops.ListOperatorBalances(ctx, &cofferv1.ListOperatorBalancesRequest{OperatorId: created.Operator.Id})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bal.Items {
		if b.Currency == "USDT" && (b.Available != "85.000000" || b.Reserved != "0.000000") {
			t.Fatalf("operator funds after the payouts: %v", b)
		}
	}
	assertReconciled(t, ops)
}

// assertReconciled checks the reconciliation invariant: on every chain and asset, the
// service's on-chain holdings cover every operator's funds.
func assertReconciled(t *testing.T, ops cofferv1connect.OpsServiceClient) {
	t.Helper()
	res, err := ops.Reconcile(context.Background(), &cofferv1.ReconcileRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range res.Lines {
		if !l.Ok {
			t.Errorf("reconciliation: chain %d %s holdings %s, owed %s (surplus %s)", l.ChainId, l.Currency, l.Holdings, l.Owed, l.Surplus)
		}
	}
	if !res.Ok || len(res.Lines) == 0 {
		t.Fatalf("reconciliation not ok: %v", res)
	}
}
