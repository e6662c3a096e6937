package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/contracts"
)

// Check is one invariant and what contradicts it.
type Check struct {
	Name       string
	Violations []string
	// Notes are facts worth reading that do not break the invariant.
	Notes []string
}

// OK reports a check without violations.
func (c *Check) OK() bool { return len(c.Violations) == 0 }

func (c *Check) failf(format string, args ...any) {
	c.Violations = append(c.Violations, fmt.Sprintf(format, args...))
}

func (c *Check) notef(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

// world is the end state: the database's rows the checks read, and the receiver's deliveries.
type world struct {
	deposits     []dbDeposit
	withdrawals  []dbWithdrawal
	entries      []dbEntry
	funds        []dbFunds
	txs          []dbTx
	nonces       map[string]int64   // chain_nonces by lower-case address
	attempts     map[int64][]string // chain_tx_attempts' hashes by transaction
	events       []dbEvent
	liveJobs     []dbJob
	deadJobs     []dbJob // discarded or cancelled
	deadListed   map[string]bool
	deliveries   []*Delivery
	ackedByEvent map[string]int // webhook-id → acknowledged deliveries
}

type dbDeposit struct {
	ID                int64
	OperatorID, User  string
	SessionID         *string
	TxHash            string
	LogIndex          int
	Currency, Status  string
	Gross, Fee, Net   *big.Int
	Treasury          bool
	ConfirmedAt       *time.Time
	CreditedAt        *time.Time
	Address           string
	ContractAddress   *string
	SweepID           *int64
	BlockNumber       int64
	DetectedAt        time.Time
	AmountInDollarNil bool
}

type dbWithdrawal struct {
	ID, OperatorID, Status, Currency, Address, Mode string
	Amount                                          *big.Int
	Settlement                                      *string
	PayoutQueued                                    *time.Time
}

type dbEntry struct {
	OperatorID, Currency, Kind, Ref string
	Available, Reserved             *big.Int
}

type dbFunds struct {
	OperatorID, Currency string
	Available, Reserved  *big.Int
}

type dbTx struct {
	ID                     int64
	From, To, Purpose, Ref string
	Nonce                  int64
	State                  string
	MinedHash              *string
	Value                  *big.Int
	GasUsed                *int64
	EffectiveGasPrice      *big.Int
}

type dbEvent struct {
	ID, OperatorID, Type, Subject, State string
	Sync, Test                           bool
	Attempts                             int
	LastError                            string
	// NextAttempt is when a queued (pending) event is due; nil when it is not queued.
	NextAttempt *time.Time
}

type dbJob struct {
	ID          int64
	Kind, State string
	OperatorID  string // a webhook drain's
	Scheduled   time.Time
	Attempted   *time.Time
	Attempt     int
	Errors      string
}

func numeric(s *string) *big.Int {
	if s == nil {
		return nil
	}
	n, ok := new(big.Int).SetString(*s, 10)
	if !ok {
		return nil
	}
	return n
}

// load reads the end state.
func load(ctx context.Context, s *Stack, recv *Receiver) (*world, error) {
	w := &world{nonces: map[string]int64{}, attempts: map[int64][]string{}, deadListed: map[string]bool{}, ackedByEvent: map[string]int{}}
	q := func(sql string, scan func(pgx.Rows) error) error {
		rows, err := s.DB.Query(ctx, sql)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(sql)[3], err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	err := q(`SELECT id, operator_id::text, external_user_id, session_id::text, tx_hash, log_index, currency, status,
			gross_amount::text, fee_amount::text, amount::text, treasury, address, block_number FROM deposits ORDER BY id`,
		func(r pgx.Rows) error {
			var d dbDeposit
			var gross string
			var fee, net *string
			if err := r.Scan(&d.ID, &d.OperatorID, &d.User, &d.SessionID, &d.TxHash, &d.LogIndex, &d.Currency, &d.Status,
				&gross, &fee, &net, &d.Treasury, &d.Address, &d.BlockNumber); err != nil {
				return err
			}
			d.Gross, d.Fee, d.Net = numeric(&gross), numeric(fee), numeric(net)
			w.deposits = append(w.deposits, d)
			return nil
		})
	if err == nil {
		err = q(`SELECT id::text, operator_id::text, status, currency, address, approval_mode, crypto_amount::text, settlement_tx_hash,
				payout_queued_at FROM withdrawals ORDER BY created_at`,
			func(r pgx.Rows) error {
				var d dbWithdrawal
				var amount string
				if err := r.Scan(&d.ID, &d.OperatorID, &d.Status, &d.Currency, &d.Address, &d.Mode, &amount, &d.Settlement, &d.PayoutQueued); err != nil {
					return err
				}
				d.Amount = numeric(&amount)
				w.withdrawals = append(w.withdrawals, d)
				return nil
			})
	}
	if err == nil {
		err = q(`SELECT operator_id::text, currency, kind, ref, available_delta::text, reserved_delta::text FROM fund_entries ORDER BY id`,
			func(r pgx.Rows) error {
				var e dbEntry
				var a, b string
				if err := r.Scan(&e.OperatorID, &e.Currency, &e.Kind, &e.Ref, &a, &b); err != nil {
					return err
				}
				e.Available, e.Reserved = numeric(&a), numeric(&b)
				w.entries = append(w.entries, e)
				return nil
			})
	}
	if err == nil {
		err = q(`SELECT operator_id::text, currency, available::text, reserved::text FROM operator_funds`,
			func(r pgx.Rows) error {
				var f dbFunds
				var a, b string
				if err := r.Scan(&f.OperatorID, &f.Currency, &a, &b); err != nil {
					return err
				}
				f.Available, f.Reserved = numeric(&a), numeric(&b)
				w.funds = append(w.funds, f)
				return nil
			})
	}
	if err == nil {
		err = q(`SELECT id, from_address, to_address, purpose, ref, nonce, state, mined_hash, value::text, gas_used,
				effective_gas_price::text FROM chain_txs ORDER BY id`,
			func(r pgx.Rows) error {
				var t dbTx
				var value string
				var price *string
				if err := r.Scan(&t.ID, &t.From, &t.To, &t.Purpose, &t.Ref, &t.Nonce, &t.State, &t.MinedHash, &value, &t.GasUsed, &price); err != nil {
					return err
				}
				t.Value, t.EffectiveGasPrice = numeric(&value), numeric(price)
				w.txs = append(w.txs, t)
				return nil
			})
	}
	if err == nil {
		err = q(`SELECT tx_id, hash FROM chain_tx_attempts ORDER BY id`, func(r pgx.Rows) error {
			var id int64
			var h string
			if err := r.Scan(&id, &h); err != nil {
				return err
			}
			w.attempts[id] = append(w.attempts[id], h)
			return nil
		})
	}
	if err == nil {
		err = q(`SELECT address, next_nonce FROM chain_nonces`, func(r pgx.Rows) error {
			var a string
			var n int64
			if err := r.Scan(&a, &n); err != nil {
				return err
			}
			w.nonces[strings.ToLower(a)] = n
			return nil
		})
	}
	if err == nil {
		err = q(`SELECT e.id::text, e.operator_id::text, e.event_type, e.subject_id, e.state, e.sync, e.test, e.attempts, e.last_error,
				q.next_attempt_at
				FROM webhook_events e LEFT JOIN webhook_queue q ON q.event_id = e.id`,
			func(r pgx.Rows) error {
				var e dbEvent
				if err := r.Scan(&e.ID, &e.OperatorID, &e.Type, &e.Subject, &e.State, &e.Sync, &e.Test, &e.Attempts, &e.LastError,
					&e.NextAttempt); err != nil {
					return err
				}
				w.events = append(w.events, e)
				return nil
			})
	}
	if err == nil {
		err = q(`SELECT id, kind, state, COALESCE(args->>'operator_id', ''), scheduled_at, attempted_at, attempt, COALESCE(errors::text, '')
				FROM river_job WHERE state NOT IN ('completed')`,
			func(r pgx.Rows) error {
				var j dbJob
				if err := r.Scan(&j.ID, &j.Kind, &j.State, &j.OperatorID, &j.Scheduled, &j.Attempted, &j.Attempt, &j.Errors); err != nil {
					return err
				}
				if j.State == "discarded" || j.State == "cancelled" {
					w.deadJobs = append(w.deadJobs, j)
				} else {
					w.liveJobs = append(w.liveJobs, j)
				}
				return nil
			})
	}
	if err != nil {
		return nil, err
	}
	for token := ""; ; {
		res, err := s.Ops.ListDeadLetteredWebhooks(ctx, &cofferv1.ListDeadLetteredWebhooksRequest{PageSize: 200, PageToken: token})
		if err != nil {
			return nil, fmt.Errorf("ListDeadLetteredWebhooks: %w", err)
		}
		for _, d := range res.Deliveries {
			w.deadListed[d.EventId] = true
		}
		if token = res.NextPageToken; token == "" {
			break
		}
	}
	w.deliveries = recv.Deliveries()
	for _, d := range w.deliveries {
		if d.Acked {
			w.ackedByEvent[d.ID]++
		}
	}
	return w, nil
}

// eventOf finds the outbox event of a subject.
func (w *world) eventOf(typ, subject string) *dbEvent {
	for i := range w.events {
		e := &w.events[i]
		if e.Type == typ && e.Subject == subject && !e.Sync && !e.Test {
			return e
		}
	}
	return nil
}

// ackedIDs is the distinct webhook-ids of acknowledged deliveries of an event type matching a
// form field.
func (w *world) ackedIDs(event, field, value string) []*Delivery {
	seen := map[string]bool{}
	var out []*Delivery
	for _, d := range w.deliveries {
		if d.Acked && d.Event == event && strings.EqualFold(d.Form.Get(field), value) && !seen[d.ID] {
			seen[d.ID] = true
			out = append(out, d)
		}
	}
	return out
}

func (w *world) entriesFor(ref string) []dbEntry {
	var out []dbEntry
	for _, e := range w.entries {
		if e.Ref == ref {
			out = append(out, e)
		}
	}
	return out
}

// stillRetrying describes an outbox event that is pending, queued with its next attempt, and
// whose operator's drain job will run.
func (w *world) stillRetrying(e *dbEvent) (string, bool) {
	if e == nil || e.State != "pending" || e.NextAttempt == nil {
		return "", false
	}
	for _, j := range w.liveJobs {
		if j.Kind == "webhook_drain" && j.OperatorID == e.OperatorID {
			return fmt.Sprintf("pending after %d attempts, next attempt at %s (drain %s until %s)", e.Attempts,
				e.NextAttempt.Local().Format("15:04:05"), j.State, j.Scheduled.Local().Format("15:04:05")), true
		}
	}
	return "", false
}

// invariants runs every check on the end state.
func invariants(ctx context.Context, s *Stack, l *Load, tl *Timeline, api *API, mon *Monitor, set Settings) ([]*Check, *world, error) {
	w, err := load(ctx, s, l.recv)
	if err != nil {
		return nil, nil, err
	}
	payments, withdrawals := l.Ledger.Snapshot()
	checks := []*Check{
		checkDeposits(w, payments),
		checkPayouts(ctx, s, w, withdrawals),
		checkFunds(ctx, s, w, l.Ops),
		checkNonces(ctx, s, w),
		checkJobs(w),
		checkEvents(w),
		checkClientErrors(api.Calls(), tl, s.APIs),
		checkProcesses(tl),
		checkInterface(l),
	}
	checks = append(checks, checkRecovery(mon, tl, set))
	return checks, w, nil
}

//nolint:gocyclo // one block per invariant, read as a list; split, the checks scatter
func checkDeposits(w *world, payments []*Payment) *Check {
	c := &Check{Name: "every confirmed payment is credited exactly once, to the right session"}
	byTx := map[string][]dbDeposit{}
	for _, d := range w.deposits {
		byTx[strings.ToLower(d.TxHash)] = append(byTx[strings.ToLower(d.TxHash)], d)
	}
	ours := map[string]bool{}
	for _, p := range payments {
		tx := strings.ToLower(p.Tx.Hex())
		ours[tx] = true
		what := fmt.Sprintf("payment %s (%s %s to %s of %s)", short(p.Tx.Hex()), p.Amount, p.Asset.Symbol, p.To.Hex()[:10], p.Operator.Name)
		rows := byTx[tx]
		if len(rows) != 1 {
			c.failf("%s: %d deposit rows, want 1", what, len(rows))
			continue
		}
		d := rows[0]
		switch {
		case d.Status != "CREDITED":
			c.failf("%s: deposit %d is %s at the end", what, d.ID, d.Status)
		case d.LogIndex != p.LogIndex || d.Gross.Cmp(p.Amount) != 0 || d.Currency != p.Asset.Symbol || d.OperatorID != p.Operator.ID:
			c.failf("%s: deposit %d records log %d, %s %s, operator %s", what, d.ID, d.LogIndex, d.Gross, d.Currency, d.OperatorID)
		case d.Treasury != p.Treasury:
			c.failf("%s: deposit %d treasury=%v", what, d.ID, d.Treasury)
		case !p.Treasury && (d.SessionID == nil || *d.SessionID != p.Session.SID || d.User != p.User):
			c.failf("%s: deposit %d belongs to session %v of %s, want %s of %s", what, d.ID, deref(d.SessionID), d.User, p.Session.SID, p.User)
		case p.Treasury && d.SessionID != nil:
			c.failf("%s: treasury deposit %d has session %s", what, d.ID, *d.SessionID)
		}
		kind := "DEPOSIT"
		if p.Treasury {
			kind = "TREASURY"
		}
		credits := 0
		for _, e := range w.entriesFor(fmt.Sprintf("deposit:%d", d.ID)) {
			credits++
			if e.Kind != kind || e.OperatorID != p.Operator.ID || e.Currency != p.Asset.Symbol || d.Net == nil ||
				e.Available.Cmp(d.Net) != 0 || e.Reserved.Sign() != 0 {
				c.failf("%s: fund entry %s %s %s/%s for operator %s, want %s of %s to %s", what, e.Kind, e.Currency, e.Available, e.Reserved,
					e.OperatorID, kind, d.Net, p.Operator.ID)
			}
		}
		if d.Status == "CREDITED" && credits != 1 {
			c.failf("%s: deposit %d credited %d times in the operator's funds", what, d.ID, credits)
		}
		got := w.ackedIDs("DEPOSIT", "transactionHash", p.Tx.Hex())
		if p.Treasury {
			if len(got) > 0 {
				c.failf("%s: a treasury payment sent %d DEPOSIT webhooks", what, len(got))
			}
			continue
		}
		switch {
		case len(got) > 1:
			c.failf("%s: %d distinct DEPOSIT events acknowledged (credited %d times by the operator)", what, len(got), len(got))
		case len(got) == 0:
			if why, ok := w.stillRetrying(w.eventOf("DEPOSIT", strconv.FormatInt(d.ID, 10))); ok {
				c.notef("%s: DEPOSIT not delivered yet: %s", what, why)
			} else if e := w.eventOf("DEPOSIT", strconv.FormatInt(d.ID, 10)); e != nil && e.State == "dead" {
				c.notef("%s: DEPOSIT dead-lettered", what)
			} else if d.Status == "CREDITED" {
				c.failf("%s: no DEPOSIT webhook acknowledged", what)
			}
		default:
			f := got[0].Form
			if f.Get("sessionRef") != p.Session.Ref || f.Get("depositId") != strconv.FormatInt(d.ID, 10) || f.Get("externalUserId") != p.User ||
				f.Get("grossAmount") != p.Amount.String() || d.Net == nil || f.Get("amount") != d.Net.String() || f.Get("feeAmount") != d.Fee.String() {
				c.failf("%s: DEPOSIT says sessionRef %s depositId %s user %s gross %s amount %s fee %s; want %s %d %s %s %v %v", what,
					f.Get("sessionRef"), f.Get("depositId"), f.Get("externalUserId"), f.Get("grossAmount"), f.Get("amount"), f.Get("feeAmount"),
					p.Session.Ref, d.ID, p.User, p.Amount, d.Net, d.Fee)
			}
		}
	}
	for _, d := range w.deposits {
		if !ours[strings.ToLower(d.TxHash)] {
			c.failf("deposit %d (%s %s %s, tx %s) is no payment the run made", d.ID, d.Gross, d.Currency, d.Status, short(d.TxHash))
		}
	}
	for _, d := range w.deliveries {
		if d.Event == "DEPOSIT" && !ours[strings.ToLower(d.Form.Get("transactionHash"))] {
			c.failf("DEPOSIT %s for tx %s, which the run did not make", d.ID, d.Form.Get("transactionHash"))
		}
	}
	return c
}

//nolint:gocyclo // one block per invariant, read as a list; split, the checks scatter
func checkPayouts(ctx context.Context, s *Stack, w *world, ours []*Withdrawal) *Check {
	c := &Check{Name: "every payout is paid exactly once, from the right operator's funds"}
	payouts := map[string][]dbTx{}
	for _, t := range w.txs {
		if t.Purpose == "payout" {
			payouts[t.Ref] = append(payouts[t.Ref], t)
		}
	}
	type destKey struct{ addr, currency string }
	want := map[destKey]*big.Int{}
	db := map[string]dbWithdrawal{}
	for _, wd := range w.withdrawals {
		db[wd.ID] = wd
		ref := "withdrawal:" + wd.ID
		what := fmt.Sprintf("withdrawal %s (%s %s, mode %s)", wd.ID[:8], wd.Amount, wd.Currency, wd.Mode)
		k := destKey{strings.ToLower(wd.Address), wd.Currency}
		if want[k] == nil {
			want[k] = new(big.Int)
		}
		txs := payouts[ref]
		entries := w.entriesFor(ref)
		sum := map[string]*big.Int{"available": new(big.Int), "reserved": new(big.Int)}
		kinds := map[string]int{}
		for _, e := range entries {
			kinds[e.Kind]++
			sum["available"].Add(sum["available"], e.Available)
			sum["reserved"].Add(sum["reserved"], e.Reserved)
			if e.OperatorID != wd.OperatorID || e.Currency != wd.Currency {
				c.failf("%s: fund entry %s on operator %s %s, want operator %s %s", what, e.Kind, e.OperatorID, e.Currency, wd.OperatorID, wd.Currency)
			}
		}
		completes := w.ackedIDs("WITHDRAW_COMPLETE", "withdrawRequestId", wd.ID)
		if wd.Status != "COMPLETED" {
			if len(txs) > 0 {
				c.failf("%s: %s but has a payout transaction (%s)", what, wd.Status, txs[0].State)
			}
			if wd.PayoutQueued != nil {
				c.failf("%s: its payout was queued but it is %s at the end", what, wd.Status)
			}
			if sum["available"].Sign() != 0 || sum["reserved"].Sign() != 0 {
				c.failf("%s: %s, yet its fund entries move %s available, %s reserved", what, wd.Status, sum["available"], sum["reserved"])
			}
			if len(completes) > 0 {
				c.failf("%s: %s, yet %d WITHDRAW_COMPLETE were acknowledged", what, wd.Status, len(completes))
			}
			continue
		}
		want[k].Add(want[k], wd.Amount)
		if len(txs) != 1 {
			c.failf("%s: COMPLETED with %d payout transactions", what, len(txs))
			continue
		}
		t := txs[0]
		if t.State != "mined" || t.MinedHash == nil || wd.Settlement == nil || !strings.EqualFold(*t.MinedHash, *wd.Settlement) {
			c.failf("%s: payout %s, mined %v, settlement %v", what, t.State, deref(t.MinedHash), deref(wd.Settlement))
		}
		if !strings.EqualFold(t.From, s.HotWallet.Hex()) {
			c.failf("%s: paid from %s, not the hot wallet", what, t.From)
		}
		if kinds["SETTLE"] != 1 || kinds["RESERVE"] < 1 || sum["reserved"].Sign() != 0 || new(big.Int).Neg(sum["available"]).Cmp(wd.Amount) != 0 {
			c.failf("%s: fund entries %v move %s available, %s reserved; want one SETTLE and -%s available", what, kinds,
				sum["available"], sum["reserved"], wd.Amount)
		}
		if wd.Settlement != nil {
			if err := checkTransfer(ctx, s, common.HexToHash(*wd.Settlement), s.Asset(wd.Currency), common.HexToAddress(wd.Address), wd.Amount); err != nil {
				c.failf("%s: settlement %s: %v", what, short(*wd.Settlement), err)
			}
		}
		switch {
		case len(completes) > 1:
			c.failf("%s: %d distinct WITHDRAW_COMPLETE events acknowledged", what, len(completes))
		case len(completes) == 0:
			e := w.eventOf("WITHDRAW_COMPLETE", wd.ID)
			if why, ok := w.stillRetrying(e); ok {
				c.notef("%s: WITHDRAW_COMPLETE not delivered yet: %s", what, why)
			} else if e != nil && e.State == "dead" {
				c.notef("%s: WITHDRAW_COMPLETE dead-lettered", what)
			} else {
				c.failf("%s: COMPLETED, no WITHDRAW_COMPLETE acknowledged", what)
			}
		}
	}
	// Every destination holds exactly what was paid to it.
	keys := make([]destKey, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].addr < keys[j].addr })
	for _, k := range keys {
		bal, err := s.Balance(ctx, s.Asset(k.currency), common.HexToAddress(k.addr))
		if err != nil {
			c.failf("balance of %s: %v", k.addr, err)
		} else if bal.Cmp(want[k]) != 0 {
			c.failf("destination %s holds %s %s; its COMPLETED withdrawals add up to %s", k.addr, bal, k.currency, want[k])
		}
	}
	// What the run asked for happened.
	for _, o := range ours {
		wd, ok := db[o.ID]
		decision, _ := o.Decision()
		switch {
		case !ok:
			c.failf("withdrawal %s, submitted by the run, is not in the database", o.ID)
		case strings.HasPrefix(decision, "gave up") || decision == "":
			c.notef("withdrawal %s (mode %s) left %s: the run did not finish it (%s)", o.ID[:8], o.Operator.Mode, wd.Status, orNone(decision))
		case o.Reject && decision == "REJECTED" && wd.Status != "REJECTED":
			c.failf("withdrawal %s: rejected (answer REJECTED) but %s at the end", o.ID[:8], wd.Status)
		case !o.Reject && (decision == "COMPLETED" || decision == "PROCESSING" || decision == "AWAITING_APPROVAL") && wd.Status != "COMPLETED":
			c.failf("withdrawal %s: its payout was accepted (answer %s) but it is %s at the end", o.ID[:8], decision, wd.Status)
		case decision != "COMPLETED" && decision != "REJECTED" && decision != "PROCESSING" && decision != "AWAITING_APPROVAL":
			c.notef("withdrawal %s (mode %s): final answer %s, %s at the end", o.ID[:8], o.Operator.Mode, decision, wd.Status)
		}
	}
	return c
}

