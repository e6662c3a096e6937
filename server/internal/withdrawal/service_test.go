package withdrawal_test

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/wallet"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// receiver is the operator's webhook endpoint; answer decides each reply.
type receiver struct {
	srv    *httptest.Server
	answer atomic.Value // func(http.ResponseWriter, url.Values)
	mu     sync.Mutex
	bodies []url.Values
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	r.reply(`{"error":0,"description":"ok"}`)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, req.PostForm)
		r.mu.Unlock()
		r.answer.Load().(func(http.ResponseWriter, url.Values))(w, req.PostForm)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) reply(body string) {
	r.answer.Store(func(w http.ResponseWriter, _ url.Values) {
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, body)
	})
}

// writeBody answers a webhook. A failed write means Coffer stopped listening (its timeout);
// the tests judge that by Coffer's answer, not here.
func writeBody(w http.ResponseWriter, body string) {
	_, _ = io.WriteString(w, body)
}

func (r *receiver) received() []url.Values {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]url.Values(nil), r.bodies...)
}

type env struct {
	t        *testing.T
	ctx      context.Context //nolint:containedctx // the test's context: the env lives exactly as long as the test
	dev      *devchain.Chain
	pool     *pgxpool.Pool
	svc      *withdrawal.Service
	engine   *chaintx.Engine
	ops      *operator.Service
	sessions *session.Service
	recv     *receiver
	client   *chain.Client
	hot      common.Address
	usdt     devchain.Token
	offramp  *withdrawal.DevOffRamp
	ledger   *funds.Ledger
	hotKey   *ecdsa.PrivateKey
}

const confirmations = 2

// setupOperator is setupChain with the default config and one funded operator of settings s.
func setupOperator(t *testing.T, s domain.OperatorSettings) (*env, domain.Operator) {
	t.Helper()
	e := setupChain(t, withdrawal.Config{})
	return e, e.operator(s)
}

func setupChain(t *testing.T, cfg withdrawal.Config) *env {
	t.Helper()
	return setupChainOn(t, cfg, testdb.New(t))
}

// setupChainOn is setupChain on a pool of the test's own. The services are the production
// graph (app.NewServices: the cascade, the outbox, the engine), on a dev chain whose hot
// wallet holds 100 ETH and 10,000 USDT; River only inserts: the tests drive payouts.
func setupChainOn(t *testing.T, cfg withdrawal.Config, pool *pgxpool.Pool) *env {
	t.Helper()
	return setupChainVia(t, cfg, pool, func(rpcURL string) string { return rpcURL })
}

