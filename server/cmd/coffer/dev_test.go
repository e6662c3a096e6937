package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/devenv"
	"github.com/cofferhq/coffer/server/internal/proctest"
)

// TestDevSubprocess runs `coffer dev` as a user would, twice on one data directory.
//
// What was seen: a restart pointed the demo operator's webhook back at the dev receiver, so an
// integrator's own receiver (set with `coffer operator update --webhook-url`) silently stopped
// getting webhooks and the dev receiver approved its mode-A withdrawals. Only a URL that is a
// previous run's dev receiver follows the new address.
func TestDevSubprocess(t *testing.T) {
	const custom = "http://127.0.0.1:9/my-receiver"
	first, second, dataDir := devRestart(t, func(first devenv.File, dataDir string) {
		if _, errOut, code := coffer(t, "operator", "update", "--id", first.Operator.ID, "--webhook-url", custom, "--data-dir", dataDir); code != 0 {
			t.Fatalf("update webhook URL: %s", errOut)
		}
	})
	// The second run on the same data directory keeps the operator, its key and the admin.
	if second.Operator.ID != first.Operator.ID || second.Operator.Key != first.Operator.Key || second.Admin != first.Admin {
		t.Fatalf("restart changed the demo identities: %+v vs %+v", second.Operator, first.Operator)
	}
	out, errOut, code := coffer(t, "operator", "get", "--id", second.Operator.ID, "--json", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, `"webhookUrl":"`+custom+`"`) || second.Operator.WebhookURL != custom {
		t.Errorf("after a restart the demo operator's webhook is %s (dev.json %q), want the one it was given, %s %s",
			out, second.Operator.WebhookURL, custom, errOut)
	}
	createSession(t, second)
	// The demo operator starts funded (once: a restart does not fund it again).
	checkDemoFunds(t, second)
	checkDevListeners(t, second)
	checkDevWebhookReach(t, second, dataDir)
}

// /metrics answers on the internal listener, not the public one.
func checkDevListeners(t *testing.T, f devenv.File) {
	t.Helper()
	for url, want := range map[string]int{f.InternalURL + "/metrics": 200, f.BaseURL + "/metrics": 404} {
		res := proctest.Request(t, http.MethodGet, url, "", "")
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", url, res.StatusCode, want)
		}
	}
}

// What was seen: coffer dev let webhooks reach private and link-local addresses. It allows
// loopback only: a webhook URL on the cloud metadata address is refused at the connection.
func checkDevWebhookReach(t *testing.T, f devenv.File, dataDir string) {
	t.Helper()
	for _, target := range []string{"http://169.254.169.254/latest/meta-data", "http://10.0.0.1/hook", "http://[fe80::1]/hook"} {
		if _, errOut, code := coffer(t, "operator", "update", "--id", f.Operator.ID, "--webhook-url", target, "--data-dir", dataDir); code != 0 {
			t.Fatalf("update webhook URL: %s", errOut)
		}
		sid := depositSession(t, f)
		var body struct {
			Data struct {
				Delivered bool `json:"delivered"`
				Status    int  `json:"status"`
			} `json:"data"`
		}
		status := callJSON(t, http.MethodPost, f.BaseURL+"/session/"+sid+"/test-webhook", f.Operator.Key, "", &body)
		if status != http.StatusOK || body.Data.Delivered || body.Data.Status != 0 {
			t.Errorf("test webhook to %s: %d %+v, want not delivered and no HTTP status", target, status, body.Data)
		}
	}
}

