package deposit_test

import (
	"context"
	"crypto/ecdsa"
	"log/slog"
	"math/big"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
	"github.com/cofferhq/coffer/server/internal/wallet"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// recorder stands in for the outbox: it records the DEPOSIT events queued in committed
// transactions (the outbox itself is tested in package webhook, and end to end).
type recorder struct {
	mu     sync.Mutex
	events []*cofferv1.DepositEvent
}

func (r *recorder) Enqueue(_ context.Context, tx pgx.Tx, e webhook.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e.Message.(*cofferv1.DepositEvent))
	return nil
}

func (r *recorder) all() []*cofferv1.DepositEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*cofferv1.DepositEvent(nil), r.events...)
}

type env struct {
	t        *testing.T
	ctx      context.Context //nolint:containedctx // the test's context: the env lives exactly as long as the test
	dev      *devchain.Chain
	pool     *pgxpool.Pool
	svc      *deposit.Service
	engine   *chaintx.Engine
	hooks    *recorder
	sessions *session.Service
	op       domain.Operator
	client   *chain.Client
	bankroll common.Address
	gasTank  common.Address
	network  chain.Network
	usdt     devchain.Token
	keys     *wallet.Keys
	// deps and config built svc: another worker's service is deposit.New(deps, config).
	deps   deposit.Deps
	config deposit.Config
}

const confirmations = 3

// replayer is who replays in these tests (Deposit.ReplayedBy).
var replayer = domain.ServiceTeamActor("test")

// options adjust setup.
type options struct {
	feeBps int32
	// contractWallets: the bankroll and the fee address are contracts that need more than
	// 21,000 gas to receive ETH (as a Safe does).
	contractWallets bool
	// network changes the chain's settings (minimums, fee address).
	network func(*chain.Network)
	// prices replaces the static dev prices.
	prices func(dev *devchain.Chain) deposit.Prices
	config deposit.Config
	// batched: the chain sweeps token deposits in EIP-7702 batches (a Sweeper is deployed).
	batched bool
	// sweeperPays, when set, is where the deployed Sweeper pays instead of the bankroll (a
	// misconfigured sweeperAddress).
	sweeperPays common.Address
	// log, when set, receives the service's logs (discarded otherwise).
	log *slog.Logger
}

// setup starts a dev chain, a database and the pipeline; opts adjust the chain's network.
func setup(t *testing.T, feeBps int32, opts ...func(*chain.Network)) *env {
	t.Helper()
	return setupWith(t, options{feeBps: feeBps, network: func(n *chain.Network) {
		for _, o := range opts {
			o(n)
		}
	}})
}