// setupChainVia is setupChainOn with the service reaching the chain at via(the chain's RPC
// URL): an endpoint in front of the chain that misbehaves on demand.
func setupChainVia(t *testing.T, cfg withdrawal.Config, pool *pgxpool.Pool, via func(rpcURL string) string) *env {
	t.Helper()
	ctx := context.Background()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	box, _ := secret.NewBox(secret.Random(32))
	if _, err := wallet.LoadPublicOrCreate(ctx, pool, box); err != nil {
		t.Fatal(err)
	}
	usdt, _ := dev.Token("USDT")
	registry, err := chain.NewRegistry([]chain.Network{{ChainID: dev.ChainID(), Name: "Dev", RPCURLs: []string{via(dev.RPCURL())},
		Confirmations: confirmations, NativeSymbol: "ETH", NativeDecimals: 18,
		Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: usdt.Address, Decimals: 6}}}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SettleWait == 0 {
		cfg.SettleWait = time.Millisecond
	}
	log := slog.New(slog.DiscardHandler)
	s, err := app.NewServices(ctx, pool, box, app.ServicesConfig{Chains: registry, StaticPrices: rates.DevUSD(),
		FiatRates: rates.DevPerUSD(), Sessions: session.Config{WidgetURL: "https://w.example"}, WebhookReach: webhook.ReachLoopback,
		Withdrawals: cfg, OffRamp: "dev", Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := app.InsertOnlyRiver(pool, s, log); err != nil {
		t.Fatal(err)
	}
	hotKey, hot := s.Keys.HotWallet()
	testfactory.Fund(ctx, t, dev, hot, 100, 10_000_000_000) // 100 ETH, 10,000 USDT
	return &env{t: t, ctx: ctx, dev: dev, pool: pool, svc: s.Withdrawals, engine: s.Engine, ops: s.Operators, recv: newReceiver(t),
		sessions: s.Sessions, client: s.Clients[dev.ChainID()], hot: hot, usdt: usdt, offramp: s.OffRamp.(*withdrawal.DevOffRamp),
		ledger: s.Funds, hotKey: hotKey}
}

// operator creates an operator whose webhooks go to the env's receiver, funded with 1,000
// USDT and 10 ETH (backed by the hot wallet's 10,000 USDT and 100 ETH).
func (e *env) operator(s domain.OperatorSettings) domain.Operator {
	e.t.Helper()
	op := e.unfundedOperator(s)
	e.fund(op, "USDT", "1000")
	e.fund(op, "ETH", "10")
	return op
}

// modeB is s with external approval (mode B) switched on.
func modeB(s domain.OperatorSettings) domain.OperatorSettings {
	external, enabled := domain.ApprovalExternal, true
	s.ApprovalMode, s.ApprovalEnabled = &external, &enabled
	return s
}

// unfundedOperator creates an operator with no funds.
func (e *env) unfundedOperator(s domain.OperatorSettings) domain.Operator {
	e.t.Helper()
	name, hook := "Op", e.recv.srv.URL
	s.Name, s.WebhookURL = &name, &hook
	op, _, err := e.ops.Create(e.ctx, s)
	if err != nil {
		e.t.Fatal(err)
	}
	return op
}

// fund adjusts an operator's funds (token units, signed).
func (e *env) fund(op domain.Operator, currency, amount string) funds.Balance {
	e.t.Helper()
	b, err := e.ledger.Adjust(e.ctx, funds.Adjustment{OperatorID: op.ID, ChainID: e.dev.ChainID(), Currency: currency, Amount: amount,
		Note: "test float", Actor: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) withdrawSession(op domain.Operator, user, amount string) domain.Session {
	e.t.Helper()
	o, err := e.sessions.Open(e.ctx, op, session.Withdraw, session.Input{ExternalUserID: user, Lang: "en", FiatCurrency: "USD",
		UserBalance: "1000", Amount: amount})
	if err != nil {
		e.t.Fatal(err)
	}
	return o.Session
}

func newAddress() common.Address {
	k, _ := crypto.GenerateKey()
	return crypto.PubkeyToAddress(k.PublicKey)
}

func (e *env) submit(sess domain.Session, to common.Address, currency string) domain.Withdrawal {
	e.t.Helper()
	w, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: to.Hex(), Currency: currency, ChainID: e.dev.ChainID()})
	if err != nil {
		e.t.Fatalf("submit: %v", err)
	}
	return w
}

func (e *env) get(id string) domain.Withdrawal {
	e.t.Helper()
	w, err := store.New(e.pool).GetWithdrawal(e.ctx, nil, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// update changes an operator's settings.
func (e *env) update(op domain.Operator, s domain.OperatorSettings) {
	e.t.Helper()
	if _, err := e.ops.Update(e.ctx, op.ID, s); err != nil {
		e.t.Fatal(err)
	}
}

// payAll drives every paying withdrawal's payout, mining a block after each pass, until none
// is left paying.
func (e *env) payAll() {
	e.t.Helper()
	for range 30 {
		ids, err := store.New(e.pool).PayingWithdrawals(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ids) == 0 {
			return
		}
		for _, id := range ids {
			if _, err := e.svc.Pay(e.ctx, id); err != nil {
				e.t.Fatalf("pay %s: %v", id, err)
			}
		}
		e.dev.Commit()
	}
	e.t.Fatal("payouts still in flight after 30 blocks")
}

func (e *env) tokenBalance(owner common.Address) *big.Int {
	e.t.Helper()
	return testfactory.TokenBalance(e.ctx, e.t, e.client, e.usdt.Address, owner)
}

// events counts the outbox events of a type for a withdrawal.
func (e *env) events(eventType, withdrawalID string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM webhook_events WHERE event_type = $1 AND subject_id = $2 AND NOT sync`,
		eventType, withdrawalID).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) completeBody(withdrawalID string) map[string]string {
	e.t.Helper()
	var body string
	if err := e.pool.QueryRow(e.ctx, `SELECT body FROM webhook_events WHERE event_type = 'WITHDRAW_COMPLETE' AND subject_id = $1`,
		withdrawalID).Scan(&body); err != nil {
		e.t.Fatal(err)
	}
	v, err := url.ParseQuery(body)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for k := range v {
		out[k] = v.Get(k)
	}
	return out
}

func faultOf(err error) *fault.Error { return fault.As(err) }

// admin moves a withdrawal as an admin would.
func (e *env) admin(id string, to domain.WithdrawalStatus) domain.Withdrawal {
	e.t.Helper()
	w, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), id, to, "admin:a@x", "")
	if err != nil {
		e.t.Fatalf("admin %s: %v", to, err)
	}
	return w
}

// complete moves a withdrawal to PROCESSING then COMPLETED as an admin would: its payout is
// queued.
func (e *env) complete(id string) {
	e.t.Helper()
	e.admin(id, domain.WithdrawalProcessing)
	e.admin(id, domain.WithdrawalCompleted)
}

// queuedPayout submits a USDT withdrawal of amount to a new address and completes it.
func (e *env) queuedPayout(op domain.Operator, user, amount string) domain.Withdrawal {
	e.t.Helper()
	w := e.submit(e.withdrawSession(op, user, amount), newAddress(), "USDT")
	e.complete(w.ID)
	return w
}

// TestModeASynchronousCodes: the operator's answer to the synchronous WITHDRAW_REQUEST decides;
// only error 0 creates a (PENDING) withdrawal; every refusal creates nothing and tells the user
// the spec's message, or the operator's description for an unknown code; a slow receiver, an
// HTML page and a 500 are code 3, never an approval.
func TestModeASynchronousCodes(t *testing.T) {
	e := setupChain(t, withdrawal.Config{SyncTimeout: 500 * time.Millisecond})
	op := e.operator(domain.OperatorSettings{})
	type answer func(w http.ResponseWriter, form url.Values)
	jsonAnswer := func(code int, desc string) answer {
		return func(w http.ResponseWriter, _ url.Values) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"error":%d,"description":%q}`, code, desc)
		}
	}
	rawAnswer := func(body string) answer {
		return func(w http.ResponseWriter, _ url.Values) {
			w.Header().Set("Content-Type", "application/json")
			writeBody(w, body)
		}
	}
	cases := []struct {
		name    string
		answer  answer
		code    int // 0: approved
		message string
	}{
		{"0 approves", jsonAnswer(0, "approved"), 0, ""},
		{"1", jsonAnswer(1, "x"), 1, "Withdrawal request declined by operator"},
		{"2", jsonAnswer(2, "x"), 2, "Insufficient balance for withdrawal"},
		{"3", jsonAnswer(3, "x"), 3, "Withdrawal temporarily unavailable"},
		{"4", jsonAnswer(4, "x"), 4, "User is not eligible for withdrawal"},
		{"5", jsonAnswer(5, "x"), 5, "Daily withdrawal limit exceeded"},
		{"6", jsonAnswer(6, "x"), 6, "Withdrawal amount too low"},
		{"7", jsonAnswer(7, "x"), 7, "Withdrawal amount too high"},
		{"8", jsonAnswer(8, "x"), 8, "Account verification required"},
		{"9", jsonAnswer(9, "x"), 9, "Withdrawal suspended for this account"},
		{"unknown code shows the description", jsonAnswer(42, "Withdrawals pause during the tournament"), 42, "Withdrawals pause during the tournament"},
		// Shown as printable text (and recorded: PostgreSQL's text holds no NUL).
		{"description with a NUL", rawAnswer(`{"error":42,"description":"Paused\u0000until noon"}`), 42, "Paused until noon"},
		{"slow receiver", func(w http.ResponseWriter, _ url.Values) {
			time.Sleep(time.Second)
			writeBody(w, `{"error":0}`)
		}, 3, "Withdrawal temporarily unavailable"},
		{"HTML page", func(w http.ResponseWriter, _ url.Values) {
			w.Header().Set("Content-Type", "text/html")
			writeBody(w, `<html><body>error 0</body></html>`)
		}, 3, "Withdrawal temporarily unavailable"},
		// Only a body whose one "error" key is 0 approves: not a key that differs in case
		// (Go's lenient field matching), not a second "error" after a denial.
		{"Error in capitals", rawAnswer(`{"Error":0}`), 3, "Withdrawal temporarily unavailable"},
		{"denial with ERROR 0 beside it", rawAnswer(`{"error":1,"ERROR":0}`), 1, "Withdrawal request declined by operator"},
		{"error given twice", rawAnswer(`{"error":1,"error":0}`), 3, "Withdrawal temporarily unavailable"},
		// A non-zero error too small for a float64 reads as 0 in floating point: it is not
		// an integer, so not an approval.
		{"error 1e-400", rawAnswer(`{"error":1e-400}`), 3, "Withdrawal temporarily unavailable"},
		{"error 0.(400 zeros)1", rawAnswer(`{"error":0.` + strings.Repeat("0", 400) + `1}`), 3, "Withdrawal temporarily unavailable"},
		{"HTTP 500 with error 0", func(w http.ResponseWriter, _ url.Values) {
			w.WriteHeader(http.StatusInternalServerError)
			writeBody(w, `{"error":0}`)
		}, 3, "Withdrawal temporarily unavailable"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.recv.answer.Store((func(http.ResponseWriter, url.Values))(c.answer))
			sess := e.withdrawSession(op, fmt.Sprintf("user-a-%d", i), "25.00")
			before := len(e.recv.received())
			w, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: newAddress().Hex(), Currency: "USDT", ChainID: e.dev.ChainID()})
			got := e.recv.received()[before:]
			if len(got) != 1 || got[0].Get("event") != "WITHDRAW_REQUEST" || got[0].Get("cryptoAmountSent") != "25.000000" ||
				got[0].Get("cryptoAmount") != "null" || got[0].Get("fiatAmount") != "25.00" || got[0].Get("withdrawRequestId") == "" {
				t.Fatalf("WITHDRAW_REQUEST sent: %v", got)
			}
			var n, recorded int
			if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM withdrawals WHERE session_id = $1`, sess.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			// Every synchronous send is an event of the operator's feed, whatever the answer.
			if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM webhook_events WHERE sync AND subject_id = $1`,
				got[0].Get("withdrawRequestId")).Scan(&recorded); err != nil || recorded != 1 {
				t.Errorf("the synchronous WITHDRAW_REQUEST recorded %d times (%v), want once", recorded, err)
			}
			if c.code == 0 {
				if err != nil || w.Status != "PENDING" || n != 1 || w.ID != got[0].Get("withdrawRequestId") {
					t.Fatalf("approval: %+v, %v, %d records", w, err, n)
				}
				return
			}
			fe := faultOf(err)
			if fe.Code != fault.WithdrawDenied || fe.Message != c.message || fe.Details["errorCode"] != c.code {
				t.Fatalf("refusal: %v (details %v); want WITHDRAW_DENIED %d %q", err, fe.Details, c.code, c.message)
			}
			if n != 0 {
				t.Fatalf("a refused withdrawal left %d records", n)
			}
		})
	}
}

