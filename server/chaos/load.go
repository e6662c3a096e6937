package chaos

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/contracts"
)

// Operator is one operator of the run.
type Operator struct {
	Name     string // its webhook path
	ID, Key  string
	Mode     string // "A": synchronous approval, admin finalizes; "B": external approval
	FeeBps   int32
	Treasury common.Address
	// Adjusted are the service team's adjustments of its funds, per asset (smallest units).
	Adjusted map[string]*big.Int
}

// DepositSession is a deposit session the run opened.
type DepositSession struct {
	SID, Ref, User string
	Operator       *Operator
}

// Payment is one on-chain payment the run made to a deposit address or a treasury address.
type Payment struct {
	Operator *Operator
	User     string          // externalUserId; empty for a treasury payment
	Session  *DepositSession // the session the payment belongs to; nil for a treasury payment
	Treasury bool
	Asset    Asset
	To       common.Address
	Amount   *big.Int
	Tx       common.Hash
	LogIndex int // -1 for a native transfer
	Block    uint64
	Mined    time.Time // when the run saw its receipt
}

// Withdrawal is one withdrawal the run submitted and got an id for.
type Withdrawal struct {
	ID        string
	Operator  *Operator
	User      string
	Asset     Asset
	Dest      common.Address
	Fiat      string
	Submitted time.Time
	// Reject: the run refuses it (admin REJECTED in mode A, operator REJECT in mode B).
	Reject bool

	mu       sync.Mutex
	decision string
	decided  time.Time
}

// Decision is the answer to the run's final call (COMPLETED, PROCESSING: still paying,
// REJECTED, held:<reason>, or why there was none) and when it came; empty before.
func (w *Withdrawal) Decision() (string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.decision, w.decided
}

// Ledger is everything the load did, for the checks and the report.
type Ledger struct {
	mu          sync.Mutex
	Payments    []*Payment
	Sessions    int
	Withdrawals []*Withdrawal
	// Refused counts submissions answered with a refusal (mode A's WITHDRAW_DENIED while the
	// receiver is down), by code.
	Refused map[string]int
	// Problems are answers that contradict the interface (not transport-level errors).
	Problems []string
	// Notes are the harness's own troubles (a payment that failed on the chain, …).
	Notes []string
}

func (l *Ledger) addPayment(p *Payment) {
	l.mu.Lock()
	l.Payments = append(l.Payments, p)
	l.mu.Unlock()
}

