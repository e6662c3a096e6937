package coffer

import (
	"context"
	"iter"

	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
)

// pages walks a paged list: fetch returns one page's items and the next page's token ("" on
// the last). The request is cloned, so the caller's stays as it was.
func pages[Req proto.Message, Item any](ctx context.Context, req Req, setToken func(Req, string),
	fetch func(context.Context, Req) ([]Item, string, error),
) iter.Seq2[Item, error] {
	return func(yield func(Item, error) bool) {
		r, _ := proto.Clone(req).(Req) // Clone keeps the type
		for {
			items, next, err := fetch(ctx, r)
			if err != nil {
				var zero Item
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			setToken(r, next)
		}
	}
}

// AllDeposits iterates over every deposit the request selects, page after page, newest
// first. An error ends the iteration after it is yielded.
//
//	for d, err := range c.AllDeposits(ctx, &cofferv1.DepositServiceListDepositsRequest{ExternalUserId: "user-1"}) {
//		if err != nil { return err }
//		reconcile(d)
//	}
func (c *Client) AllDeposits(ctx context.Context, req *cofferv1.DepositServiceListDepositsRequest) iter.Seq2[*cofferv1.OperatorDeposit, error] {
	if req == nil {
		req = &cofferv1.DepositServiceListDepositsRequest{}
	}
	return pages(ctx, req, func(r *cofferv1.DepositServiceListDepositsRequest, t string) { r.PageToken = t },
		func(ctx context.Context, r *cofferv1.DepositServiceListDepositsRequest) ([]*cofferv1.OperatorDeposit, string, error) {
			res, err := c.Deposits.ListDeposits(ctx, r)
			return res.GetDeposits(), res.GetNextPageToken(), err
		})
}

// AllWithdrawals iterates over every withdrawal the request selects, page after page.
func (c *Client) AllWithdrawals(ctx context.Context, req *cofferv1.WithdrawalServiceListWithdrawalsRequest) iter.Seq2[*cofferv1.Withdrawal, error] {
	if req == nil {
		req = &cofferv1.WithdrawalServiceListWithdrawalsRequest{}
	}
	return pages(ctx, req, func(r *cofferv1.WithdrawalServiceListWithdrawalsRequest, t string) { r.PageToken = t },
		func(ctx context.Context, r *cofferv1.WithdrawalServiceListWithdrawalsRequest) ([]*cofferv1.Withdrawal, string, error) {
			res, err := c.Withdrawals.ListWithdrawals(ctx, r)
			return res.GetWithdrawals(), res.GetNextPageToken(), err
		})
}