// TestAdminTwoStepPaysOnce: PENDING → PROCESSING → COMPLETED pays the destination exactly once
// on-chain and queues one WITHDRAW_COMPLETE whose cryptoAmountSent is the request's; repeating
// COMPLETED pays nothing more; every step is in the audit trail.
func TestAdminTwoStepPaysOnce(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	dest := newAddress()
	w := e.submit(e.withdrawSession(op, "user-1", "40.00"), dest, "USDT")
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a@x", "jump"); faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("PENDING → COMPLETED: %v", err)
	}
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalProcessing, "admin:a@x", "checked"); err != nil {
		t.Fatal(err)
	}
	for range 3 { // the admin clicks COMPLETED three times
		got, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a@x", "pay")
		if err != nil || got.Status != "PROCESSING" {
			t.Fatalf("COMPLETED while paying: %+v, %v", got.Status, err)
		}
	}
	e.payAll()
	got := e.get(w.ID)
	if got.Status != "COMPLETED" || got.SettlementTxHash == "" || got.CompletedAt == nil {
		t.Fatalf("after the payout: %+v", got)
	}
	// A retry after the payout (its first answer lost) answers COMPLETED and pays nothing.
	if again, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalCompleted, "admin:a@x", "retry"); err != nil || again.Status != "COMPLETED" {
		t.Fatalf("COMPLETED retried once completed: %+v, %v", again.Status, err)
	}
	e.payAll()
	if bal := e.tokenBalance(dest); bal.Cmp(big.NewInt(40_000_000)) != 0 {
		t.Fatalf("destination holds %s, want 40000000", bal)
	}
	if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 1 {
		t.Fatalf("%d WITHDRAW_COMPLETE events", n)
	}
	body := e.completeBody(w.ID)
	if body["status"] != "COMPLETED" || body["cryptoAmountSent"] != "40.000000" || body["withdrawRequestId"] != w.ID ||
		body["address"] != dest.Hex() || body["cryptoAmount"] != "null" || body["amountInUsd"] != "40.000000" ||
		body["operatorReference"] != "null" {
		t.Fatalf("WITHDRAW_COMPLETE: %v", body)
	}
	txs := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout'`)
	if txs != 1 {
		t.Fatalf("%d payout transactions", txs)
	}
	trail, _ := store.New(e.pool).WithdrawalTransitions(e.ctx, w.ID)
	var steps []string
	for _, tr := range trail {
		steps = append(steps, string(tr.From)+">"+string(tr.To)+" "+string(tr.Actor))
	}
	want := []string{"PENDING>PROCESSING admin:a@x", "PROCESSING>PROCESSING admin:a@x", "PROCESSING>COMPLETED system"}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Fatalf("audit trail %v, want %v", steps, want)
	}
	// REJECTED is refused once COMPLETED; a rejected PROCESSING withdrawal is never paid.
	if _, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w.ID, domain.WithdrawalRejected, "admin:a@x", ""); faultOf(err).Code != fault.FailedPrecondition {
		t.Fatalf("REJECTED after COMPLETED: %v", err)
	}
	w2 := e.submit(e.withdrawSession(op, "user-2", "5.00"), newAddress(), "USDT")
	e.admin(w2.ID, domain.WithdrawalProcessing)
	if got, err := e.svc.AdminStatus(e.ctx, domain.AllOperators(), w2.ID, domain.WithdrawalRejected, "admin:a@x", "KYC"); err != nil || got.Status != "REJECTED" {
		t.Fatalf("reject: %+v %v", got.Status, err)
	}
	if n := e.events("WITHDRAW_COMPLETE", w2.ID); n != 0 {
		t.Fatal("a rejected withdrawal emitted WITHDRAW_COMPLETE")
	}
}