// checkTransfer checks that a mined transaction from the hot wallet moved exactly amount of a
// to dest.
func checkTransfer(ctx context.Context, s *Stack, hash common.Hash, a Asset, dest common.Address, amount *big.Int) error {
	r, err := s.Node.Client.TransactionReceipt(ctx, hash)
	if err != nil {
		return err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return errors.New("reverted")
	}
	tx, _, err := s.Node.Client.TransactionByHash(ctx, hash)
	if err != nil {
		return err
	}
	if a.Native() {
		if tx.To() == nil || *tx.To() != dest || tx.Value().Cmp(amount) != 0 {
			return fmt.Errorf("sends %s wei to %v, want %s to %s", tx.Value(), tx.To(), amount, dest.Hex())
		}
		return nil
	}
	tok := contracts.NewTestToken()
	n := 0
	for _, l := range r.Logs {
		if l.Address != a.Contract {
			continue
		}
		ev, err := tok.UnpackTransferEvent(l)
		if err != nil {
			continue
		}
		n++
		if ev.From != s.HotWallet || ev.To != dest || ev.Value.Cmp(amount) != 0 {
			return fmt.Errorf("moves %s %s from %s to %s, want %s from the hot wallet to %s", ev.Value, a.Symbol, ev.From.Hex(), ev.To.Hex(), amount, dest.Hex())
		}
	}
	if n != 1 {
		return fmt.Errorf("%d %s transfers", n, a.Symbol)
	}
	return nil
}

