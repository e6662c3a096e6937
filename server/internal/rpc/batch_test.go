package rpc_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
)

// TestListSweepBatchesInput: the page size is 0..500 (100 when zero) and the chain id 0 or
// positive; anything else is INVALID_ARGUMENT naming the field. With no batch the list is empty.
// (The listing itself is tested on real batches in deposit/batchlist_test.go; who may call it
// in app's auth matrix.)
func TestListSweepBatchesInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := bearer(context.Background(), b.env.OpsToken)
	for _, req := range []*cofferv1.ListSweepBatchesRequest{{}, {PageSize: 500, Open: true}, {ChainId: 1337, PageSize: 1}} {
		res, err := b.ops.ListSweepBatches(ctx, req)
		if err != nil || len(res.GetBatches()) != 0 {
			t.Fatalf("%v: %v %v", req, res, err)
		}
	}
	for _, c := range []struct {
		req   *cofferv1.ListSweepBatchesRequest
		field string
	}{
		{&cofferv1.ListSweepBatchesRequest{PageSize: 501}, "pageSize"},
		{&cofferv1.ListSweepBatchesRequest{PageSize: -1}, "pageSize"},
		{&cofferv1.ListSweepBatchesRequest{ChainId: -1}, "chainId"},
	} {
		_, err := b.ops.ListSweepBatches(ctx, c.req)
		if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: %v, want INVALID_ARGUMENT on %s", c.req, err, c.field)
		}
	}
}