// TestNativePayout pays ETH, to a plain address and to a smart-contract wallet (here a
// contract that stores what it receives, as a Safe runs code on receipt): a transfer limited
// to a plain transfer's 21,000 gas reverted there and left the withdrawal for an engineer.
func TestNativePayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		dest func(e *env) common.Address
	}{
		{"address", func(*env) common.Address { return newAddress() }},
		{"contract wallet", func(e *env) common.Address {
			dest, err := e.dev.DeployContractWallet(e.ctx)
			if err != nil {
				e.t.Fatal(err)
			}
			return dest
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, op := setupOperator(t, domain.OperatorSettings{})
			dest := tc.dest(e)
			w := e.submit(e.withdrawSession(op, "user-eth", "30.00"), dest, "ETH")
			if withdrawal.SentAmount(w) != "0.010000000000000000" {
				t.Fatalf("30 USD at 3000 = %s ETH", withdrawal.SentAmount(w))
			}
			e.complete(w.ID)
			e.payAll()
			bal, err := e.client.Balance(e.ctx, dest)
			if err != nil || bal.Cmp(new(big.Int).Div(testfactory.Ether(1), big.NewInt(100))) != 0 {
				t.Fatalf("%s holds %s wei (%v)", dest, bal, err)
			}
		})
	}
}

