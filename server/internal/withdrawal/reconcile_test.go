package withdrawal_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// What was seen: the reconciliation read the operators' funds from the database, then the hot
// wallet's balance from the chain, and took a payout as gone from the hot wallet only once the
// payout job had recorded it mined. A payout mined on the chain but not recorded yet (until
// the job's next poll, or for as long as the job waits behind a stalled worker), or mined
// between the two reads, was still owed in full while the hot wallet no longer held it: an
// operator whose funds the hot wallet covered exactly read 10 USDT short (OK false,
// coffer_funds_surplus -10), at every payout. The reconciliation now reads the holdings at one
// block and counts as paid out every reserved payout whose transaction succeeded at or below
// that block, whatever the payout job recorded so far.
func TestReconcileCountsAPayoutMinedBeforeItIsRecorded(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	op := e.unfundedOperator(domain.OperatorSettings{})
	e.fund(op, "USDT", "10000") // exactly the hot wallet's 10,000 USDT
	rec := &funds.Reconciler{Ledger: e.ledger, Clients: map[int64]*chain.Client{e.dev.ChainID(): e.client}, HotWallet: e.hot}
	usdt := func(step string, wantPaidOut string) {
		t.Helper()
		lines, err := rec.Reconcile(e.ctx, e.dev.ChainID())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for _, l := range lines {
			if l.Currency != "USDT" {
				continue
			}
			if !l.OK || !l.Surplus.IsZero() || !l.PaidOut.Equal(decimal.RequireFromString(wantPaidOut)) {
				t.Fatalf("%s: holdings %s, owed %s (paid out %s), surplus %s, OK %v; want surplus 0 with %s paid out", step,
					l.Holdings, l.Owed, l.PaidOut, l.Surplus, l.OK, wantPaidOut)
			}
			return
		}
		t.Fatalf("%s: no USDT line", step)
	}
	usdt("before the withdrawal", "0")

	w := e.queuedPayout(op, "user-1", "10.00")
	usdt("payout queued", "0")
	if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
		t.Fatalf("pay: %v %v", done, err)
	}
	usdt("payout sent, not mined", "0")
	e.dev.Commit() // mined; the payout job has not looked since
	usdt("payout mined, not recorded", "10")
	if _, err := e.svc.Pay(e.ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	usdt("payout recorded mined", "10")
	e.payAll()
	if got := e.get(w.ID); got.Status != domain.WithdrawalCompleted {
		t.Fatalf("withdrawal %s", got.Status)
	}
	usdt("payout settled", "0")
}

// What was seen: the reconciliation read the books (one snapshot) and then the chain's head,
// and took the holdings at that head. A payout whose transaction was signed after the
// snapshot and mined before the head was read was in neither the payouts in flight (none was
// stored yet) nor the hot wallet: an exactly covered operator read 10 USDT short (OK false).
// The heads are now read before the books: every payout that left the hot wallet at or below
// the block read is stored by then.
func TestReconcileCountsAPayoutSignedAfterItsBooksWereRead(t *testing.T) {
	t.Parallel()
	e := setupChain(t, withdrawal.Config{})
	op := e.unfundedOperator(domain.OperatorSettings{})
	e.fund(op, "USDT", "10000") // exactly the hot wallet's 10,000 USDT
	w := e.queuedPayout(op, "user-1", "10.00")
	var once sync.Once
	// The payout is signed, sent and mined while the reconciliation reads the chain's head.
	node := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"eth_blockNumber"`) {
			once.Do(func() {
				if done, err := e.svc.Pay(e.ctx, w.ID); err != nil || done {
					t.Errorf("pay: %v %v", done, err)
				}
				e.dev.Commit()
			})
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, e.dev.RPCURL(), bytes.NewReader(body))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rw.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(rw, resp.Body)
	}))
	t.Cleanup(node.Close)
	n := e.client.Network
	n.RPCURLs = []string{node.URL}
	c := chain.Dial(n, nil)
	t.Cleanup(c.Close)
	lines, err := (&funds.Reconciler{Ledger: e.ledger, Clients: map[int64]*chain.Client{e.dev.ChainID(): c}, HotWallet: e.hot}).
		Reconcile(e.ctx, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if l.Currency == "USDT" && (!l.OK || !l.Surplus.IsZero()) {
			t.Errorf("holdings %s, owed %s (paid out %s), surplus %s, OK %v; want surplus 0", l.Holdings, l.Owed, l.PaidOut,
				l.Surplus, l.OK)
		}
	}
}
