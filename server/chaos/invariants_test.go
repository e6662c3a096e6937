package chaos

import (
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// A world where one USDT payment was credited once, to its session, and its DEPOSIT
// acknowledged once.
func creditedWorld() (*world, []*Payment) {
	op := &Operator{Name: "sync", ID: "op-1"}
	sess := &DepositSession{SID: "sid-1", Ref: "sr_1", User: "u1", Operator: op}
	tx := common.HexToHash("0xabc")
	p := &Payment{Operator: op, User: "u1", Session: sess, Asset: Asset{Symbol: "USDT", Decimals: 6, Contract: common.HexToAddress("0x1")},
		Amount: big.NewInt(10_000_000), Tx: tx, LogIndex: 0}
	sid := "sid-1"
	w := &world{
		deposits: []dbDeposit{{ID: 7, OperatorID: "op-1", User: "u1", SessionID: &sid, TxHash: tx.Hex(), LogIndex: 0, Currency: "USDT",
			Status: "CREDITED", Gross: big.NewInt(10_000_000), Fee: big.NewInt(100_000), Net: big.NewInt(9_900_000)}},
		entries: []dbEntry{{OperatorID: "op-1", Currency: "USDT", Kind: "DEPOSIT", Ref: "deposit:7", Available: big.NewInt(9_900_000), Reserved: new(big.Int)}},
		events:  []dbEvent{{ID: "11111111-0000-0000-0000-000000000000", OperatorID: "op-1", Type: "DEPOSIT", Subject: "7", State: "delivered", Attempts: 1}},
		deliveries: []*Delivery{{ID: "11111111-0000-0000-0000-000000000000", Event: "DEPOSIT", Acked: true, Form: url.Values{
			"transactionHash": {tx.Hex()}, "sessionRef": {"sr_1"}, "depositId": {"7"}, "externalUserId": {"u1"},
			"grossAmount": {"10000000"}, "amount": {"9900000"}, "feeAmount": {"100000"}}}},
		ackedByEvent: map[string]int{"11111111-0000-0000-0000-000000000000": 1},
		deadListed:   map[string]bool{},
	}
	return w, []*Payment{p}
}

func violations(c *Check) string { return strings.Join(c.Violations, "\n") }

func TestCheckDeposits(t *testing.T) {
	w, payments := creditedWorld()
	if c := checkDeposits(w, payments); !c.OK() {
		t.Fatalf("a clean world fails:\n%s", violations(c))
	}
	for name, tc := range map[string]struct {
		spoil func(w *world, p []*Payment)
		want  string
	}{
		"credited twice in the funds": {func(w *world, _ []*Payment) { w.entries = append(w.entries, w.entries[0]) }, "credited 2 times"},
		"another session":             {func(w *world, _ []*Payment) { s := "sid-2"; w.deposits[0].SessionID = &s }, "belongs to session sid-2"},
		"not credited":                {func(w *world, _ []*Payment) { w.deposits[0].Status = "SWEEPING" }, "is SWEEPING at the end"},
		"two DEPOSIT events": {func(w *world, _ []*Payment) {
			d := *w.deliveries[0]
			d.ID = "22222222-0000-0000-0000-000000000000"
			w.deliveries = append(w.deliveries, &d)
		}, "2 distinct DEPOSIT events"},
		"no DEPOSIT":                      {func(w *world, _ []*Payment) { w.deliveries = nil }, "no DEPOSIT webhook acknowledged"},
		"wrong sessionRef on the webhook": {func(w *world, _ []*Payment) { w.deliveries[0].Form.Set("sessionRef", "sr_2") }, "DEPOSIT says sessionRef sr_2"},
		"a deposit nobody paid": {func(w *world, _ []*Payment) {
			w.deposits = append(w.deposits, dbDeposit{ID: 8, TxHash: "0xdef", Gross: big.NewInt(1), Currency: "ETH", Status: "CREDITED"})
		}, "is no payment the run made"},
		"a payment never recorded": {func(w *world, _ []*Payment) { w.deposits = nil }, "0 deposit rows"},
	} {
		t.Run(name, func(t *testing.T) {
			w, payments := creditedWorld()
			tc.spoil(w, payments)
			if c := checkDeposits(w, payments); !strings.Contains(violations(c), tc.want) {
				t.Fatalf("want a violation with %q, got:\n%s", tc.want, violations(c))
			}
		})
	}
}

func TestCheckEvents(t *testing.T) {
	w, _ := creditedWorld()
	if c := checkEvents(w); !c.OK() {
		t.Fatalf("a clean world fails:\n%s", violations(c))
	}
	w.ackedByEvent = map[string]int{}
	if c := checkEvents(w); !strings.Contains(violations(c), "delivered, but the receiver never acknowledged it") {
		t.Fatalf("delivered without an ack: %s", violations(c))
	}
	w, _ = creditedWorld()
	w.events[0].State = "dead"
	if c := checkEvents(w); !strings.Contains(violations(c), "not listed") {
		t.Fatalf("dead, not listed: %s", violations(c))
	}
	w.deadListed[w.events[0].ID] = true
	if c := checkEvents(w); !c.OK() {
		t.Fatalf("dead and listed: %s", violations(c))
	}
	w.events[0].State = "pending"
	if c := checkEvents(w); !strings.Contains(violations(c), "no delivery job") {
		t.Fatalf("pending without a job: %s", violations(c))
	}
	w.liveJobs = []dbJob{{ID: 3, Kind: "webhook_drain", State: "scheduled", OperatorID: w.events[0].OperatorID, Scheduled: time.Now().Add(time.Hour)}}
	if c := checkEvents(w); !strings.Contains(violations(c), "no delivery job (queued: false") {
		t.Fatalf("pending, not queued, with a drain: %s", violations(c))
	}
	w.events[0].NextAttempt = new(time.Now().Add(time.Hour))
	if c := checkEvents(w); !c.OK() || len(c.Notes) < 2 {
		t.Fatalf("pending with its retry scheduled is noted, not a violation: %s %v", violations(c), c.Notes)
	}
	w, _ = creditedWorld()
	w.events = nil
	if c := checkEvents(w); !strings.Contains(violations(c), "has no DEPOSIT event") {
		t.Fatalf("credited without an event: %s", violations(c))
	}
}

func TestCheckClientErrors(t *testing.T) {
	now := time.Now()
	tl := &Timeline{injected: []*Injected{{Fault: Fault{Kind: KillAPI, Target: "api-2"}, Start: now, End: now.Add(5 * time.Second)}}}
	call := func(status int, err, replica string, at time.Duration) *Call {
		return &Call{Op: "POST /session/deposit", Replica: replica, Start: now.Add(at), End: now.Add(at + 100*time.Millisecond), Status: status, Err: err}
	}
	ok := []*Call{call(200, "", "api-1", 0), call(503, "", "api-1", 0), call(422, "", "api-1", 0), call(409, "", "api-1", 0),
		call(0, "EOF", "api-2", time.Second)}
	// The load's context ended while the call was in flight (seed 3 in CI: the call went out
	// as the load's time ran out; the server saw it cancelled after 1.3 ms).
	abandoned := call(0, "context deadline exceeded", "api-1", 0)
	abandoned.Abandoned = true
	ok = append(ok, abandoned)
	if c := checkClientErrors(ok, tl, nil); !c.OK() {
		t.Fatalf("acceptable answers fail:\n%s", violations(c))
	}
	for _, bad := range []*Call{call(500, "", "api-1", 0), call(404, "", "api-1", 0), call(0, "EOF", "api-1", time.Second),
		call(0, "EOF", "api-2", time.Minute)} {
		if c := checkClientErrors([]*Call{bad}, tl, nil); c.OK() {
			t.Fatalf("%d %q on %s at +%s passes", bad.Status, bad.Err, bad.Replica, bad.Start.Sub(now))
		}
	}
}

func TestCheckJobs(t *testing.T) {
	long := time.Now().Add(-time.Minute)
	w := &world{liveJobs: []dbJob{{ID: 1, Kind: "withdrawal.payout", State: "running", Attempted: &long}}}
	if c := checkJobs(w); c.OK() {
		t.Fatal("a job running for a minute passes")
	}
	w = &world{liveJobs: []dbJob{{ID: 2, Kind: "deposit.settle", State: "available", Scheduled: long}}}
	if c := checkJobs(w); c.OK() {
		t.Fatal("a job due for a minute passes")
	}
	w = &world{deadJobs: []dbJob{{ID: 3, Kind: "withdrawal.payout", State: "discarded"}}}
	if c := checkJobs(w); c.OK() {
		t.Fatal("a discarded payout passes")
	}
	w = &world{deadJobs: []dbJob{{ID: 4, Kind: "deposit.scan", State: "discarded"}}}
	if c := checkJobs(w); !c.OK() || len(c.Notes) != 1 {
		t.Fatalf("a discarded periodic scan is a note: %v %v", c.Violations, c.Notes)
	}
}

// The recovery table measures every kill and finds the worst gap per kind.
func TestRecoveryTable(t *testing.T) {
	t0 := time.Now()
	killed := []KilledJob{
		{ID: 1, Kind: "deposit.scan", AttemptStart: t0, KilledAt: t0.Add(time.Second), PickedUp: t0.Add(5 * time.Second), Recovered: t0.Add(6 * time.Second)},
		{ID: 2, Kind: "deposit.scan", AttemptStart: t0, KilledAt: t0.Add(time.Second), PickedUp: t0.Add(20 * time.Second), Recovered: t0.Add(21 * time.Second)},
		{ID: 3, Kind: "withdrawal.payout", AttemptStart: t0, KilledAt: t0.Add(time.Second)},
		{ID: 4, Kind: "cleanup", AttemptStart: t0, KilledAt: t0, Recovered: t0.Add(time.Second)},
	}
	rows := RecoveryTable(killed, t0.Add(40*time.Second))
	byKind := map[string]RecoveryRow{}
	for _, r := range rows {
		byKind[r.Kind] = r
	}
	if r := byKind["deposit.scan"]; r.Jobs != 2 || r.WorstGap != 21*time.Second || r.WorstPickup != 19*time.Second || !r.Missed() {
		t.Fatalf("scan row %+v", r)
	}
	if r := byKind["withdrawal.payout"]; r.Unrecovered != 1 || r.WorstGap != 40*time.Second || !r.Missed() {
		t.Fatalf("payout row %+v", r)
	}
	if r := byKind["webhook_drain"]; r.Jobs != 0 || r.Missed() {
		t.Fatalf("webhook row %+v", r)
	}
	if r := byKind["cleanup"]; r.Jobs != 1 || r.Target != 0 || r.Missed() {
		t.Fatalf("cleanup row %+v", r)
	}
}