// TestDestinationChecks: malformed, wrong checksum, zero, token contract and service wallets
// are refused before anything is sent or stored.
func TestDestinationChecks(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	sess := e.withdrawSession(op, "user-1", "10.00")
	lower := "0x52908400098527886e0f7030069857d2e4169ee7"
	for _, c := range []struct{ addr, want string }{
		{"0x1234", "20-byte"},
		{"52908400098527886E0F7030069857D2E4169EE7", "0x-prefixed"},
		{"0x52908400098527886e0F7030069857D2E4169EE7", "checksum"},
		{"0x0000000000000000000000000000000000000000", "zero address"},
		{e.usdt.Address.Hex(), "token contract"},
		{e.hot.Hex(), "belongs to the service"},
	} {
		_, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: c.addr, Currency: "USDT", ChainID: e.dev.ChainID()})
		fe := faultOf(err)
		if fe.Code != fault.InvalidArgument || fe.Field != "address" || !strings.Contains(fe.Message, c.want) {
			t.Errorf("%s: %v; want INVALID_ARGUMENT address %q", c.addr, err, c.want)
		}
	}
	if len(e.recv.received()) != 0 {
		t.Fatal("a refused address reached the operator")
	}
	// All-lowercase (no checksum) is accepted and stored EIP-55.
	w := e.submit(sess, common.HexToAddress(lower), "USDT")
	if w.Address != "0x52908400098527886E0F7030069857D2E4169EE7" {
		t.Fatalf("stored %s", w.Address)
	}
	if _, err := e.svc.Submit(e.ctx, sess, withdrawal.Submission{Address: lower, Currency: "DOGE", ChainID: e.dev.ChainID()}); faultOf(err).Field != "currency" {
		t.Fatalf("unknown currency: %v", err)
	}
}

// TestSupersedeAndSessionCancel: a newer submission cancels the open earlier one; a cancelled
// session cancels its open withdrawals; an unactioned withdrawal past the TTL expires; none
// of them can be paid afterwards.
func TestSupersedeAndSessionCancel(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, modeB(domain.OperatorSettings{}))
	sess := e.withdrawSession(op, "user-1", "10.00")
	first := e.submit(sess, newAddress(), "USDT")
	second := e.submit(sess, newAddress(), "USDT")
	if got := e.get(first.ID); got.Status != "CANCELLED" {
		t.Fatalf("superseded withdrawal is %s", got.Status)
	}
	if second.Status != "AWAITING_APPROVAL" || e.events("WITHDRAW_REQUEST", second.ID) != 1 {
		t.Fatalf("mode B submission: %s, %d events", second.Status, e.events("WITHDRAW_REQUEST", second.ID))
	}
	// A decision on a cancelled withdrawal answers its status and pays nothing.
	if d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), first.ID, withdrawal.OperatorApprove, "operator:x", ""); err != nil ||
		d.Withdrawal.Status != "CANCELLED" || d.Held != "" || d.Withdrawal.PayoutQueuedAt != nil {
		t.Fatalf("approving a cancelled withdrawal: %+v %v", d, err)
	}
	if _, err := e.sessions.Cancel(e.ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.SessionCancelled(e.ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	if got := e.get(second.ID); got.Status != "CANCELLED" {
		t.Fatalf("withdrawal of a cancelled session is %s", got.Status)
	}
	// Expiry: a withdrawal whose deadline passed is expired by the sweep, and an APPROVE that
	// comes before the sweep is held EXPIRED.
	third := e.submit(e.withdrawSession(op, "user-2", "10.00"), newAddress(), "USDT")
	e.exec(`UPDATE withdrawals SET expires_at = now() - interval '1 second' WHERE id = $1`, third.ID)
	d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), third.ID, withdrawal.OperatorApprove, "operator:x", "")
	if err != nil || d.Held != withdrawal.HeldExpired || d.Withdrawal.Status != "AWAITING_APPROVAL" {
		t.Fatalf("late APPROVE: %+v %v", d, err)
	}
	swept, err := e.svc.Sweep(e.ctx)
	if err != nil || swept.Expired != 1 {
		t.Fatalf("sweep: %+v %v", swept, err)
	}
	if got := e.get(third.ID); got.Status != "EXPIRED" {
		t.Fatalf("expired withdrawal is %s", got.Status)
	}
	// What was seen: APPROVE after the sweep answered 422. It is held EXPIRED, status EXPIRED.
	for _, approve := range []withdrawal.Action{withdrawal.OperatorApprove, withdrawal.AdminApprove} {
		d, err = e.svc.Decide(e.ctx, domain.Operators(op.ID), third.ID, approve, "operator:x", "")
		if err != nil || d.Held != withdrawal.HeldExpired || d.Withdrawal.Status != "EXPIRED" || d.Withdrawal.PayoutQueuedAt != nil {
			t.Fatalf("APPROVE on an EXPIRED withdrawal (%s): %+v %v", approve, d, err)
		}
	}
	paid := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout'`)
	if paid != 0 {
		t.Fatalf("%d payouts for withdrawals that were never approved", paid)
	}
}

