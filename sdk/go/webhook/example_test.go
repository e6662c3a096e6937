package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// A receiver verifies the signature headers against the raw body with its operator key, then
// parses the body into the typed event.
func ExampleVerify() {
	key := []byte("sk_live_example")
	body := []byte("event=DEPOSIT&depositId=42&externalUserId=user-1&amount=25.00")
	sentAt := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	header := webhook.Headers([][]byte{key}, "evt_1", sentAt, body) // what Coffer sends

	receivedAt := sentAt.Add(2 * time.Second)
	if err := webhook.Verify(header, body, key, receivedAt); err != nil {
		fmt.Println("refused:", err)
		return
	}
	msg, err := webhook.Parse(body)
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	dep := msg.(*cofferv1.DepositEvent)
	fmt.Println(webhook.EventName(msg), dep.GetDepositId(), dep.GetExternalUserId(), dep.GetAmount())

	// A replay outside the tolerance, or a body changed on the way, is refused.
	fmt.Println(webhook.Verify(header, body, key, sentAt.Add(webhook.Tolerance+time.Second)) != nil)
	fmt.Println(webhook.Verify(header, []byte("event=DEPOSIT&depositId=43"), key, receivedAt) != nil)
	// Output:
	// DEPOSIT 42 user-1 25.00
	// true
	// true
}

// Encode renders an event as the form body Coffer posts; Parse reads it back.
func ExampleEncode() {
	body, err := webhook.Encode(&cofferv1.WithdrawCompleteEvent{WithdrawRequestId: "5f0c", Status: "COMPLETED"})
	if err != nil {
		fmt.Println(err)
		return
	}
	msg, _ := webhook.Parse(body)
	fmt.Println(webhook.EventName(msg), msg.(*cofferv1.WithdrawCompleteEvent).GetStatus())
	// Output: WITHDRAW_COMPLETE COMPLETED
}

// Sign gives one v1 signature per key, newest first: during a key rotation a receiver that
// knows either key accepts the event.
func ExampleSign() {
	at := time.Unix(1700000000, 0)
	sig := webhook.Sign([][]byte{[]byte("sk_new"), []byte("sk_old")}, "evt_1", at, []byte("event=DEPOSIT"))
	fmt.Println(len(sig) > 0, sig[:3])
	// Output: true v1,
}

// ConstructEvent verifies and parses in one call: nothing is parsed from a body whose
// signature does not verify.
func ExampleConstructEvent() {
	key := []byte("sk_live_example")
	body := []byte("event=WITHDRAW_COMPLETE&withdrawRequestId=5f0c&status=COMPLETED")
	header := webhook.Headers([][]byte{key}, "evt_2", time.Now(), body) // what Coffer sends

	msg, err := webhook.ConstructEvent(body, header, key, webhook.WithTolerance(time.Minute))
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	fmt.Println(webhook.EventName(msg), msg.(*cofferv1.WithdrawCompleteEvent).GetWithdrawRequestId())
	_, err = webhook.ConstructEvent(body, header, []byte("sk_other"))
	fmt.Println(errors.Is(err, webhook.ErrSignature))
	// Output:
	// WITHDRAW_COMPLETE 5f0c
	// true
}

// Handler is the operator's webhook endpoint: it verifies, parses and answers the JSON Coffer
// expects. A synchronous WITHDRAW_REQUEST is approved with ReplyOK or denied with a code.
func ExampleHandler() {
	key := []byte("sk_live_example")
	hook := webhook.Handler(key, func(_ context.Context, e webhook.Event) (webhook.Reply, error) {
		if e.Test {
			return webhook.OK("test received"), nil // no side effects for test events
		}
		switch m := e.Message.(type) {
		case *cofferv1.DepositEvent:
			// Credit m.GetAmountInDollar() once per m.GetIdempotencyKey().
			return webhook.OK("credited"), nil
		case *cofferv1.WithdrawRequestEvent:
			if m.GetFiatAmount() == "" {
				return webhook.Deny(webhook.ReplyAmountTooLow, ""), nil
			}
			return webhook.OK("approved"), nil
		}
		return webhook.OK("ignored"), nil
	})

	body := []byte("event=WITHDRAW_REQUEST&withdrawRequestId=5f0c")
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/coffer/webhook", bytes.NewReader(body))
	req.Header = webhook.Headers([][]byte{key}, "evt_3", time.Now(), body)
	rec := httptest.NewRecorder()
	hook.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body.String(), webhook.ReplyAmountTooLow.Message())
	// Output: 200 {"error":6,"description":""} Withdrawal amount too low
}