func (l *Ledger) problemf(format string, args ...any) {
	l.mu.Lock()
	l.Problems = append(l.Problems, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *Ledger) notef(format string, args ...any) {
	l.mu.Lock()
	l.Notes = append(l.Notes, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *Ledger) withdrawal(id string) *Withdrawal {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.Withdrawals {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// Snapshot copies the lists.
func (l *Ledger) Snapshot() (payments []*Payment, withdrawals []*Withdrawal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Payment(nil), l.Payments...), append([]*Withdrawal(nil), l.Withdrawals...)
}

// Load drives deposits and withdrawals through the public interfaces.
type Load struct {
	s      *Stack
	api    *API
	recv   *Receiver
	seed   uint64
	Ops    []*Operator
	admin  string
	Ledger *Ledger

	payers []*payer
	bank   *payer
	decide chan string
	// finishing are the admin finalizations and operator decisions, which go on into the drain.
	finishing sync.WaitGroup
	adminSem  chan struct{}
}

// Users per deposit slot (each one's sessions follow each other) and the wait between a
// user's last payment and its next session: a payment belongs to the session that handed out
// the address most recently, counting hand-outs up to 10 s after the payment's block
// (store.HandoutSlack), so the next hand-out waits longer than that.
const (
	depositSlots    = 4
	usersPerSlot    = 3
	sessionCooldown = 12 * time.Second
)

// NewLoad creates the operators (one of each approval mode), funds them (the synchronous one
// by an adjustment backed by the hot wallet, the external one by payments to its treasury
// address), the admin, and the payers' accounts.
func NewLoad(ctx context.Context, s *Stack, api *API, recv *Receiver, seed uint64) (*Load, error) {
	l := &Load{s: s, api: api, recv: recv, seed: seed, Ledger: &Ledger{Refused: map[string]int{}}, decide: make(chan string, 10000),
		adminSem: make(chan struct{}, 4)}
	syncMode, external := cofferv1.ApprovalMode_APPROVAL_MODE_SYNC, cofferv1.ApprovalMode_APPROVAL_MODE_EXTERNAL
	enabled, fee := true, int32(100)
	for _, o := range []struct {
		op       *Operator
		settings *cofferv1.OperatorSettings
	}{
		{&Operator{Name: "sync", Mode: "A", FeeBps: fee},
			&cofferv1.OperatorSettings{Name: new("Chaos Sync"), WebhookUrl: new(recv.Hook("sync")), ApprovalMode: &syncMode, DepositFeeBps: &fee}},
		{&Operator{Name: "ext", Mode: "B"},
			&cofferv1.OperatorSettings{Name: new("Chaos External"), WebhookUrl: new(recv.Hook("ext")), ApprovalMode: &external, ApprovalEnabled: &enabled}},
	} {
		res, err := s.Ops.CreateOperator(ctx, &cofferv1.CreateOperatorRequest{Settings: o.settings})
		if err != nil {
			return nil, fmt.Errorf("create operator: %w", err)
		}
		o.op.ID, o.op.Key, o.op.Adjusted = res.Operator.Id, res.OperatorKey, map[string]*big.Int{}
		recv.SetKey(o.op.Name, o.op.Key)
		tr, err := s.Ops.GetTreasuryAddress(ctx, &cofferv1.GetTreasuryAddressRequest{OperatorId: o.op.ID, ChainId: s.ChainID})
		if err != nil {
			return nil, err
		}
		o.op.Treasury = common.HexToAddress(tr.Address)
		l.Ops = append(l.Ops, o.op)
	}
	if _, err := s.Ops.CreateAdmin(ctx, &cofferv1.CreateAdminRequest{Email: "chaos@coffer.test", Password: "chaos admin password"}); err != nil {
		return nil, err
	}
	ans, err := Until(ctx, func() (*Answer, error) {
		return api.Do(ctx, "POST", "/admin/login", "", map[string]string{"email": "chaos@coffer.test", "password": "chaos admin password"})
	})
	if err != nil || !ans.OK() || ans.Str("token") == "" {
		return nil, fmt.Errorf("admin login: %w %+v", err, ans)
	}
	l.admin = ans.Str("token")

	// Payers: one account per deposit slot, with ether and both tokens.
	l.bank = &payer{key: s.Bank.Key, addr: s.Bank.Address}
	if err := l.bank.sync(ctx, s); err != nil {
		return nil, err
	}
	for range depositSlots {
		p := &payer{key: newKey()}
		p.addr = crypto.PubkeyToAddress(p.key.PublicKey)
		if err := s.Node.Fund(ctx, p.addr, ether(100)); err != nil {
			return nil, err
		}
		for _, a := range s.Assets[1:] {
			if _, err := l.bank.pay(ctx, s, a, p.addr, big.NewInt(10_000_000_000_000)); err != nil {
				return nil, err
			}
		}
		l.payers = append(l.payers, p)
	}

	// Funds: the synchronous operator's by adjustment (backed by the hot wallet's funding), the
	// external one's by payments to its treasury, which the deposit pipeline credits.
	syncOp, extOp := l.Ops[0], l.Ops[1]
	float := map[string]string{"ETH": "5", "USDT": "20000", "USDC": "20000"}
	for _, a := range s.Assets {
		if _, err := s.Ops.AdjustOperatorFunds(ctx, &cofferv1.AdjustOperatorFundsRequest{OperatorId: syncOp.ID, ChainId: s.ChainID,
			Currency: a.Symbol, Amount: "+" + float[a.Symbol], Note: "chaos float"}); err != nil {
			return nil, fmt.Errorf("adjust: %w", err)
		}
		syncOp.Adjusted[a.Symbol] = units(float[a.Symbol], a.Decimals)
		if err := l.payTreasury(ctx, l.bank, extOp, a, units(float[a.Symbol], a.Decimals)); err != nil {
			return nil, err
		}
	}
	var setup []string
	for _, p := range l.Ledger.Payments {
		setup = append(setup, strings.ToLower(p.Tx.Hex()))
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var credited int
		err := s.DB.QueryRow(ctx, `SELECT count(*) FROM deposits WHERE lower(tx_hash) = ANY($1) AND status = 'CREDITED'`, setup).Scan(&credited)
		if err == nil && credited == len(setup) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d treasury payments credited after 3 minutes (%w)", credited, len(setup), err)
		}
		time.Sleep(time.Second)
	}
	recv.OnAcked(func(d *Delivery) {
		if d.Hook == "ext" && d.Event == "WITHDRAW_REQUEST" {
			l.decide <- d.Form.Get("withdrawRequestId")
		}
	})
	return l, nil
}

// Run drives the load until ctx ends; operator decisions and admin finalizations it started
// go on until finish ends (Wait waits for them).
func (l *Load) Run(ctx, finish context.Context) {
	var wg sync.WaitGroup
	for slot := range depositSlots {
		r := rand.New(rand.NewPCG(l.seed, uint64(100+slot)))
		wg.Go(func() { l.depositor(ctx, slot, r, l.payers[slot]) })
	}
	wg.Go(func() { l.withdrawer(ctx, finish, l.Ops[0], rand.New(rand.NewPCG(l.seed, 200))) })
	wg.Go(func() { l.withdrawer(ctx, finish, l.Ops[1], rand.New(rand.NewPCG(l.seed, 201))) })
	for range 2 {
		l.finishing.Go(func() { l.decider(finish) })
	}
	wg.Wait()
}

// Wait waits for the decisions and finalizations.
func (l *Load) Wait() { l.finishing.Wait() }

type depositUser struct {
	id string
	op *Operator
	// addrs are the addresses handed out, by kind: "native" and "token" (one address for
	// both on a topup chain; a token-deposit address on an eip7702 chain).
	addrs   map[string]common.Address
	readyAt time.Time
}

// addressKind is which of a user's addresses an asset is paid to.
func addressKind(a Asset) string {
	if a.Native() {
		return "native"
	}
	return "token"
}

// depositor is one slot's users: each opens a deposit session, has its address handed out for
// one to three assets, and pays it one to three times; now and then the slot pays an
// operator's treasury instead.
func (l *Load) depositor(ctx context.Context, slot int, r *rand.Rand, p *payer) {
	var users []*depositUser
	for k := range usersPerSlot {
		users = append(users, &depositUser{id: fmt.Sprintf("d%d-%d", slot, k), op: l.Ops[(slot+k)%len(l.Ops)],
			addrs: map[string]common.Address{}})
	}
	for n := 0; ctx.Err() == nil; n++ {
		u := users[n%len(users)]
		if !sleep(ctx, time.Until(u.readyAt)) {
			return
		}
		if r.IntN(12) == 0 {
			a := l.s.Assets[r.IntN(len(l.s.Assets))]
			_ = l.payTreasury(ctx, p, l.Ops[r.IntN(len(l.Ops))], a, depositAmount(r, a)) // noted in the ledger
			continue
		}
		ref := fmt.Sprintf("dep-%d-%d-%d", l.seed, slot, n)
		ans, err := Until(ctx, func() (*Answer, error) {
			return l.api.Do(ctx, "POST", "/session/deposit", u.op.Key, map[string]any{"externalUserId": u.id, "lang": "en",
				"platformFiatCurrency": "USD", "userBalance": "0.00", "amount": fmt.Sprintf("%d.00", 5+r.IntN(95)), "operatorReference": ref})
		})
		if err != nil {
			return
		}
		if !ans.OK() {
			l.Ledger.problemf("POST /session/deposit refused: %d %s %s", ans.Status, ans.Code, ans.Message)
			continue
		}
		sess := &DepositSession{SID: sidOf(ans.Str("url")), Ref: ans.Str("sessionRef"), User: u.id, Operator: u.op}
		l.Ledger.mu.Lock()
		l.Ledger.Sessions++
		l.Ledger.mu.Unlock()
		assets := append([]Asset(nil), l.s.Assets...)
		r.Shuffle(len(assets), func(i, j int) { assets[i], assets[j] = assets[j], assets[i] })
		assets = assets[:1+r.IntN(len(assets))]
		handed := true
		for _, a := range assets {
			ans, err := Until(ctx, func() (*Answer, error) {
				return l.api.Do(ctx, "POST", "/depositor/address", "", map[string]any{"sid": sess.SID, "currency": a.Symbol, "chainId": l.s.ChainID})
			})
			if err != nil {
				return
			}
			if !ans.OK() {
				l.Ledger.problemf("POST /depositor/address refused: %d %s %s", ans.Status, ans.Code, ans.Message)
				handed = false
				break
			}
			addr := common.HexToAddress(ans.Str("address"))
			kind := addressKind(a)
			if prev, ok := u.addrs[kind]; ok && addr != prev {
				l.Ledger.problemf("user %s of %s was handed %s for %s, earlier %s: one %s address per user", u.id, u.op.Name, addr.Hex(),
					a.Symbol, prev.Hex(), kind)
			}
			u.addrs[kind] = addr
		}
		if !handed {
			continue
		}
		for range 1 + r.IntN(3) {
			a := assets[r.IntN(len(assets))]
			to := u.addrs[addressKind(a)]
			pay := &Payment{Operator: u.op, User: u.id, Session: sess, Asset: a, To: to, Amount: depositAmount(r, a)}
			rcpt, err := p.pay(ctx, l.s, a, to, pay.Amount)
			if err != nil {
				if ctx.Err() == nil {
					l.Ledger.notef("payment of %s %s to %s failed: %v", pay.Amount, a.Symbol, to.Hex(), err)
				}
				continue
			}
			pay.fill(rcpt)
			l.Ledger.addPayment(pay)
			u.readyAt = pay.Mined.Add(sessionCooldown)
		}
		sleep(ctx, time.Duration(500+r.IntN(1500))*time.Millisecond)
	}
}

// payTreasury pays an operator's treasury address (the operator is funded; no webhook).
func (l *Load) payTreasury(ctx context.Context, p *payer, op *Operator, a Asset, amount *big.Int) error {
	pay := &Payment{Operator: op, Treasury: true, Asset: a, To: op.Treasury, Amount: amount}
	rcpt, err := p.pay(ctx, l.s, a, op.Treasury, amount)
	if err != nil {
		if ctx.Err() == nil {
			l.Ledger.notef("treasury payment of %s %s failed: %v", amount, a.Symbol, err)
		}
		return err
	}
	pay.fill(rcpt)
	l.Ledger.addPayment(pay)
	return nil
}

func (p *Payment) fill(r *types.Receipt) {
	p.Tx, p.Block, p.Mined, p.LogIndex = r.TxHash, r.BlockNumber.Uint64(), time.Now(), -1
	if !p.Asset.Native() && len(r.Logs) > 0 {
		p.LogIndex = int(r.Logs[0].Index)
	}
}

// withdrawer opens withdraw sessions of one operator and submits a withdrawal on each, to a
// new address in a random asset: in mode A an admin then moves it PROCESSING → COMPLETED (or
// REJECTED); in mode B the operator decides when its WITHDRAW_REQUEST arrives (decider).
func (l *Load) withdrawer(ctx, finish context.Context, op *Operator, r *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		user := fmt.Sprintf("w%s-%d", op.Name, n%5)
		fiat := fmt.Sprintf("%d.%02d", 1+r.IntN(25), r.IntN(100))
		ref := fmt.Sprintf("wd-%s-%d-%d", op.Name, l.seed, n)
		ans, err := Until(ctx, func() (*Answer, error) {
			return l.api.Do(ctx, "POST", "/session/withdraw", op.Key, map[string]any{"externalUserId": user, "lang": "en",
				"platformFiatCurrency": "USD", "userBalance": "1000.00", "amount": fiat, "operatorReference": ref})
		})
		if err != nil {
			return
		}
		if !ans.OK() {
			l.Ledger.problemf("POST /session/withdraw refused: %d %s %s", ans.Status, ans.Code, ans.Message)
			continue
		}
		sid := sidOf(ans.Str("url"))
		w := &Withdrawal{Operator: op, User: user, Asset: l.s.Assets[r.IntN(len(l.s.Assets))], Dest: newAddress(), Fiat: fiat,
			Reject: r.IntN(10) == 0}
		ans, err = Until(ctx, func() (*Answer, error) {
			return l.api.Do(ctx, "POST", "/withdraw/direct-transfer", "", map[string]any{"sid": sid, "address": w.Dest.Hex(),
				"currency": w.Asset.Symbol, "chainId": l.s.ChainID})
		})
		if err != nil {
			return
		}
		want := map[string]string{"A": "PENDING", "B": "AWAITING_APPROVAL"}[op.Mode]
		switch {
		case ans.OK() && ans.Str("status") == want && ans.Str("withdrawRequestId") != "":
			w.ID, w.Submitted = ans.Str("withdrawRequestId"), time.Now()
			l.Ledger.mu.Lock()
			l.Ledger.Withdrawals = append(l.Ledger.Withdrawals, w)
			l.Ledger.mu.Unlock()
			if op.Mode == "A" {
				l.finishing.Go(func() { l.adminFinalize(finish, w) })
			}
		case ans.Status == 422 && ans.Code == "WITHDRAW_DENIED" && op.Mode == "A":
			l.Ledger.mu.Lock()
			l.Ledger.Refused[fmt.Sprintf("%d %s (errorCode %v)", ans.Status, ans.Code, ans.Data["errorCode"])]++
			l.Ledger.mu.Unlock()
		default:
			l.Ledger.problemf("POST /withdraw/direct-transfer (mode %s): %d %s %s %v", op.Mode, ans.Status, ans.Code, ans.Message, ans.Data)
		}
		sleep(ctx, time.Duration(1500+r.IntN(3000))*time.Millisecond)
	}
}

// adminFinalize is the panel's two steps: PROCESSING, then COMPLETED (or REJECTED).
func (l *Load) adminFinalize(ctx context.Context, w *Withdrawal) {
	select {
	case l.adminSem <- struct{}{}:
		defer func() { <-l.adminSem }()
	case <-ctx.Done():
		w.setDecision("gave up: no admin slot before the drain ended")
		return
	}
	// A PATCH whose earlier try got no answer may have been applied: its retry is then refused
	// ("the withdrawal is already PROCESSING"), which is the answer the run wanted.
	patch := func(status string) (string, error) {
		ans, unsure, err := UntilN(ctx, func() (*Answer, error) {
			return l.api.Do(ctx, "PATCH", "/admin/withdrawals/"+w.ID+"/status", l.admin, map[string]string{"status": status, "adminNote": "chaos"})
		})
		switch {
		case err != nil:
			return "", err
		case ans.OK():
			return ans.Str("status"), nil
		case unsure && ans.Status == 422 && strings.Contains(ans.Message, "already "+status):
			return status, nil
		}
		l.Ledger.problemf("PATCH %s %s: %d %s %s", w.ID, status, ans.Status, ans.Code, ans.Message)
		return "", fmt.Errorf("%s refused: %d %s", status, ans.Status, ans.Code)
	}
	got, err := patch("PROCESSING")
	if err == nil && got != "PROCESSING" {
		l.Ledger.problemf("PATCH %s PROCESSING answered status %s", w.ID, got)
		err = fmt.Errorf("PROCESSING answered %s", got)
	}
	if err != nil {
		w.setDecision(err.Error())
		return
	}
	target := "COMPLETED"
	if w.Reject {
		target = "REJECTED"
	}
	if got, err = patch(target); err != nil {
		w.setDecision(err.Error())
		return
	}
	w.setDecision(got)
}

// decider is the external-approval operator: on each WITHDRAW_REQUEST it approves (or
// rejects) through POST /withdraw/:id/decision, trying again while it is held
// TEMPORARILY_UNAVAILABLE.
func (l *Load) decider(ctx context.Context) {
	seen := map[string]bool{}
	for {
		var id string
		select {
		case <-ctx.Done():
			return
		case id = <-l.decide:
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		var w *Withdrawal
		for range 50 { // the webhook may come before the submission's answer was recorded
			if w = l.Ledger.withdrawal(id); w != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		decision := "APPROVE"
		if w != nil && w.Reject {
			decision = "REJECT"
		}
		for try := 0; ; try++ {
			ans, err := Until(ctx, func() (*Answer, error) {
				return l.api.Do(ctx, "POST", "/withdraw/"+id+"/decision", l.Ops[1].Key, map[string]string{"decision": decision})
			})
			var outcome string
			switch {
			case err != nil:
				outcome = err.Error()
			case !ans.OK():
				l.Ledger.problemf("POST /withdraw/%s/decision %s: %d %s %s", id, decision, ans.Status, ans.Code, ans.Message)
				outcome = fmt.Sprintf("refused: %d %s", ans.Status, ans.Code)
			case ans.Data["held"] == true:
				outcome = fmt.Sprintf("held:%v", ans.Data["heldReason"])
				if ans.Data["heldReason"] == "TEMPORARILY_UNAVAILABLE" && try < 10 && sleep(ctx, 3*time.Second) {
					continue
				}
			default:
				outcome = ans.Str("withdrawStatus")
			}
			if w != nil {
				w.setDecision(outcome)
			} else if outcome != "CANCELLED" {
				l.Ledger.notef("decision on %s (not submitted by the run as far as it knows): %s", id, outcome)
			}
			break
		}
	}
}

func (w *Withdrawal) setDecision(d string) {
	w.mu.Lock()
	w.decision, w.decided = d, time.Now()
	w.mu.Unlock()
}

// payer is an account the run pays from, one goroutine at a time.
type payer struct {
	key   *ecdsa.PrivateKey
	addr  common.Address
	nonce uint64
	ready bool
}

func (p *payer) sync(ctx context.Context, s *Stack) error {
	n, err := s.Node.Client.PendingNonceAt(ctx, p.addr)
	p.nonce, p.ready = n, err == nil
	return err
}

// pay sends amount of asset a to the address to and waits for the receipt.
func (p *payer) pay(ctx context.Context, s *Stack, a Asset, to common.Address, amount *big.Int) (*types.Receipt, error) {
	if !p.ready {
		if err := p.sync(ctx, s); err != nil {
			return nil, err
		}
	}
	tip := big.NewInt(1_000_000_000)
	head, err := s.Node.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	chainID := big.NewInt(s.ChainID)
	fee := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx := &types.DynamicFeeTx{ChainID: chainID, Nonce: p.nonce, GasTipCap: tip, GasFeeCap: fee, Gas: 21000, To: &to, Value: amount}
	if !a.Native() {
		tx.To, tx.Value, tx.Gas = &a.Contract, new(big.Int), 100_000
		tx.Data = contracts.NewTestToken().PackTransfer(to, amount)
	}
	signed := types.MustSignNewTx(p.key, types.LatestSignerForChainID(chainID), tx)
	if err := s.Node.Client.SendTransaction(ctx, signed); err != nil {
		// A send whose answer was lost (the load ended while it was on its way) may have reached
		// the node: the run made that payment, and the invariants must know it, so it counts as
		// not sent only if the node does not have it.
		p.ready = false
		if _, _, lookErr := s.Node.Client.TransactionByHash(context.WithoutCancel(ctx), signed.Hash()); lookErr != nil {
			return nil, err
		}
	}
	p.nonce++
	r, err := s.Node.Wait(context.WithoutCancel(ctx), signed.Hash())
	if err != nil {
		p.ready = false
		return nil, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, fmt.Errorf("transaction %s reverted", r.TxHash.Hex())
	}
	return r, nil
}

// depositAmount is above the asset's minimum (1 USD): 1 to 80 tokens, 0.001 to 0.03 ETH.
func depositAmount(r *rand.Rand, a Asset) *big.Int {
	if a.Native() {
		return new(big.Int).Add(new(big.Int).Mul(big.NewInt(int64(1+r.IntN(30))), big.NewInt(1e15)), big.NewInt(r.Int64N(1e12)))
	}
	return big.NewInt(int64(1+r.IntN(80))*1_000_000 + r.Int64N(1_000_000))
}

// units converts a decimal string of tokens into smallest units.
func units(dec string, decimals int) *big.Int {
	r, ok := new(big.Rat).SetString(dec)
	if !ok {
		panic("not a decimal: " + dec)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)))
	if !r.IsInt() {
		panic("more decimals than the asset: " + dec)
	}
	return r.Num()
}

// sidOf reads the sid of a session URL.
func sidOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Query().Get("sid")
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
