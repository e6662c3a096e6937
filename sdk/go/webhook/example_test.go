package webhook_test

import (
	"fmt"
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