// TestModeBDecisions: held reasons, caps within and over, REJECT without payout or webhook,
// repeated decisions, another operator refused, the panel override.
func TestModeBDecisions(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	enabled, disabled, inactive := true, false, false
	perTx, daily := "50", "100"
	op := e.operator(modeB(domain.OperatorSettings{PerTxCap: &perTx, DailyCap: &daily}))
	other := e.operator(modeB(domain.OperatorSettings{}))
	decide := func(id string, approve bool) withdrawal.Decided {
		t.Helper()
		action := withdrawal.OperatorReject
		if approve {
			action = withdrawal.OperatorApprove
		}
		d, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), id, action, domain.OperatorActor(op.ID), "")
		if err != nil {
			t.Fatalf("decide %s: %v", id, err)
		}
		return d
	}
	n := 0
	submit := func(amount string) domain.Withdrawal {
		n++
		return e.submit(e.withdrawSession(op, fmt.Sprintf("user-%d", n), amount), newAddress(), "USDT")
	}
	over := submit("50.01")
	if d := decide(over.ID, true); d.Held != withdrawal.CapExceeded || d.Withdrawal.Status != "AWAITING_APPROVAL" {
		t.Fatalf("over the per-transaction cap: %+v", d)
	}
	within := submit("50.00")
	if d := decide(within.ID, true); d.Held != "" || d.Withdrawal.PayoutQueuedAt == nil {
		t.Fatalf("within the caps: %+v", d)
	}
	second := submit("50.00")
	if d := decide(second.ID, true); d.Held != "" {
		t.Fatalf("second 50 (total 100 = daily cap): %+v", d)
	}
	third := submit("0.01")
	if d := decide(third.ID, true); d.Held != withdrawal.CapExceeded {
		t.Fatalf("over the daily cap: %+v", d)
	}
	// An action that is not a decision (the admin two-step's) is refused before anything is read.
	for _, a := range []withdrawal.Action{withdrawal.AdminComplete, withdrawal.AdminProcess, withdrawal.PayoutConfirmed, ""} {
		if _, err := e.svc.Decide(e.ctx, domain.Operators(op.ID), third.ID, a, domain.OperatorActor(op.ID), ""); faultOf(err).Code != fault.InvalidArgument {
			t.Fatalf("Decide with %q: %v", a, err)
		}
	}
	if got := e.get(third.ID); got.Status != "AWAITING_APPROVAL" || got.PayoutQueuedAt != nil {
		t.Fatalf("after refused actions: %+v", got)
	}
	// Another operator's key: not found, nothing changes.
	if _, err := e.svc.Decide(e.ctx, domain.Operators(other.ID), third.ID, withdrawal.OperatorReject, domain.OperatorActor(other.ID), ""); faultOf(err).Code != fault.NotFound {
		t.Fatalf("other operator: %v", err)
	}
	rejected := submit("10.00")
	if d := decide(rejected.ID, false); d.Withdrawal.Status != "REJECTED" {
		t.Fatalf("reject: %+v", d)
	}
	if d := decide(rejected.ID, true); d.Withdrawal.Status != "REJECTED" || d.Held != "" || d.Withdrawal.PayoutQueuedAt != nil {
		t.Fatalf("APPROVE after REJECT: %+v", d)
	}
	e.payAll()
	for _, w := range []domain.Withdrawal{within, second} {
		if d := decide(w.ID, true); d.Withdrawal.Status != "COMPLETED" || d.Withdrawal.SettlementTxHash == "" {
			t.Fatalf("repeated APPROVE after settlement: %+v", d)
		}
		if d := decide(w.ID, false); d.Withdrawal.Status != "COMPLETED" {
			t.Fatalf("REJECT after settlement: %+v", d)
		}
		if e.events("WITHDRAW_COMPLETE", w.ID) != 1 {
			t.Fatalf("%s: %d WITHDRAW_COMPLETE", w.ID, e.events("WITHDRAW_COMPLETE", w.ID))
		}
	}
	if e.events("WITHDRAW_COMPLETE", rejected.ID) != 0 {
		t.Fatal("a rejected withdrawal emitted WITHDRAW_COMPLETE")
	}
	payouts := e.count(`SELECT count(*) FROM chain_txs WHERE purpose = 'payout'`)
	if payouts != 2 {
		t.Fatalf("%d payouts, want 2", payouts)
	}
	// Held reasons of the operator's state and the hot wallet's liquidity.
	if _, err := e.ops.Update(e.ctx, op.ID, domain.OperatorSettings{ApprovalEnabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	if d := decide(third.ID, true); d.Held != withdrawal.ApprovalNotEnabled {
		t.Fatalf("approval disabled: %+v", d)
	}
	e.update(op, domain.OperatorSettings{ApprovalEnabled: &enabled, Active: &inactive})
	if d := decide(third.ID, true); d.Held != withdrawal.OperatorInactive {
		t.Fatalf("inactive: %+v", d)
	}
	noCap := ""
	whaleOp := e.operator(modeB(domain.OperatorSettings{PerTxCap: &noCap, DailyCap: &noCap}))
	huge := e.submit(e.withdrawSession(whaleOp, "whale", "20000.00"), newAddress(), "USDT") // the hot wallet holds 10,000 − 100
	if d, err := e.svc.Decide(e.ctx, domain.Operators(whaleOp.ID), huge.ID, withdrawal.OperatorApprove, "operator:x", ""); err != nil || d.Held != withdrawal.TemporarilyUnavailable {
		t.Fatalf("beyond the hot wallet: %+v %v", d, err)
	}
	// The panel override: an admin approves with the same checks, and the trail names the admin.
	small := e.submit(e.withdrawSession(whaleOp, "minnow", "1.00"), newAddress(), "USDT")
	d, err := e.svc.Decide(e.ctx, domain.AllOperators(), small.ID, withdrawal.AdminApprove, "admin:ops@x", "called the user")
	if err != nil || d.Held != "" || d.Withdrawal.PayoutQueuedAt == nil {
		t.Fatalf("override: %+v %v", d, err)
	}
	e.payAll()
	if got := e.get(small.ID); got.Status != "COMPLETED" || got.AdminNote != "called the user" {
		t.Fatalf("after override: %+v", got)
	}
}

// TestConcurrentApprovalsRespectTheDailyCap: 20 concurrent APPROVEs of 10.00 each against a
// daily cap of 95.00 settle exactly 9; the rest are held CAP_EXCEEDED.
func TestConcurrentApprovalsRespectTheDailyCap(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	daily := "95"
	op := e.operator(modeB(domain.OperatorSettings{DailyCap: &daily}))
	var ids []string
	for i := range 20 {
		ids = append(ids, e.submit(e.withdrawSession(op, fmt.Sprintf("u%d", i), "10.00"), newAddress(), "USDT").ID)
	}
	var wg sync.WaitGroup
	results := make([]withdrawal.Decided, len(ids))
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() {
			results[i], errs[i] = e.svc.Decide(e.ctx, domain.Operators(op.ID), id, withdrawal.OperatorApprove, domain.OperatorActor(op.ID), "")
		})
	}
	wg.Wait()
	approved, held := 0, 0
	for i := range ids {
		switch {
		case errs[i] != nil:
			t.Fatalf("decide: %v", errs[i])
		case results[i].Held == withdrawal.CapExceeded:
			held++
		case results[i].Held == "":
			approved++
		default:
			t.Fatalf("held %s", results[i].Held)
		}
	}
	if approved != 9 || held != 11 {
		t.Fatalf("%d approved, %d held; want 9 and 11", approved, held)
	}
	e.payAll()
	var sum int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(crypto_amount), 0)::bigint FROM withdrawals WHERE status = 'COMPLETED'`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 90_000_000 {
		t.Fatalf("paid %d units, want 90000000", sum)
	}
}

// crashAt makes the engine panic once at a step (a crash there); the caller recovers, the
// database transaction in progress rolls back, as in a killed process.
type crashAt struct {
	mu    sync.Mutex
	step  string
	fired int
}

func (c *crashAt) hook(step string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if step == c.step {
		c.step = ""
		c.fired++
		panic("crash at " + step)
	}
}

func (c *crashAt) arm(step string) {
	c.mu.Lock()
	c.step = step
	c.mu.Unlock()
}

// TestPayoutCrashSafety crashes the payout 60 times (12 withdrawals × 5 steps: after nonce
// allocation, after signing, after storing, after broadcast, before the receipt), each time
// picking up again as a restarted worker does: exactly one transaction is mined per
// withdrawal, the hot wallet's nonces have no gaps, and each has one WITHDRAW_COMPLETE.
func TestPayoutCrashSafety(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	crash := &crashAt{}
	e.engine.Crash = crash.hook
	op := e.operator(domain.OperatorSettings{})
	steps := []string{chaintx.StepNonce, chaintx.StepSigned, chaintx.StepStored, chaintx.StepBroadcast, chaintx.StepReceipt}
	startNonce, err := e.client.Nonce(e.ctx, e.hot, false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	dests := map[string]common.Address{}
	for i := range 12 {
		dest := newAddress()
		w := e.submit(e.withdrawSession(op, fmt.Sprintf("crash-%d", i), "3.00"), dest, "USDT")
		e.complete(w.ID)
		ids, dests[w.ID] = append(ids, w.ID), dest
	}
	pay := func(id string) (done bool, crashed bool) {
		defer func() {
			if r := recover(); r != nil {
				crashed = true
			}
		}()
		done, err := e.svc.Pay(e.ctx, id)
		if err != nil {
			t.Fatalf("pay %s: %v", id, err)
		}
		return done, false
	}
	for _, id := range ids {
		for _, step := range steps {
			crash.arm(step)
			for range 20 {
				done, crashed := pay(id)
				if crashed || done {
					break
				}
				e.dev.Commit()
			}
		}
		crash.arm("")
	}
	e.payAll()
	if crash.fired < 50 {
		t.Fatalf("only %d crashes happened", crash.fired)
	}
	rows, _ := e.pool.Query(e.ctx, `SELECT ref, nonce, state FROM chain_txs WHERE purpose = 'payout' ORDER BY nonce`)
	type row struct {
		Ref   string
		Nonce int64
		State string
	}
	txs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != len(ids) {
		t.Fatalf("%d payout transactions for %d withdrawals", len(txs), len(ids))
	}
	for i, tx := range txs {
		if tx.Nonce != int64(startNonce)+int64(i) || tx.State != "mined" {
			t.Fatalf("payout %d: nonce %d (want %d), %s", i, tx.Nonce, int64(startNonce)+int64(i), tx.State)
		}
	}
	endNonce, _ := e.client.Nonce(e.ctx, e.hot, false)
	if endNonce != startNonce+uint64(len(ids)) {
		t.Fatalf("the hot wallet sent %d transactions for %d withdrawals", endNonce-startNonce, len(ids))
	}
	for _, id := range ids {
		if got := e.get(id); got.Status != "COMPLETED" {
			t.Fatalf("%s is %s", id, got.Status)
		}
		if bal := e.tokenBalance(dests[id]); bal.Cmp(big.NewInt(3_000_000)) != 0 {
			t.Fatalf("%s received %s", id, bal)
		}
		if n := e.events("WITHDRAW_COMPLETE", id); n != 1 {
			t.Fatalf("%s: %d WITHDRAW_COMPLETE", id, n)
		}
	}
	// The books after the crashes: each payout reserved and settled once, and the hot wallet
	// still covers every operator's funds.
	if f := e.funds(op, "USDT"); f.Available.Int64() != 1000_000_000-12*3_000_000 || f.Reserved.Sign() != 0 {
		t.Fatalf("operator funds after the payouts: %+v", f)
	}
	var reserves, settles int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FILTER (WHERE kind = 'RESERVE'), count(*) FILTER (WHERE kind = 'SETTLE') FROM fund_entries
		WHERE operator_id = $1`, op.ID).Scan(&reserves, &settles); err != nil {
		t.Fatal(err)
	}
	if reserves != 12 || settles != 12 {
		t.Fatalf("%d reservations, %d settlements for 12 payouts", reserves, settles)
	}
	lines, err := (&funds.Reconciler{Ledger: e.ledger, Clients: map[int64]*chain.Client{e.dev.ChainID(): e.client}, HotWallet: e.hot}).
		Reconcile(e.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !l.OK {
			t.Fatalf("reconciliation after the crashes: %+v", l)
		}
	}
	t.Logf("%d crashes survived", crash.fired)
}