//nolint:gocyclo // one block per invariant, read as a list; split, the checks scatter
func checkFunds(ctx context.Context, s *Stack, w *world, ops []*Operator) *Check {
	c := &Check{Name: "operator funds reconcile with on-chain holdings"}
	res, err := s.Ops.Reconcile(ctx, &cofferv1.ReconcileRequest{})
	if err != nil {
		c.failf("OpsService.Reconcile: %v", err)
	} else {
		for _, l := range res.Lines {
			if !l.Ok {
				c.failf("Reconcile: %s holdings %s < owed %s (surplus %s)", l.Currency, l.Holdings, l.Owed, l.Surplus)
			} else {
				c.notef("Reconcile %s: holdings %s, owed %s (available %s, reserved %s), surplus %s", l.Currency, l.Holdings, l.Owed,
					l.Available, l.Reserved, l.Surplus)
			}
		}
	}
	// Exactly: the bankroll holds every credited deposit's net amount, the fee address every
	// token deposit's fee, the hot wallet its funding less what it paid (and, in ether, the gas).
	credited, fees, paid := map[string]*big.Int{}, map[string]*big.Int{}, map[string]*big.Int{}
	for _, a := range s.Assets {
		credited[a.Symbol], fees[a.Symbol], paid[a.Symbol] = new(big.Int), new(big.Int), new(big.Int)
	}
	for _, d := range w.deposits {
		if d.Status == "CREDITED" && d.Net != nil {
			credited[d.Currency].Add(credited[d.Currency], d.Net)
			fees[d.Currency].Add(fees[d.Currency], d.Fee)
		}
	}
	for _, wd := range w.withdrawals {
		if wd.Status == "COMPLETED" {
			paid[wd.Currency].Add(paid[wd.Currency], wd.Amount)
		}
	}
	gas := new(big.Int)
	for _, t := range w.txs {
		if strings.EqualFold(t.From, s.HotWallet.Hex()) && t.MinedHash != nil {
			r, err := s.Node.Client.TransactionReceipt(ctx, common.HexToHash(*t.MinedHash))
			if err != nil {
				c.failf("receipt of hot wallet transaction %s: %v", *t.MinedHash, err)
				continue
			}
			gas.Add(gas, new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice))
		}
	}
	for _, a := range s.Assets {
		bankroll, err1 := s.Balance(ctx, a, s.Bankroll)
		fee, err2 := s.Balance(ctx, a, s.FeeAddress)
		hot, err3 := s.Balance(ctx, a, s.HotWallet)
		if err := errors.Join(err1, err2, err3); err != nil {
			c.failf("balances of %s: %v", a.Symbol, err)
			continue
		}
		if bankroll.Cmp(credited[a.Symbol]) != 0 {
			c.failf("the bankroll holds %s %s; credited deposits add up to %s", bankroll, a.Symbol, credited[a.Symbol])
		}
		if !a.Native() && fee.Cmp(fees[a.Symbol]) != 0 {
			c.failf("the fee address holds %s %s; credited deposits' fees add up to %s", fee, a.Symbol, fees[a.Symbol])
		}
		wantHot := new(big.Int).Sub(s.HotFunding[a.Symbol], paid[a.Symbol])
		if a.Native() {
			wantHot.Sub(wantHot, gas)
		}
		if hot.Cmp(wantHot) != 0 {
			c.failf("the hot wallet holds %s %s; funded %s, paid out %s%s: want %s", hot, a.Symbol, s.HotFunding[a.Symbol], paid[a.Symbol],
				map[bool]string{true: fmt.Sprintf(", gas %s", gas)}[a.Native()], wantHot)
		}
	}
	// Each operator's funds: the ledger adds up to the balance, which is what the run expects.
	for _, op := range ops {
		for _, a := range s.Assets {
			want := new(big.Int)
			if v := op.Adjusted[a.Symbol]; v != nil {
				want.Add(want, v)
			}
			for _, d := range w.deposits {
				if d.OperatorID == op.ID && d.Currency == a.Symbol && d.Status == "CREDITED" && d.Net != nil {
					want.Add(want, d.Net)
				}
			}
			for _, wd := range w.withdrawals {
				if wd.OperatorID == op.ID && wd.Currency == a.Symbol && wd.Status == "COMPLETED" {
					want.Sub(want, wd.Amount)
				}
			}
			sumA, sumR := new(big.Int), new(big.Int)
			for _, e := range w.entries {
				if e.OperatorID == op.ID && e.Currency == a.Symbol {
					sumA.Add(sumA, e.Available)
					sumR.Add(sumR, e.Reserved)
				}
			}
			var row *dbFunds
			for i := range w.funds {
				if w.funds[i].OperatorID == op.ID && w.funds[i].Currency == a.Symbol {
					row = &w.funds[i]
				}
			}
			if row == nil {
				if want.Sign() != 0 {
					c.failf("operator %s has no %s funds row; expected %s", op.Name, a.Symbol, want)
				}
				continue
			}
			if row.Available.Cmp(sumA) != 0 || row.Reserved.Cmp(sumR) != 0 {
				c.failf("operator %s %s: balance %s/%s, its entries add up to %s/%s", op.Name, a.Symbol, row.Available, row.Reserved, sumA, sumR)
			}
			if row.Reserved.Sign() != 0 {
				c.failf("operator %s %s: %s still reserved with nothing in flight", op.Name, a.Symbol, row.Reserved)
			}
			if total := new(big.Int).Add(row.Available, row.Reserved); total.Cmp(want) != 0 {
				c.failf("operator %s %s: funds %s; adjustments + credited deposits - completed payouts = %s", op.Name, a.Symbol, total, want)
			}
		}
	}
	return c
}