func setupWith(t *testing.T, o options) *env {
	t.Helper()
	feeBps := o.feeBps
	ctx := context.Background()
	dev := testfactory.DevChain(ctx, t, devchain.Options{HTTPAddr: "127.0.0.1:0"})
	pool := testdb.New(t)
	box, _ := secret.NewBox(secret.Random(32))
	name, hook := "Op", "https://op.example/hook"
	op, _, err := operator.New(pool, box).Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &hook, DepositFeeBps: &feeBps})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := wallet.FromSeed(secret.Random(64))
	if err != nil {
		t.Fatal(err)
	}
	_, gasTank := keys.GasTank()
	_, bankroll := keys.DevBankroll()
	var feeWallet common.Address
	if o.contractWallets {
		if bankroll, err = dev.DeployContractWallet(ctx); err != nil {
			t.Fatal(err)
		}
		if feeWallet, err = dev.DeployContractWallet(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testfactory.Fund(ctx, t, dev, gasTank, 100, 0)
	usdt, _ := dev.Token("USDT")
	usdc, _ := dev.Token("USDC")
	n := chain.Network{ChainID: dev.ChainID(), Name: "Dev", RPCURLs: []string{dev.RPCURL()}, Confirmations: confirmations,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: bankroll,
		Tokens:     []chain.Token{{Symbol: "USDT", ContractAddress: usdt.Address, Decimals: 6}, {Symbol: "USDC", ContractAddress: usdc.Address, Decimals: 6}},
		FeeAddress: feeWallet}
	if o.network != nil {
		o.network(&n)
	}
	if o.batched {
		pays := bankroll
		if o.sweeperPays != (common.Address{}) {
			pays = o.sweeperPays
		}
		sweeper, err := dev.DeploySweeper(ctx, gasTank, pays, n.FeeAddress)
		if err != nil {
			t.Fatal(err)
		}
		n.SweepMethod, n.SweeperAddress = chain.SweepEIP7702, sweeper
	}
	registry, client := testfactory.Dial(t, n)
	clients := map[int64]*chain.Client{n.ChainID: client}
	log := slog.New(slog.DiscardHandler)
	if o.log != nil {
		log = o.log
	}
	engine := chaintx.New(pool, clients, deposit.KeyRing{Keys: keys, Pool: pool}, log)
	// Blocks come at once here: a refused broadcast (a replacement waiting for its top-up) is
	// asked again on the next pass, not seconds later (chaintx tests the pause).
	engine.RefusedRetry = 0
	hooks := &recorder{}
	var prices deposit.Prices = rates.NewChain(nil, rates.DevStatic())
	if o.prices != nil {
		prices = o.prices(dev)
	}
	ins := jobs.NewInserter()
	deps := deposit.Deps{Pool: pool, Chains: chain.Connected{Registry: registry, Clients: clients}, Engine: engine, Wallet: keys.Public(),
		Prices: prices, Webhooks: hooks, River: ins, Log: log}
	svc := deposit.New(deps, o.config)
	workers := river.NewWorkers()
	river.AddWorker(workers, &deposit.ScanWorker{Service: svc})
	river.AddWorker(workers, &deposit.SettleWorker{Service: svc})
	if _, err := jobs.NewClient(pool, log, jobs.Options{Workers: workers, Inserter: ins}); err != nil {
		t.Fatal(err)
	}
	n, _ = registry.Network(n.ChainID)
	e := &env{t: t, ctx: ctx, dev: dev, pool: pool, svc: svc, engine: engine, hooks: hooks, op: op, client: client, bankroll: bankroll,
		gasTank: gasTank, network: n, usdt: usdt, keys: keys, deps: deps, config: o.config,
		sessions: session.New(pool, session.Config{WidgetURL: "https://w.example", Currencies: rates.DevStatic()})}
	e.scan() // the first pass creates the cursor
	return e
}

func (e *env) scan() {
	e.t.Helper()
	if err := e.svc.Scan(e.ctx, e.dev.ChainID()); err != nil {
		e.t.Fatalf("scan: %v", err)
	}
}

// unsettled lists the deposits not yet settled (CONFIRMING or SWEEPING), oldest first.
func (e *env) unsettled() []int64 {
	e.t.Helper()
	return testfactory.Column[int64](e.ctx, e.t, e.pool, `SELECT id FROM deposits WHERE status IN ('CONFIRMING', 'SWEEPING') ORDER BY id`)
}

// settleAll advances every deposit not yet settled.
func (e *env) settleAll() {
	e.t.Helper()
	for _, id := range e.unsettled() {
		if _, err := e.svc.Settle(e.ctx, id); err != nil {
			e.t.Fatalf("settle %d: %v", id, err)
		}
	}
}

// runBlocks mines n blocks, scanning and settling after each.
func (e *env) runBlocks(n int) {
	e.t.Helper()
	for range n {
		e.dev.Commit()
		e.scan()
		e.settleAll()
	}
}

// run mines blocks, scanning and settling after each, until cond holds.
func (e *env) run(cond func() bool) {
	e.t.Helper()
	for range 20 {
		e.scan()
		e.settleAll()
		if cond() {
			return
		}
		e.dev.Commit()
	}
	e.t.Fatal("condition not reached after 20 blocks")
}

func (e *env) deposit(id int64) domain.Deposit {
	e.t.Helper()
	d, err := store.New(e.pool).GetDeposit(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) depositsWhere(status string) []domain.Deposit {
	e.t.Helper()
	return e.depositsIn(`SELECT id FROM deposits WHERE status = $1 ORDER BY id`, status)
}

// depositsIn reads the deposits whose ids query selects, in its order.
func (e *env) depositsIn(query string, args ...any) []domain.Deposit {
	e.t.Helper()
	ids := testfactory.Column[int64](e.ctx, e.t, e.pool, query, args...)
	out := make([]domain.Deposit, len(ids))
	for i, id := range ids {
		out[i] = e.deposit(id)
	}
	return out
}

func (e *env) tokenBalance(owner common.Address) *big.Int {
	e.t.Helper()
	return testfactory.TokenBalance(e.ctx, e.t, e.client, e.usdt.Address, owner)
}

// user is a funded outside wallet that pays into deposit addresses.
type user struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

func (e *env) newUser() user {
	e.t.Helper()
	key, _ := crypto.GenerateKey()
	u := user{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}
	testfactory.Fund(e.ctx, e.t, e.dev, u.addr, 10, 1_000_000_000)
	return u
}

// address is the deposit address of the operator's user userID (assigned on first use).
func (e *env) address(userID string) common.Address {
	e.t.Helper()
	return e.userAddress(e.svc.AddressFor, userID)
}

// userAddress is the address lookup (AddressFor, TokenAddressFor) gives the operator's user
// userID.
func (e *env) userAddress(lookup func(ctx context.Context, operatorID, userID string) (common.Address, error), userID string) common.Address {
	e.t.Helper()
	addr, err := lookup(e.ctx, e.op.ID, userID)
	if err != nil {
		e.t.Fatalf("address of %s: %v", userID, err)
	}
	return addr
}

// payer is the deposit address of the operator's user userID and a new funded account to pay
// it from.
func (e *env) payer(userID string) (common.Address, user) {
	e.t.Helper()
	return e.address(userID), e.newUser()
}

// send signs and sends a transaction from u with an explicit nonce and tip.
func (e *env) send(u user, nonce uint64, to common.Address, value *big.Int, data []byte, tipGwei int64) *types.Transaction {
	e.t.Helper()
	tip := big.NewInt(tipGwei * 1e9)
	tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(big.NewInt(e.dev.ChainID())), &types.DynamicFeeTx{
		ChainID: big.NewInt(e.dev.ChainID()), Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Add(tip, big.NewInt(100e9)),
		Gas: 100000, To: &to, Value: value, Data: data})
	if err := e.client.Send(e.ctx, tx); err != nil {
		e.t.Fatal(err)
	}
	return tx
}

// mint mints amount of a dev token to an address and mines it.
func (e *env) mint(symbol string, to common.Address, amount int64) {
	e.t.Helper()
	e.mintTogether(symbol, []common.Address{to}, []int64{amount})
}

// mintTogether mints amounts[i] of a dev token to to[i], each, and mines them all.
func (e *env) mintTogether(symbol string, to []common.Address, amounts []int64) {
	e.t.Helper()
	hashes := make([]common.Hash, len(to))
	for i, addr := range to {
		h, err := e.dev.Mint(e.ctx, symbol, addr, big.NewInt(amounts[i]))
		if err != nil {
			e.t.Fatal(err)
		}
		hashes[i] = h
	}
	if _, err := e.dev.Mine(e.ctx, hashes...); err != nil {
		e.t.Fatal(err)
	}
}

// addressFor is what GetDepositAddress answers a session for a currency on the dev chain.
func (e *env) addressFor(sess domain.Session, currency string) deposit.AddressInfo {
	e.t.Helper()
	info, err := e.svc.Address(e.ctx, sess, currency, e.dev.ChainID())
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

// confirm seals blocks until the last one mined has the confirmation depth.
func (e *env) confirm() {
	for range confirmations {
		e.dev.Commit()
	}
}

// unseen confirms what was mined (confirm) while the scanner skips it: its cursor moves 10
// blocks on, past the transfers a replay then records.
func (e *env) unseen() {
	e.t.Helper()
	e.confirm()
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = next_block + 10`); err != nil {
		e.t.Fatal(err)
	}
}

// mine seals blocks until the transactions are included.
func (e *env) mine(txs ...*types.Transaction) {
	e.t.Helper()
	hashes := make([]common.Hash, len(txs))
	for i, tx := range txs {
		hashes[i] = tx.Hash()
	}
	if _, err := e.dev.Mine(e.ctx, hashes...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) openSession(userID string) domain.Session {
	e.t.Helper()
	o, err := e.sessions.Open(e.ctx, e.op, session.Deposit, session.Input{ExternalUserID: userID, Lang: "en", FiatCurrency: "EUR",
		UserBalance: "0", Amount: "23.00"})
	if err != nil {
		e.t.Fatal(err)
	}
	return o.Session
}

func TestERC20DepositIsSweptAndCreditedOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 150) // 1.5% deposit fee
	sess := e.openSession("user-1")
	info, err := e.svc.Address(e.ctx, sess, "usdt", e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	// 23.00 EUR at 0.92 EUR/USD and 1 USD/USDT is exactly 25 USDT.
	if info.Expected != "25.000000" || info.ExpectedUnits.Int64() != 25_000_000 || info.Decimals != 6 || info.ContractAddress != e.usdt.Address {
		t.Fatalf("address info %+v", info)
	}
	wantURI := "ethereum:" + e.usdt.Address.Hex() + "@1337/transfer?address=" + info.Address.Hex() + "&uint256=25000000"
	if info.PaymentURI != wantURI {
		t.Fatalf("payment URI %s, want %s", info.PaymentURI, wantURI)
	}
	again, _ := e.svc.Address(e.ctx, sess, "ETH", e.dev.ChainID())
	if again.Address != info.Address {
		t.Fatal("one address per user, on every asset")
	}

	u := e.newUser()
	tx := e.send(u, 0, e.usdt.Address, nil, erc20Transfer(info.Address, 25_000_000), 2)
	e.mine(tx)
	e.scan()
	detected := e.depositsWhere("CONFIRMING")
	if len(detected) != 1 || detected[0].TxHash != tx.Hash().Hex() || detected[0].SessionID != sess.ID || detected[0].GrossAmount.Int64() != 25_000_000 {
		t.Fatalf("detected %+v", detected)
	}
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.deposit(detected[0].ID)
	if d.Status != "CREDITED" || d.FeeAmount.Int64() != 375_000 || d.Amount.Int64() != 24_625_000 {
		t.Fatalf("credited %+v fee %v amount %v", d.Status, d.FeeAmount, d.Amount)
	}
	// The bankroll holds the net amount; the deposit address keeps the fee (no fee address set).
	if got := e.tokenBalance(e.bankroll); got.Int64() != 24_625_000 {
		t.Fatalf("bankroll holds %v", got)
	}
	if got := e.tokenBalance(info.Address); got.Int64() != 375_000 {
		t.Fatalf("deposit address holds %v", got)
	}
	ev := e.hooks.all()[0]
	want := map[string]string{"event": "DEPOSIT", "amount": "24625000", "grossAmount": "25000000", "feeAmount": "375000",
		"amountInDollar": "24.625000", "amountInLocalCurrency": "22.655000", "localCurrencyCode": "EUR", "currentRate": "0.92",
		"pair": "USD/EUR", "feeInDollar": "0.375000", "type": "ERC20", "contractAddress": e.usdt.Address.Hex(),
		"transactionHash": tx.Hash().Hex(), "sessionRef": sess.SessionRef, "sessionAmount": "23.00", "externalUserId": "user-1"}
	got := map[string]string{"event": ev.Event, "amount": ev.Amount, "grossAmount": ev.GrossAmount, "feeAmount": ev.FeeAmount,
		"amountInDollar": ev.GetAmountInDollar(), "amountInLocalCurrency": ev.GetAmountInLocalCurrency(), "localCurrencyCode": ev.LocalCurrencyCode,
		"currentRate": ev.CurrentRate, "pair": ev.Pair, "feeInDollar": ev.GetFeeInDollar(), "type": ev.Type, "contractAddress": ev.GetContractAddress(),
		"transactionHash": ev.GetTransactionHash(), "sessionRef": ev.GetSessionRef(), "sessionAmount": ev.GetSessionAmount(), "externalUserId": ev.ExternalUserId}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if ev.DepositId != d.ID || ev.ChainId != 1337 || ev.IdempotencyKey != deposit.IdempotencyKey(1337, tx.Hash(), 0) || ev.ConfirmedAt == nil {
		t.Errorf("ids: %+v", ev)
	}
	// Settling again, or scanning the same blocks again, changes nothing.
	for range 3 {
		e.dev.Commit()
		e.scan()
		if _, err := e.svc.Settle(e.ctx, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d DEPOSIT events, want 1", n)
	}
}

func TestNativeDepositPaysItsOwnSweepGas(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr := e.address("direct-user") // no session: a direct send
	before, _ := e.client.Balance(e.ctx, e.bankroll)
	u := e.newUser()
	e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.depositsWhere("CREDITED")[0]
	after, _ := e.client.Balance(e.ctx, e.bankroll)
	received := new(big.Int).Sub(after, before)
	if received.Cmp(d.Amount) != 0 || new(big.Int).Add(d.Amount, d.FeeAmount).Cmp(testfactory.Ether(1)) != 0 || d.FeeAmount.Sign() <= 0 {
		t.Fatalf("bankroll received %v; amount %v fee %v", received, d.Amount, d.FeeAmount)
	}
	ev := e.hooks.all()[0]
	if ev.Type != "NATIVE" || ev.ContractAddress != nil || ev.SessionRef != nil || ev.SessionAmount != nil ||
		ev.LocalCurrencyCode != "USD" || ev.CurrentRate != "1" || ev.GetAmountInDollar() != ev.GetAmountInLocalCurrency() {
		t.Fatalf("event %+v", ev)
	}
}

// A bankroll and a fee address that are smart-contract wallets (here contracts that store what
// they receive, as a Safe runs code on receipt) get native sweeps and fees: a transfer limited
// to a plain transfer's 21,000 gas reverted there and the deposit was never credited.
func TestNativeSweepToContractWallets(t *testing.T) {
	t.Parallel()
	e := setupWith(t, options{feeBps: 100, contractWallets: true})
	addr := e.address("safe-user")
	u := e.newUser()
	e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	d := e.depositsWhere("CREDITED")[0]
	if got, _ := e.client.Balance(e.ctx, e.bankroll); got.Cmp(d.Amount) != 0 {
		t.Fatalf("the bankroll contract received %v, the deposit's amount is %v", got, d.Amount)
	}
	fee, _ := e.client.Balance(e.ctx, e.network.FeeAddress)
	if want := new(big.Int).Div(testfactory.Ether(1), big.NewInt(100)); fee.Sign() <= 0 || fee.Cmp(want) >= 0 {
		t.Fatalf("the fee contract received %v, want the 1%% fee (%v) less its transfer's gas", fee, want)
	}
}

func TestGasTopUpIsNeverADeposit(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("u")
	e.send(u, 0, e.usdt.Address, nil, erc20Transfer(addr, 5_000_000), 2)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM deposits`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d deposits; the gas top-up to the deposit address must not count", n)
	}
}

// A reorg shallower than the confirmation depth: the transfer that does not survive it is never
// credited; the one re-mined in the new branch is credited once.
func TestReorgOrphansAndRecredits(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addrA := e.address("a")
	addrB := e.address("b")
	alice, bob := e.newUser(), e.newUser()
	parent := e.latestHeader()
	doomed := e.send(alice, 0, addrA, testfactory.Ether(1), nil, 2)
	survivor := e.send(bob, 0, addrB, testfactory.Ether(2), nil, 2)
	e.mine(doomed, survivor)
	e.scan()
	if got := e.depositsWhere("CONFIRMING"); len(got) != 2 {
		t.Fatalf("%d deposits detected before the reorg", len(got))
	}
	// The branch is abandoned one block deep. In the new branch alice spends the same nonce
	// elsewhere (so her transfer can never be mined again) while bob's is re-mined.
	if err := e.dev.Fork(parent.Hash()); err != nil {
		t.Fatal(err)
	}
	doubleSpend := e.send(alice, 0, common.HexToAddress("0x00000000000000000000000000000000000000c0"), testfactory.Ether(1), nil, 50)
	e.mine(doubleSpend)
	e.dev.Commit() // the new branch is now the longer one
	e.scan()       // detects the reorg and rolls back
	if got := e.deposit(e.findDeposit(doomed.Hash())); got.Status != "ORPHANED" {
		t.Fatalf("doomed transfer is %s after the reorg", got.Status)
	}
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	e.runBlocks(confirmations + 2)
	events := e.hooks.all()
	if len(events) != 1 || events[0].GetTransactionHash() != survivor.Hash().Hex() {
		t.Fatalf("events after the reorg: %d (want exactly the re-mined transfer)", len(events))
	}
	if got := e.deposit(e.findDeposit(doomed.Hash())); got.Status != "ORPHANED" {
		t.Fatalf("doomed transfer ended %s", got.Status)
	}
	receipt, err := e.client.Receipt(e.ctx, survivor.Hash())
	if err != nil || e.deposit(e.findDeposit(survivor.Hash())).BlockHash != receipt.BlockHash.Hex() {
		t.Fatalf("the credited deposit must point at the block that holds it now: %v", err)
	}
}

func (e *env) findDeposit(tx common.Hash) int64 {
	e.t.Helper()
	var id int64
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM deposits WHERE tx_hash = $1`, tx.Hex()).Scan(&id); err != nil {
		e.t.Fatalf("deposit of %s: %v", tx.Hex(), err)
	}
	return id
}

func TestReplay(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("u")
	reason := func(err error) string {
		fe := fault.As(err)
		r, _ := fe.Details["reason"].(string)
		return fe.Code.String() + "/" + r
	}

	// A transfer the scanner never saw (it started watching after it): too fresh first, then credited.
	missed := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(missed)
	if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash()); reason(err) != "FAILED_PRECONDITION/INSUFFICIENT_CONFIRMATIONS" {
		t.Fatalf("fresh: %v", err)
	}
	e.dev.Commit()
	e.dev.Commit()
	// Pretend the scanner skipped those blocks.
	if _, err := e.pool.Exec(e.ctx, `UPDATE chain_cursors SET next_block = next_block + 10`); err != nil {
		t.Fatal(err)
	}
	out, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash())
	if err != nil || out.AlreadyKnown || len(out.Deposits) != 1 || !out.Deposits[0].Manual || out.Deposits[0].Status != "SWEEPING" {
		t.Fatalf("replay: %+v %v", out, err)
	}
	// The audit keeps who replayed it, on the deposit.
	if got, err := store.New(e.pool).GetDeposit(e.ctx, out.Deposits[0].ID); err != nil || got.ReplayedBy != replayer {
		t.Fatalf("replayed by: %q %v", got.ReplayedBy, err)
	}
	for i := 0; i < 5 && len(e.hooks.all()) == 0; i++ {
		e.settleAll()
		e.dev.Commit()
	}
	if len(e.hooks.all()) != 1 {
		t.Fatal("the replayed deposit was not credited")
	}
	// Known hash: nothing changes.
	again, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash())
	if err != nil || !again.AlreadyKnown || again.Deposits[0].ID != out.Deposits[0].ID || len(e.hooks.all()) != 1 {
		t.Fatalf("known: %+v %v", again, err)
	}

	// A failed transaction: a transfer of more tokens than the sender holds reverts.
	failed := e.send(u, 1, e.usdt.Address, nil, erc20Transfer(addr, 1<<62), 2)
	// A transfer to a stranger's address.
	stranger := e.send(u, 2, common.HexToAddress("0x00000000000000000000000000000000000000d0"), testfactory.Ether(1), nil, 2)
	e.mine(failed, stranger)
	e.confirm()
	for _, c := range []struct {
		hash common.Hash
		want string
	}{
		{failed.Hash(), "FAILED_PRECONDITION/TX_FAILED"},
		{stranger.Hash(), "FAILED_PRECONDITION/NOT_A_DEPOSIT_ADDRESS"},
		{common.HexToHash("0x1234"), "NOT_FOUND/TX_NOT_FOUND"},
	} {
		if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, c.hash); reason(err) != c.want {
			t.Errorf("replay %s: %v, want %s", c.hash.Hex(), err, c.want)
		}
	}
	if _, err := e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 99, missed.Hash()); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("unknown chain: %v", err)
	}
	// An operator-scoped caller cannot replay a transfer to another operator's address.
	other := e.send(u, 3, addr, testfactory.Ether(1), nil, 2)
	e.mine(other)
	e.confirm()
	if _, err := e.svc.Replay(e.ctx, replayer, domain.Operators("00000000-0000-4000-8000-000000000000"), 1337, other.Hash()); reason(err) != "FAILED_PRECONDITION/NOT_A_DEPOSIT_ADDRESS" {
		t.Errorf("out-of-scope replay: %v", err)
	}
	if n := len(e.hooks.all()); n != 1 {
		t.Fatalf("%d events after refused replays", n)
	}
}

// Concurrent replays of one transaction (two admins, an admin and the CLI) credit it once,
// never answer INTERNAL, and only one of them reports it as new: the others answer it as
// already known. The test holds the transfer's row in an open transaction until both replays
// wait, so both have looked for the deposit and found none before either inserts it; it is
// then rolled back (the other writer gave up), or committed (another writer recorded it: a
// chain whose cursor did not exist yet, say), when no replay may report it new.
func TestConcurrentReplaysReportOneNewDeposit(t *testing.T) {
	t.Parallel()
	for _, commit := range []bool{false, true} {
		t.Run(map[bool]string{false: "the other writer gives up", true: "the other writer records it"}[commit], func(t *testing.T) {
			t.Parallel()
			concurrentReplays(t, commit)
		})
	}
}

func concurrentReplays(t *testing.T, commit bool) {
	t.Helper()
	e := setup(t, 0)
	addr, u := e.payer("u")
	missed := e.send(u, 0, addr, testfactory.Ether(1), nil, 2)
	e.mine(missed)
	e.unseen() // the scanner skipped those blocks
	key := deposit.IdempotencyKey(1337, missed.Hash(), -1)
	hold, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(e.ctx) //nolint:errcheck // rolled back below; this covers a failure before
	if _, _, err := store.New(hold).UpsertDeposit(e.ctx, domain.Deposit{OperatorID: e.op.ID, ExternalUserID: "u", ChainID: 1337,
		TxHash: missed.Hash().Hex(), LogIndex: -1, BlockNumber: 1, BlockHash: "0xb1", Address: addr.Hex(), Currency: "ETH",
		Decimals: 18, GrossAmount: testfactory.Ether(1), Status: domain.DepositConfirming, IdempotencyKey: key}); err != nil {
		t.Fatal(err)
	}
	const replays = 2
	outs := make([]deposit.Replayed, replays)
	errs := make([]error, replays)
	var wg sync.WaitGroup
	for i := range replays {
		wg.Go(func() { outs[i], errs[i] = e.svc.Replay(e.ctx, replayer, domain.AllOperators(), 1337, missed.Hash()) })
	}
	for waiting, deadline := 0, time.Now().Add(30*time.Second); waiting < replays; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d replays wait on the held row, want %d", waiting, replays)
		}
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	end := hold.Rollback
	if commit {
		end = hold.Commit
	}
	if err := end(e.ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	fresh := 0
	for i := range replays {
		if errs[i] != nil || len(outs[i].Deposits) != 1 || outs[i].Deposits[0].IdempotencyKey != key {
			t.Fatalf("replay %d: %+v %v", i, outs[i], errs[i])
		}
		if !outs[i].AlreadyKnown {
			fresh++
		}
	}
	if want := map[bool]int{false: 1, true: 0}[commit]; fresh != want {
		t.Errorf("%d of %d concurrent replays report a new deposit, want %d", fresh, replays, want)
	}
	if commit { // as the scanner would, once it has the depth
		e.scan()
	}
	for i := 0; i < 5 && len(e.hooks.all()) == 0; i++ {
		e.settleAll()
		e.dev.Commit()
	}
	if n := len(e.hooks.all()); n != 1 || e.count(`SELECT count(*) FROM deposits`) != 1 {
		t.Fatalf("%d DEPOSIT events, %d deposits; want one of each", n, e.count(`SELECT count(*) FROM deposits`))
	}
}

func erc20Transfer(to common.Address, amount int64) []byte {
	data := make([]byte, 68)
	copy(data, []byte{0xa9, 0x05, 0x9c, 0xbb})
	copy(data[16:36], to.Bytes())
	new(big.Int).SetInt64(amount).FillBytes(data[36:])
	return data
}
