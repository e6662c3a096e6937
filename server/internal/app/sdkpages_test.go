package app_test

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/coffer"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// TestGoSDKPagesThroughDeposits: the SDK's AllDeposits walks every page of the real
// server's list (page size 2 over 5 deposits), each deposit once, newest first.
func TestGoSDKPagesThroughDeposits(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	var want []int64
	for i := range 5 {
		d := env.InsertDeposit(t, domain.Deposit{OperatorID: op.ID, ExternalUserID: "pager", ChainID: 1337,
			TxHash: fmt.Sprintf("0x%064x", i+1), BlockNumber: 1, BlockHash: "0xb1", Address: matrixAddress, Currency: "USDT",
			Decimals: 6, ContractAddress: "0x00000000000000000000000000000000000000a1", GrossAmount: big.NewInt(5_000_000),
			Status: domain.DepositOrphaned, IdempotencyKey: fmt.Sprintf("pager-%d", i)})
		want = append(want, d.ID)
	}
	slices.Reverse(want)
	var got []int64
	c := coffer.New(env.URL, key)
	for d, err := range c.AllDeposits(t.Context(), &cofferv1.DepositServiceListDepositsRequest{ExternalUserId: "pager", PageSize: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.GetDepositId())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("deposits %v, want %v", got, want)
	}
}

// TestGoSDKEvents: against the real server, AllEvents reads the feed to now, and
// SubscribeEvents replays it and then yields events committed after it started, in feed
// order, each once.
func TestGoSDKEvents(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	var want []string
	add := func() {
		id, err := enqueueEvent(t.Context(), env.Pool, env.Services.Webhooks, op.ID, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for range 5 {
		add()
	}
	waitFeed(t, env, op.ID, len(want))
	c := coffer.New(env.URL, key)
	var listed []string
	for e, err := range c.AllEvents(t.Context(), &cofferv1.EventServiceListEventsRequest{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, e.GetEventId())
	}
	if !slices.Equal(listed, want) {
		t.Fatalf("AllEvents %v, want %v", listed, want)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var got []string
	for msg, err := range c.SubscribeEvents(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, msg.GetEvent().GetEventId())
		if len(got) == 5 {
			add()
			add()
		}
		if len(got) == 7 {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("SubscribeEvents %v, want %v", got, want)
	}
}