func checkNonces(ctx context.Context, s *Stack, w *world) *Check {
	c := &Check{Name: "nonces have no gaps"}
	byFrom := map[string][]dbTx{}
	var stale []string
	for _, t := range w.txs {
		byFrom[strings.ToLower(t.From)] = append(byFrom[strings.ToLower(t.From)], t)
		what := fmt.Sprintf("transaction %d (%s %s, nonce %d from %s)", t.ID, t.Purpose, t.Ref, t.Nonce, t.From)
		switch t.State {
		case "mined":
		case "pending":
			// Pending in the database: is one of its signed attempts mined all the same (a record
			// nobody advanced), or is it really waiting?
			mined := ""
			for _, h := range w.attempts[t.ID] {
				if r, err := s.Node.Client.TransactionReceipt(ctx, common.HexToHash(h)); err == nil && r.Status == types.ReceiptStatusSuccessful {
					mined = h
				}
			}
			if mined != "" {
				stale = append(stale, fmt.Sprintf("%d (%s %s)", t.ID, t.Purpose, t.Ref))
			} else {
				c.failf("%s: pending at the end, none of its %d signed attempts mined", what, len(w.attempts[t.ID]))
			}
		default:
			c.failf("%s: %s", what, t.State)
		}
	}
	if len(stale) > 0 {
		c.notef("%d transactions mined on-chain are still recorded pending (nobody advanced their record): %s", len(stale),
			strings.Join(stale, ", "))
	}
	addrs := make([]string, 0, len(byFrom))
	for a := range byFrom {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		txs := byFrom[a]
		sort.Slice(txs, func(i, j int) bool { return txs[i].Nonce < txs[j].Nonce })
		for i, t := range txs {
			if t.Nonce != int64(i) {
				c.failf("%s: nonce %d where %d was due (%d transactions recorded)", a, t.Nonce, i, len(txs))
				break
			}
		}
		onChain, err := s.Node.Client.NonceAt(ctx, common.HexToAddress(a), nil)
		if err != nil {
			c.failf("nonce of %s: %v", a, err)
		} else if onChain != uint64(len(txs)) {
			c.failf("%s: %d transactions on-chain, %d recorded", a, onChain, len(txs))
		}
		if n, ok := w.nonces[a]; ok && n != int64(len(txs)) {
			c.failf("%s: next nonce %d allocated, %d transactions recorded", a, n, len(txs))
		}
	}
	c.notef("%d transactions from %d addresses (hot wallet: %d, gas tank: %d)", len(w.txs), len(byFrom),
		len(byFrom[strings.ToLower(s.HotWallet.Hex())]), len(byFrom[strings.ToLower(s.GasTank.Hex())]))
	return c
}