// TestOffRampPaysTheProvider: an OFF_RAMP withdrawal is paid to the provider's address and the
// provider is told once the payout confirmed.
func TestOffRampPaysTheProvider(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	w, err := e.svc.Submit(e.ctx, e.withdrawSession(op, "seller", "12.00"), withdrawal.Submission{Address: newAddress().Hex(),
		Currency: "USDT", ChainID: e.dev.ChainID(), Type: withdrawal.OffRampType})
	if err != nil {
		t.Fatal(err)
	}
	if w.Type != "OFF_RAMP" || w.Address != withdrawal.DevOffRampAddress().Hex() || w.OfframpRef == "" {
		t.Fatalf("off-ramp withdrawal: %+v", w)
	}
	got := e.recv.received()
	if len(got) != 1 || got[0].Get("type") != "OFF_RAMP" {
		t.Fatalf("WITHDRAW_REQUEST: %v", got)
	}
	e.complete(w.ID)
	e.payAll()
	if bal := e.tokenBalance(withdrawal.DevOffRampAddress()); bal.Cmp(big.NewInt(12_000_000)) != 0 {
		t.Fatalf("provider received %s", bal)
	}
	if h, ok := e.offramp.PaidOrder(w.OfframpRef); !ok || h.Hex() != e.get(w.ID).SettlementTxHash {
		t.Fatalf("provider told %v %v", h, ok)
	}
}

