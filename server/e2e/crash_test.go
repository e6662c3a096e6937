package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// buildCoffer compiles the coffer binary once per test.
func buildCoffer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "coffer")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/coffer").CombinedOutput(); err != nil {
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
	p := &process{cmd: exec.Command(bin, "serve"), stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("coffer serve exited: %v\n%s", p.err, p.stderr)
		default:
		}
		if res, err := http.Get(baseURL + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("coffer serve not ready\n%s", p.stderr)
	return nil
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
	chains, _ := json.Marshal([]map[string]any{{"chainId": node.ChainID, "name": "geth dev", "rpcUrls": []string{node.URL},
		"confirmations": 2, "nativeSymbol": "ETH", "nativeDecimals": 18, "bankrollAddress": bankroll.Hex()}})
	chainsFile := filepath.Join(t.TempDir(), "chains.json")
	os.WriteFile(chainsFile, chains, 0o600)
	addr := freeAddr(t)
	base := "http://" + addr
	opsToken := secret.Token("ops_")
	dbURL := testdb.URL(t)
	env := []string{"DATABASE_URL=" + dbURL, "COFFER_MASTER_KEY=" + secret.NewMasterKey(), "COFFER_OPS_TOKEN=" + opsToken,
		"COFFER_CHAINS_FILE=" + chainsFile, "COFFER_ADDR=" + addr, "COFFER_BASE_URL=" + base, "COFFER_AUTO_MIGRATE=true",
		"COFFER_WEBHOOK_ALLOW_PRIVATE=true", "COFFER_STATIC_PRICES=ETH=3000", "COFFER_SCAN_INTERVAL=200ms", "COFFER_LOG_LEVEL=info",
		// A job the killed process was running is rescued after this long (production: 2m).
		"COFFER_JOB_RESCUE_AFTER=5s"}

	first := serve(t, bin, base, append(env, "COFFER_FAILPOINT="+chaintx.StepBroadcast))
	recv := newReceiver(t)
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, base, connect.WithInterceptors(bearer(opsToken)))
	created, err := ops.CreateOperator(ctx, &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: ptr("Acme"), WebhookUrl: &recv.srv.URL}})
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
}

// jobsReport describes the scan cursor and the latest River jobs, for failure messages.
func jobsReport(t *testing.T, dbURL string) string {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err.Error()
	}
	defer conn.Close(ctx)
	var b strings.Builder
	var next, head int64
	conn.QueryRow(ctx, `SELECT next_block, head_block FROM chain_cursors`).Scan(&next, &head)
	fmt.Fprintf(&b, "cursor: next %d head %d\n", next, head)
	rows, _ := conn.Query(ctx, `SELECT id, kind, state, attempt, COALESCE(errors::text, ''), scheduled_at FROM river_job ORDER BY id DESC LIMIT 15`)
	for rows.Next() {
		var id int64
		var kind, state, errs string
		var attempt int
		var at time.Time
		rows.Scan(&id, &kind, &state, &attempt, &errs, &at)
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

func ptr[T any](v T) *T { return &v }

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}