func checkJobs(w *world) *Check {
	c := &Check{Name: "no job is stuck"}
	now := time.Now()
	for _, j := range w.liveJobs {
		switch {
		case j.State == "running" && j.Attempted != nil && now.Sub(*j.Attempted) > 30*time.Second:
			c.failf("job %d %s running since %s (%s ago)", j.ID, j.Kind, j.Attempted.Local().Format("15:04:05"), now.Sub(*j.Attempted).Round(time.Second))
		case (j.State == "available" || j.State == "retryable" || j.State == "scheduled") && now.Sub(j.Scheduled) > 30*time.Second:
			c.failf("job %d %s %s, due since %s", j.ID, j.Kind, j.State, j.Scheduled.Local().Format("15:04:05"))
		case j.Kind == "webhook_drain" && j.State != "running":
			c.notef("job %d %s %s until %s (attempt %d)", j.ID, j.Kind, j.State, j.Scheduled.Local().Format("15:04:05"), j.Attempt)
		}
	}
	for _, j := range w.deadJobs {
		switch j.Kind {
		case "webhook_drain":
			// A drain given up (the events check looks at what it left queued, and the
			// repair job starts it again).
		case "deposit.settle", "withdrawal.payout":
			c.failf("job %d %s %s after %d attempts: %s", j.ID, j.Kind, j.State, j.Attempt, truncate(j.Errors, 300))
		default:
			c.notef("job %d %s %s after %d attempts (a periodic job runs again): %s", j.ID, j.Kind, j.State, j.Attempt, truncate(j.Errors, 200))
		}
	}
	return c
}

