package webui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestBrowser runs the browser tests in widget/test/*.test.mjs (Node's test runner,
// playwright-core driving Debian's chromium) against a real Coffer: this process runs the
// service on a throwaway PostgreSQL database and an embedded dev chain that seals a block
// every 500 ms, creates the operators and the admin the tests use, and serves a small control
// API through which the tests pay deposit addresses on the chain and host the widget in a page
// of another origin. Without chromium the test is skipped, except in CI (CI=true), where it
// must run: `make test` installs chromium first.
func TestBrowser(t *testing.T) {
	chromium, node, widgetDir := browserTools(t)
	ctx := t.Context()

	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0", BlockTime: 500 * time.Millisecond})
	network := testfactory.DevNetwork(dev, 3)
	// As `coffer dev`, with the chain's faucet as the dev wallet (devwallet.test.mjs): it holds
	// USDT to pay with.
	testfactory.Fund(ctx, t, dev, dev.FaucetAddress(), 0, 1_000_000_000_000)
	env := apptest.Start(t, apptest.Options{ScanInterval: 100 * time.Millisecond, Chains: []chain.Network{network}, DevFaucetKey: dev.Faucet()})
	_, gasTank := env.Services.Keys.GasTank()
	testfactory.Fund(ctx, t, dev, gasTank, 1000, 0)
	// The hot wallet pays withdrawals: ether for gas and USDT to pay.
	_, hot := env.Services.Keys.HotWallet()
	testfactory.Fund(ctx, t, dev, hot, 1000, 1_000_000_000_000)

	control := newControl(t, env, dev)
	// The embedding operator: webhooks acknowledged by the control server, no redirect URL.
	hooks := control.srv.URL + "/webhook"
	embedded, embeddedKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &hooks})
	// The full-page operator: a redirect URL on the control server, with a query of its own
	// (a status among it, which the widget must keep: it appends its own).
	back := control.srv.URL + "/return?from=coffer&status=operator-own"
	fullPage, fullPageKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &hooks, RedirectURL: &back})
	// The refusing operator answers WITHDRAW_REQUEST with code 2 (insufficient balance).
	denies := control.srv.URL + "/webhook-deny"
	refusing, refusingKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &denies})
	// Operators pay out only from their own funds: a float backed by the hot wallet's USDT.
	for _, op := range []domain.Operator{embedded, fullPage, refusing} {
		env.Fund(t, op.ID, dev.ChainID(), "USDT", "1000")
	}
	admin, _ := env.Admin(t, "")
	withdrawals := panelWithdrawals(t, env, embedded, network)

	// Each run writes its screenshots and decoded QR codes to its own directory: runs side by
	// side (make stress) must not read each other's files.
	if err := os.MkdirAll(filepath.Join(widgetDir, "test-results"), 0o755); err != nil {
		t.Fatal(err)
	}
	results, err := os.MkdirTemp(filepath.Join(widgetDir, "test-results"), "run-") //nolint:usetesting // kept for inspection; pruneOldRuns bounds them
	if err != nil {
		t.Fatal(err)
	}
	pruneOldRuns(t, filepath.Join(widgetDir, "test-results"))
	files, _ := filepath.Glob(filepath.Join(widgetDir, "test", "*.test.mjs"))
	if len(files) == 0 {
		t.Fatal("no widget/test/*.test.mjs")
	}
	cfg, err := json.Marshal(map[string]any{
		"api":       env.URL,
		"widgetUrl": env.URL + "/widget",
		"panelUrl":  env.URL + "/panel",
		"control":   control.srv.URL,
		"chromium":  chromium,
		"results":   results,
		"chain":     map[string]any{"id": dev.ChainID(), "name": network.Name},
		"operators": map[string]any{
			"embedded": map[string]string{"id": embedded.ID, "key": embeddedKey},
			"fullPage": map[string]string{"id": fullPage.ID, "key": fullPageKey, "redirectUrl": back},
			"refusing": map[string]string{"id": refusing.ID, "key": refusingKey},
		},
		"admin":       map[string]string{"email": admin.Email, "password": apptest.AdminPassword},
		"opsToken":    env.OpsToken,
		"withdrawals": withdrawals,
	})
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = widgetDir
	cmd.Env = append(os.Environ(), "COFFER_BROWSER_TEST="+string(cfg))
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("browser tests failed (%v); screenshots in %s", err, results)
	}
}

// panelWithdrawals records two PROCESSING withdrawals of op for the panel's status-change
// tests: "processing", open (the admin's second step is next), and "paying", whose payout is
// queued. The latter's payout cannot be sent (it pays USDC, of which the hot wallet holds
// none), so it stays on its way for the whole run, as a payout does when a hot wallet runs dry.
func panelWithdrawals(t *testing.T, env *apptest.Env, op domain.Operator, network chain.Network) map[string]string {
	t.Helper()
	ctx := context.Background()
	usdc, ok := network.Asset("USDC")
	if !ok {
		t.Fatal("the dev chain has no USDC")
	}
	opened, err := env.Services.Sessions.Open(ctx, op, domain.SessionWithdraw, session.Input{ExternalUserID: "panel-actions",
		Lang: "en", FiatCurrency: "USD", UserBalance: "100.00", Amount: "9.00"})
	if err != nil {
		t.Fatal(err)
	}
	amount := decimal.RequireFromString("9.00")
	out := map[string]string{}
	for _, name := range []string{"processing", "paying"} {
		w := domain.Withdrawal{ID: uuid.NewString(), OperatorID: op.ID, SessionID: opened.Session.ID, ExternalUserID: "panel-actions",
			Type: "DIRECT_TRANSFER", ApprovalMode: domain.ApprovalSync, Status: domain.WithdrawalProcessing, ChainID: network.ChainID,
			Currency: usdc.Symbol, ContractAddress: usdc.Contract.Hex(), Decimals: usdc.Decimals,
			Address: "0x52908400098527886E0F7030069857D2E4169EE7", FiatCurrency: "USD", FiatAmount: amount,
			CryptoAmount: decimal.NewFromInt(9_000_000), ExpiresAt: time.Now().Add(24 * time.Hour),
			AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount)}
		if name == "paying" {
			queued := time.Now()
			w.PayoutQueuedAt = &queued
		}
		out[name] = env.InsertWithdrawal(t, w).ID
	}
	return out
}

// browserTools finds chromium, node and the widget project with its packages installed.
func browserTools(t *testing.T) (chromium, node, widgetDir string) {
	t.Helper()
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		proctest.Missing(t, "no chromium at "+chromium+" (apt-get install chromium, or set CHROMIUM)")
	}
	node = proctest.Need(t, "node", "install Node.js")
	widgetDir, _ = filepath.Abs(filepath.Join("..", "..", "..", "widget"))
	if _, err := os.Stat(filepath.Join(widgetDir, "node_modules", "playwright-core")); err != nil {
		proctest.Missing(t, "widget/node_modules is not installed (cd widget && npm ci)")
	}
	return chromium, node, widgetDir
}

// control is the tests' side door: it pays deposit addresses on the dev chain, expires
// sessions, hosts the widget in a page of its own origin, acknowledges webhooks and is the
// full-page operator's redirect target.
type control struct {
	srv *httptest.Server
}

func newControl(t *testing.T, env *apptest.Env, dev *devchain.Chain) *control {
	t.Helper()
	c := &control{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pay", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Address  string `json:"address"`
			Currency string `json:"currency"`
			Amount   string `json:"amount"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !common.IsHexAddress(req.Address) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		amount, ok := new(big.Int).SetString(req.Amount, 10)
		if !ok {
			http.Error(w, "bad amount", http.StatusBadRequest)
			return
		}
		to := common.HexToAddress(req.Address)
		var hash common.Hash
		var err error
		if req.Currency == "ETH" {
			hash, err = dev.SendNative(r.Context(), to, amount)
		} else {
			hash, err = dev.Mint(r.Context(), req.Currency, to, amount)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"txHash": hash.Hex()}) //nolint:errcheck
	})
	mux.HandleFunc("POST /expire", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Sid string `json:"sid"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if _, err := env.Pool.Exec(r.Context(), `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, req.Sid); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	// The operator's page: the widget in a 420x640 iframe with clipboard-write, as the spec
	// suggests; every message it receives is kept in window.messages.
	mux.HandleFunc("GET /host", func(w http.ResponseWriter, r *http.Request) {
		src := r.URL.Query().Get("src")
		if !strings.HasPrefix(src, env.URL+"/") {
			http.Error(w, "src must be the widget", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>Operator</title></head><body>
<h1>Operator page</h1>
<iframe id="coffer" title="Payment" src="%s" width="420" height="640" allow="clipboard-write" style="border:1px solid #ccc"></iframe>
<script>window.messages = []; addEventListener("message", (e) => window.messages.push({origin: e.origin, data: e.data}));</script>
</body></html>`, htmlAttr(src))
	})
	mux.HandleFunc("GET /return", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Back at the operator</title><h1 id="returned">status=%s</h1>`, htmlAttr(r.URL.Query().Get("status")))
	})
	mux.HandleFunc("POST /webhook", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":0}`) //nolint:errcheck
	})
	mux.HandleFunc("POST /webhook-deny", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"error":2,"description":"balance 3.10"}`) //nolint:errcheck
	})
	c.srv = httptest.NewServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

func htmlAttr(s string) string {
	r := strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;")
	return r.Replace(s)
}

// pruneOldRuns removes the result directories of runs older than an hour.
func pruneOldRuns(t *testing.T, dir string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, "run-*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(d)
		}
	}
}