func checkDemoFunds(t *testing.T, f devenv.File) {
	t.Helper()
	var body struct {
		Data struct {
			Items []struct {
				Currency  string `json:"currency"`
				Available string `json:"available"`
				Reserved  string `json:"reserved"`
			} `json:"items"`
		} `json:"data"`
	}
	callJSON(t, http.MethodGet, f.BaseURL+"/balances", f.Operator.Key, "", &body)
	got := map[string]string{}
	for _, b := range body.Data.Items {
		got[b.Currency] = b.Available
	}
	want := map[string]string{"ETH": "100.000000000000000000", "USDT": "100000.000000", "USDC": "100000.000000"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("demo operator's %s funds: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// devTest skips a test of `coffer dev` processes in -short mode; else it builds coffer and
// gives a fresh data directory.
func devTest(t *testing.T) (bin, dataDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts PostgreSQL and the dev chain in a subprocess")
	}
	return proctest.BuildCoffer(t), filepath.Join(t.TempDir(), "data")
}

// devRestart runs `coffer dev` on a fresh data directory, opens a session, calls between (if
// not nil), stops it and starts it again on the same directory: the two runs' dev.json.
func devRestart(t *testing.T, between func(first devenv.File, dataDir string)) (first, second devenv.File, dataDir string) {
	t.Helper()
	bin, dataDir := devTest(t)
	first, stop := startDev(t, bin, dataDir)
	createSession(t, first)
	if between != nil {
		between(first, dataDir)
	}
	stop()
	second, _ = startDev(t, bin, dataDir)
	return first, second, dataDir
}

// startDev starts `coffer dev` and waits for its dev.json; stop sends SIGINT (Ctrl-C) and
// checks a clean exit with PostgreSQL stopped (it also runs at the end of the test).
func startDev(t *testing.T, bin, dataDir string) (devenv.File, func()) {
	t.Helper()
	os.Remove(filepath.Join(dataDir, "dev.json"))
	//nolint:noctx // stop ends it with SIGTERM and checks the clean exit; the test's context would kill it first
	cmd := exec.Command(bin, "dev", "--data-dir", dataDir, "--addr", "127.0.0.1:0", "--internal-addr", "127.0.0.1:0", "--chain-addr", "127.0.0.1:0", "--block-time", "200ms")
	cmd.Env = append(os.Environ(), "DATABASE_URL=")
	// The process writes these while the test reads them: proctest.Buffer locks.
	var stdout, stderr proctest.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() {
		if t.Failed() { // after stop (cleanups run last first): the whole log
			t.Logf("coffer dev's log:\n%s", stderr.String())
		}
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("stop coffer dev: %v", err)
		}
		select {
		case <-exited:
			if err := exitErr; err != nil {
				t.Errorf("coffer dev exited with %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("kill coffer dev: %v", err)
			}
			t.Errorf("coffer dev did not stop within 30 s\n%s", stderr.String())
		}
		if _, err := os.Stat(filepath.Join(dataDir, "pg", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("PostgreSQL still running after coffer dev stopped (postmaster.pid: %v)", err)
		}
	}
	t.Cleanup(stop)

	var f devenv.File
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if f, err = devenv.ReadFile(dataDir); err == nil && f.BaseURL != "" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("coffer dev exited early: %v\n%s", exitErr, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dev.json after 60 s\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// dev.json is written before the summary is printed: wait for the summary's last line.
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "Ctrl-C stops it all") && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stdout.String(), f.Operator.Key) {
		t.Errorf("the printed summary lacks the operator key:\n%s", stdout.String())
	}
	if len(f.Chains) != 1 || f.Chains[0].ChainID != 1337 || len(f.Chains[0].Tokens) != 2 || f.Admin.Email == "" || f.OpsToken == "" ||
		f.FaucetAddress == "" || f.FaucetBalances["USDT"] == "" || f.FaucetBalances["USDC"] == "" {
		t.Errorf("dev.json: %+v", f)
	}
	if !strings.Contains(stdout.String(), "USDT  "+f.FaucetBalances["USDT"]) || !strings.Contains(stdout.String(), f.Chains[0].Tokens[0].ContractAddress) {
		t.Errorf("the printed summary lacks the faucet's tokens:\n%s", stdout.String())
	}
	return f, stop
}

// callJSON sends a request (see proctest.Request), decodes the JSON answer into out and
// returns the HTTP status.
func callJSON(t *testing.T, method, url, bearer, body string, out any) int {
	t.Helper()
	res := proctest.Request(t, method, url, bearer, body)
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return res.StatusCode
}

// sessionAnswer is the part of POST /session/deposit's answer the tests read.
type sessionAnswer struct {
	Status string `json:"status"`
	Data   struct {
		URL        string `json:"url"`
		SessionRef string `json:"sessionRef"`
	} `json:"data"`
}

func depositSession(t *testing.T, f devenv.File) string {
	t.Helper()
	var body sessionAnswer
	callJSON(t, http.MethodPost, f.BaseURL+"/session/deposit", f.Operator.Key,
		`{"externalUserId":"user-2","lang":"en","platformFiatCurrency":"USD","userBalance":"0.00","amount":"5.00"}`, &body)
	_, sid, _ := strings.Cut(body.Data.URL, "sid=")
	return sid
}

func createSession(t *testing.T, f devenv.File) {
	t.Helper()
	var body sessionAnswer
	status := callJSON(t, http.MethodPost, f.BaseURL+"/session/deposit", f.Operator.Key,
		`{"externalUserId":"user-1","lang":"en","platformFiatCurrency":"USD","userBalance":"0.00","amount":"25.00"}`, &body)
	if status != http.StatusOK || body.Status != "success" || !strings.HasPrefix(body.Data.URL, f.WidgetURL+"/?sid=") {
		t.Fatalf("create session on coffer dev: %d %+v", status, body)
	}
	// The dev chain answers JSON-RPC on loopback.
	var chainID struct {
		Result string `json:"result"`
	}
	callJSON(t, http.MethodPost, f.Chains[0].RPCURL, "", `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`, &chainID)
	if chainID.Result != "0x539" {
		t.Fatalf("eth_chainId = %q", chainID.Result)
	}
}