func checkEvents(w *world) *Check {
	c := &Check{Name: "no event is lost (delivered, or dead-lettered and listed)"}
	counts := map[string]int{}
	byID := map[string]*dbEvent{}
	for i := range w.events {
		e := &w.events[i]
		byID[e.ID] = e
		if e.Test {
			continue
		}
		if e.Sync {
			counts["synchronous WITHDRAW_REQUEST "+e.State]++
			continue
		}
		counts[e.Type+" "+e.State]++
		what := fmt.Sprintf("%s %s (subject %s)", e.Type, e.ID[:8], e.Subject)
		switch e.State {
		case "delivered":
			if w.ackedByEvent[e.ID] == 0 {
				c.failf("%s: delivered, but the receiver never acknowledged it", what)
			}
		case "dead":
			if !w.deadListed[e.ID] {
				c.failf("%s: dead-lettered but not listed by ListDeadLetteredWebhooks", what)
			}
		case "pending":
			if why, ok := w.stillRetrying(e); ok {
				c.notef("%s: %s", what, why)
			} else {
				c.failf("%s: pending after %d attempts with no delivery job (queued: %v; last error %q)", what, e.Attempts,
					e.NextAttempt != nil, e.LastError)
			}
		default:
			c.failf("%s: state %s", what, e.State)
		}
	}
	for id, n := range w.ackedByEvent {
		if byID[id] == nil {
			c.failf("the receiver acknowledged %d deliveries of %s, which is no event", n, id)
		}
	}
	// Every event the end state calls for exists.
	for _, d := range w.deposits {
		if d.Status == "CREDITED" && !d.Treasury && w.eventOf("DEPOSIT", strconv.FormatInt(d.ID, 10)) == nil {
			c.failf("deposit %d is credited but has no DEPOSIT event", d.ID)
		}
	}
	for _, wd := range w.withdrawals {
		if wd.Status == "COMPLETED" && w.eventOf("WITHDRAW_COMPLETE", wd.ID) == nil {
			c.failf("withdrawal %s is COMPLETED but has no WITHDRAW_COMPLETE event", wd.ID)
		}
		if wd.Mode == "EXTERNAL" && w.eventOf("WITHDRAW_REQUEST", wd.ID) == nil {
			c.failf("external-approval withdrawal %s has no WITHDRAW_REQUEST event", wd.ID)
		}
	}
	c.notef("events: %s; dead letters listed: %d", countsOf(counts), len(w.deadListed))
	return c
}