// TestPayoutReorg: the block holding a payout leaves the chain before the payout has its
// confirmations; the payout is sent again (the same signed bytes, the same nonce) and the
// withdrawal completes once, pointing at the block that holds it now.
func TestPayoutReorg(t *testing.T) {
	t.Parallel()
	e, op := setupOperator(t, domain.OperatorSettings{})
	dest := newAddress()
	w := e.submit(e.withdrawSession(op, "user-reorg", "8.00"), dest, "USDT")
	e.complete(w.ID)
	parent, err := e.client.Header(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	startNonce, _ := e.client.Nonce(e.ctx, e.hot, false)
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
		t.Fatalf("first pass: %v %v", done, err)
	}
	e.dev.Commit() // the payout is mined in block parent+1
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
		t.Fatalf("mined, not confirmed: %v %v", done, err)
	}
	var minedBlock int64
	if err := e.pool.QueryRow(e.ctx, `SELECT mined_block FROM chain_txs WHERE purpose = 'payout'`).Scan(&minedBlock); err != nil {
		t.Fatal(err)
	}
	if uint64(minedBlock) != parent.Number.Uint64()+1 {
		t.Fatalf("payout mined in %d", minedBlock)
	}
	// A longer branch without the payout replaces that block.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	e.dev.Rollback()
	e.dev.Commit()
	e.dev.Commit()
	e.payAll()
	got := e.get(w.ID)
	receipt, err := e.client.Receipt(e.ctx, common.HexToHash(got.SettlementTxHash))
	if err != nil || got.Status != "COMPLETED" || receipt.Status != 1 {
		t.Fatalf("after the reorg: %+v, receipt %v %v", got, receipt, err)
	}
	if receipt.BlockNumber.Uint64() <= parent.Number.Uint64()+1 {
		t.Fatalf("settled in block %d, which the reorg replaced", receipt.BlockNumber)
	}
	if n, _ := e.client.Nonce(e.ctx, e.hot, false); n != startNonce+1 {
		t.Fatalf("the hot wallet sent %d transactions", n-startNonce)
	}
	if bal := e.tokenBalance(dest); bal.Cmp(big.NewInt(8_000_000)) != 0 {
		t.Fatalf("destination holds %s", bal)
	}
	if n := e.events("WITHDRAW_COMPLETE", w.ID); n != 1 {
		t.Fatalf("%d WITHDRAW_COMPLETE", n)
	}
}
