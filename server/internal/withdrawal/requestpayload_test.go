package withdrawal_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// TestRequestPayloadIsTheSameInBothModes: the spec's "The payload is identical in both modes"
// for WITHDRAW_REQUEST. The same submission sent synchronously (mode A, before the record
// exists) and queued in the outbox (mode B, from the stored record) carries the same fields
// with the same values, but for what names the withdrawal, its session and its time; once
// approved and paid, its WITHDRAW_COMPLETE carries the request's values again.
func TestRequestPayloadIsTheSameInBothModes(t *testing.T) {
	e := setupChain(t, withdrawal.Config{})
	sync, external := e.operator(domain.OperatorSettings{}), e.operator(modeB(domain.OperatorSettings{}))
	// Per withdrawal, not per mode: what tells the two apart.
	own := map[string]bool{"withdrawRequestId": true, "sessionRef": true, "requestedAt": true}
	cases := []struct{ fiat, amount, currency string }{
		{"USD", "25.5", "USDT"},
		{"USD", "0.1", "ETH"},
		{"EUR", "123.457", "USDT"},
		{"GBP", "7", "ETH"},
	}
	for i, c := range cases {
		t.Run(c.fiat+" "+c.amount+" "+c.currency, func(t *testing.T) {
			to := newAddress()
			open := func(op domain.Operator) domain.Session {
				o, err := e.sessions.Open(e.ctx, op, session.Withdraw, session.Input{ExternalUserID: "payload-user", Lang: "en",
					FiatCurrency: c.fiat, UserBalance: "5000", Amount: c.amount, OperatorReference: fmt.Sprintf("order-%d", i)})
				if err != nil {
					t.Fatal(err)
				}
				return o.Session
			}
			before := len(e.recv.received())
			a := e.submit(open(sync), to, c.currency)
			sent := e.recv.received()[before:]
			if len(sent) != 1 {
				t.Fatalf("mode A sent %d webhooks, want its one WITHDRAW_REQUEST", len(sent))
			}
			b := e.submit(open(external), to, c.currency)
			queued := e.requestBody(b.ID)
			fieldsA, fieldsB := sent[0], queued
			if len(fieldsA) != len(fieldsB) {
				t.Fatalf("mode A has %d fields, mode B %d:\n%v\n%v", len(fieldsA), len(fieldsB), fieldsA, fieldsB)
			}
			for k := range fieldsA {
				if own[k] {
					continue
				}
				if fieldsA.Get(k) != fieldsB.Get(k) {
					t.Errorf("%s: mode A %q, mode B %q", k, fieldsA.Get(k), fieldsB.Get(k))
				}
			}
			if fieldsA.Get("withdrawRequestId") != a.ID || fieldsB.Get("withdrawRequestId") != b.ID {
				t.Errorf("withdrawRequestId %s and %s, want the records' %s and %s", fieldsA.Get("withdrawRequestId"),
					fieldsB.Get("withdrawRequestId"), a.ID, b.ID)
			}
			// Paid, its WITHDRAW_COMPLETE repeats the request's values ("Same UUID",
			// cryptoAmountSent "Matches the WITHDRAW_REQUEST value").
			if d, err := e.svc.Decide(e.ctx, domain.Operators(external.ID), b.ID, withdrawal.OperatorApprove,
				domain.OperatorActor(external.ID), ""); err != nil || d.Held != "" {
				t.Fatalf("approve: %+v, %v", d, err)
			}
			e.payAll()
			complete := e.completeBody(b.ID)
			for k := range fieldsB {
				if k == "event" || k == "requestedAt" {
					continue
				}
				if complete[k] != fieldsB.Get(k) {
					t.Errorf("WITHDRAW_COMPLETE %s %q, its WITHDRAW_REQUEST's %q", k, complete[k], fieldsB.Get(k))
				}
			}
			for _, f := range []url.Values{fieldsA, fieldsB} {
				if _, err := time.Parse(time.RFC3339Nano, f.Get("requestedAt")); err != nil || f.Get("test") != "" {
					t.Errorf("requestedAt %q (%v), test %q: want an ISO 8601 time and no test field", f.Get("requestedAt"), err, f.Get("test"))
				}
			}
		})
	}
}

// requestBody is the form of the outbox's WITHDRAW_REQUEST of a withdrawal.
func (e *env) requestBody(withdrawalID string) url.Values {
	e.t.Helper()
	var body string
	if err := e.pool.QueryRow(e.ctx, `SELECT body FROM webhook_events WHERE event_type = 'WITHDRAW_REQUEST' AND subject_id = $1 AND NOT sync`,
		withdrawalID).Scan(&body); err != nil {
		e.t.Fatal(err)
	}
	v, err := url.ParseQuery(body)
	if err != nil {
		e.t.Fatal(err)
	}
	return v
}