// Classes of calls.
const (
	classOK        = "ok"
	classUnavail   = "503 UNAVAILABLE"
	classRefusal   = "clean refusal"
	classKilled    = "connection lost with a killed replica"
	classInternal  = "5xx"
	classWrong     = "unexpected refusal"
	classTransport = "no answer"
	classAbandoned = "given up by the load at its end"
)

// classify sorts a call: ok, an acceptable answer to a fault, or a violation.
func classify(c *Call, tl *Timeline) (class string, violation bool) {
	switch {
	case c.Abandoned:
		return classAbandoned, false
	case c.Err != "":
		for _, f := range tl.Overlapping(c.Start, c.End, time.Second) {
			if f.Kind == KillAPI && f.Target == c.Replica {
				return classKilled, false
			}
		}
		return classTransport, true
	case c.Status/100 == 2:
		return classOK, false
	case c.Status == 503:
		return classUnavail, false
	case c.Status == 409 || c.Status == 410 || c.Status == 422 || c.Status == 429:
		return classRefusal, false
	case c.Status >= 500:
		return classInternal, true
	default:
		return classWrong, true
	}
}

func checkClientErrors(calls []*Call, tl *Timeline, apis []*Replica) *Check {
	c := &Check{Name: "every client error is 503/UNAVAILABLE or a clean refusal, never 500"}
	failures := map[string][]logFailure{}
	for _, r := range apis {
		failures[r.Name] = requestFailures(r.LogPath)
	}
	type group struct {
		n     int
		first *Call
	}
	groups := map[string]*group{}
	var keys []string
	for _, call := range calls {
		class, bad := classify(call, tl)
		if !bad {
			continue
		}
		var during []string
		for _, f := range tl.Overlapping(call.Start, call.End, 2*time.Second) {
			during = append(during, string(f.Kind))
		}
		fault := "no fault"
		if len(during) > 0 {
			fault = "during " + strings.Join(during, "+")
		}
		detail := fmt.Sprintf("%d %s", call.Status, call.Code)
		if call.Err != "" {
			detail = truncate(call.Err, 120)
			if strings.Contains(call.Err, "Client.Timeout") {
				detail = "no answer within a minute"
			}
		}
		key := fmt.Sprintf("%s: %s %s (%s)", class, call.Op, detail, fault)
		if groups[key] == nil {
			groups[key] = &group{first: call}
			keys = append(keys, key)
		}
		groups[key].n++
	}
	for _, k := range keys {
		g := groups[k]
		cause := ""
		if g.first.Status >= 500 {
			if why := causeOf(g.first, failures); why != "" {
				cause = "\nlogged cause: " + truncate(why, 300)
			}
		}
		c.failf("%d× %s; first at %s on %s: %s%s", g.n, k, g.first.Start.Format("15:04:05.000"), g.first.Replica,
			truncate(g.first.Message, 160), cause)
	}
	return c
}

func checkProcesses(tl *Timeline) *Check {
	c := &Check{Name: "no process exits on its own"}
	for _, crash := range tl.Crashes() {
		c.failf("%s", crash)
	}
	for _, f := range tl.Injected() {
		if f.Err != "" {
			c.failf("fault %s %s: %s", f.Kind, f.Target, f.Err)
		}
	}
	return c
}

func checkInterface(l *Load) *Check {
	c := &Check{Name: "answers and webhooks are as specified"}
	l.Ledger.mu.Lock()
	for _, p := range l.Ledger.Problems {
		c.failf("%s", p)
	}
	for _, n := range l.Ledger.Notes {
		c.notef("harness: %s", n)
	}
	l.Ledger.mu.Unlock()
	for _, p := range l.recv.Problems() {
		c.failf("%s", p)
	}
	return c
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func orNone(s string) string {
	if s == "" {
		return "no answer"
	}
	return s
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:10] + "…"
	}
	return hash
}
