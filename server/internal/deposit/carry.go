package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Carries. A retired sweep's token transfer mined before its cancel (its signed bytes are
// public) moved a later payment's tokens to the bankroll in a written-off deposit's name; the
// sweep is finished as mined and the written-off deposit is not credited (retire.go). Before,
// that money sat in the bankroll for no one while the later deposit's own sweep asked the
// address for its whole amount, which it no longer held: it failed its gas estimate on every
// pass, SWEEPING for good (the gas tank can make up ETH, never tokens). So what a finished
// sweep moved of an asset for deposits it did not credit is carried (store.sweep_carries):
// the address's next sweep of the asset sends only what its deposits need beyond the carry
// (nothing when the carry covers them) and credits them in full, taking the carry in the
// transaction that credits. The bankroll side and the fee address side are carried apart: each
// received what it received. They are taken as a whole, by every kind of sweep (feeFromCarry,
// takeAcrossSides): with the operator's fee changed in between, one side can exceed the later
// deposits' and the other fall short; what the bankroll side holds beyond their net covers
// their fee (kept in the bankroll), and what the fee side holds beyond their fee raises it (at
// the fee address, never credited). A carry larger than a sweep's need is taken in part, the rest left
// for the address's next deposits (the money they paid is what it moved).
//
// Native groups carry too: what a finished sweep's native transfer sent for the deposits it
// did not credit (their share of its value, gas taken off), and, with a fee address, what its
// fee transfer sent for them. Without it, a later native sweep of the address (a later
// payment's, or the written-off deposit's own once reinstated) asked the address for its whole
// net and fee, which the old transfers had taken, and the gas tank made up the shortfall: a
// deposit's value paid by the gas tank. The later sweep sends only what its deposits' net
// exceeds the carry by (nothing when the carry covers it, or what is left cannot pay its own
// gas), and only the fee beyond the fee side, and credits what its transfer and the carry it
// took reached the bankroll with.
//
// Batched sweeps carry too. A batch in flight with a written-off deposit is cancelled
// (retire.go), but its public bytes may be mined first with a later payment's money: the batch
// moved the deposit's exact amount in its name, and nothing else could move it, so the later
// deposit's own batch asked the address for money it no longer held and was skipped for good.
// What such a batch moved for the deposits it did not credit is carried (batchSides: net to
// the bankroll and fee to the fee address; without one the gross to the bankroll, where a
// batch leaves the fee), and the address's next batch asks for its deposits' amounts less the
// carry (batchPlanned), or is credited with no batch when the carry covers them
// (creditCovered), taking what the carry covered. A delegated address cannot take the top-up
// sweep: a 21,000-gas top-up to it fails.

// nativeAfterCarry is what a native group's transfers are to send before their gas, the
// address's carry (other than the sweep's own rows) taken off as a whole, as for a token
// (afterCarry): to the bankroll, its deposits' net; to the fee address (with one), their fees;
// and that carry. Taken side by side, a carry whose sides did not match the deposits' fee
// asked the address, which the carry's transfers had emptied, for one side's difference, and
// the gas tank made it up: a deposit's value paid by the gas tank.
func (s *Service) nativeAfterCarry(ctx context.Context, n chain.Network, sw domain.Sweep, g *group) (net, fee *big.Int, carry store.Carry, err error) {
	if carry, err = store.New(s.pool).CarryBalance(ctx, sw.ChainID, sw.Address, g.asset.Symbol, sw.ID); err != nil {
		return nil, nil, carry, err
	}
	feeFromCarry(g, transferSides(n, g), carry)
	planned, _ := takeAcrossSides(transferSides(n, g), carry)
	return planned.Bankroll, planned.Fee, carry, nil
}

// nativeFeeTaken is the fee side of carry a native group takes: what the fee address already
// received of its deposits' fees (none without a fee address).
func nativeFeeTaken(n chain.Network, g *group, carry store.Carry) *big.Int {
	if n.FeeAddress == (common.Address{}) || carry.Fee.Sign() <= 0 {
		return new(big.Int)
	}
	return new(big.Int).Set(minBig(g.fee, carry.Fee))
}

// nativeReached is what reached the bankroll for a finished sweep's native group: moved, its
// transfer's value (none when the carry covered it), and taken, what it sent short of its
// deposits' net out of the address's carry (at most the carry). No transfer and no carry is an
// error: nothing would be credited from nothing.
func (s *Service) nativeReached(ctx context.Context, q *store.Queries, sw domain.Sweep, g *group) (moved, taken *big.Int, err error) {
	moved, taken = new(big.Int), new(big.Int)
	t, err := q.ChainTxByRef(ctx, PurposeSweep, sweepRef(sw.ID, g.asset.Symbol))
	switch {
	case err == nil:
		moved.Set(t.Value)
	case !errors.Is(err, store.ErrNotFound):
		return nil, nil, fmt.Errorf("sweep %d: %s transfer: %w", sw.ID, g.asset.Symbol, err)
	}
	c, err := q.CarryBalance(ctx, sw.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return nil, nil, err
	}
	if short := new(big.Int).Sub(new(big.Int).Sub(g.gross, g.fee), moved); short.Sign() > 0 {
		taken.Set(minBig(short, c.Bankroll))
	}
	if moved.Sign() == 0 && taken.Sign() == 0 {
		return nil, nil, fmt.Errorf("sweep %d: no %s transfer and no carry for its deposits", sw.ID, g.asset.Symbol)
	}
	return moved, taken, nil
}

// settleNativeCarry is settleCarries for a native group: the carry it took, and its share of
// what reached the bankroll and the fee address for the deposits it did not credit, carried.
func (s *Service) settleNativeCarry(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group,
	credited map[int64]bool,
) error {
	moved, takenNet, err := s.nativeReached(ctx, q, sw, g)
	if err != nil {
		return err
	}
	takenFee, carriedFee, err := s.nativeFeeCarry(ctx, q, n, sw, g, credited)
	if err != nil {
		return err
	}
	balance, err := q.CarryBalance(ctx, sw.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return err
	}
	// The fee its plan left to the carry's bankroll side (nativeAfterCarry) is taken too, not
	// credited: it stays in the bankroll, as the fee does with no fee address.
	takenBankroll := new(big.Int).Add(takenNet, feeInBankrollSide(transferSides(n, g), balance))
	if takenBankroll.Sign() > 0 || takenFee.Sign() > 0 {
		neg := store.Carry{Bankroll: new(big.Int).Neg(takenBankroll), Fee: new(big.Int).Neg(takenFee)}
		if err := q.InsertCarry(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID, store.CarryTaken, neg); err != nil {
			return err
		}
	}
	carried := store.Carry{Bankroll: new(big.Int), Fee: carriedFee}
	for i, share := range nativeShares(g, new(big.Int).Add(moved, takenNet)) {
		if !credited[g.deposits[i].ID] && share.Sign() > 0 {
			carried.Bankroll.Add(carried.Bankroll, share)
		}
	}
	return s.carry(ctx, q, n, sw, g, carried)
}

// nativeFeeCarry is settleNativeCarry's fee side (with a fee address): taken, the fee side its
// planning took off (nativeAfterCarry); carried, what reached the fee address (its mined fee
// transfer's value and the carry taken) beyond the fees of the deposits it credited, at most
// the others' fees.
func (s *Service) nativeFeeCarry(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group,
	credited map[int64]bool,
) (taken, carried *big.Int, err error) {
	if n.FeeAddress == (common.Address{}) {
		return new(big.Int), new(big.Int), nil
	}
	balance, err := q.CarryBalance(ctx, sw.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return nil, nil, err
	}
	taken = nativeFeeTaken(n, g, balance)
	reached := new(big.Int).Set(taken)
	t, err := q.ChainTxByRef(ctx, PurposeSweepFee, sweepRef(sw.ID, g.asset.Symbol))
	switch {
	case err == nil && t.State == domain.ChainTxMined:
		reached.Add(reached, t.Value)
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, nil, err
	}
	owned, left := new(big.Int), new(big.Int)
	for _, d := range g.deposits {
		if credited[d.ID] {
			owned.Add(owned, g.fees[d.ID])
		} else {
			left.Add(left, g.fees[d.ID])
		}
	}
	carried = minBig(new(big.Int).Sub(reached, owned), left)
	if carried.Sign() < 0 {
		carried = new(big.Int)
	}
	return taken, carried, nil
}

// parkedAfterCarry is parked, the native deposits at an address outside sweep except (fund),
// less what of the address's native carry stands for them: an earlier sweep's transfers took
// that much of their money to the bankroll and the fee address, so the address no longer holds
// it and their sweep will not send it. Counted, the gas tank made it up, and it stayed at the
// deposit address for good. Sweep except's own native deposits are left as much of the carry as
// they can take (their gross: never less than they take, so no sweep is short of what it sends).
func (s *Service) parkedAfterCarry(ctx context.Context, q *store.Queries, n chain.Network, address string, except int64,
	parked *big.Int,
) (*big.Int, error) {
	carry, err := q.CarryBalance(ctx, n.ChainID, address, n.NativeSymbol, except)
	if err != nil {
		return nil, err
	}
	left := new(big.Int)
	for _, side := range []*big.Int{carry.Bankroll, carry.Fee} {
		if side.Sign() > 0 {
			left.Add(left, side)
		}
	}
	if left.Sign() == 0 {
		return parked, nil
	}
	if except != 0 {
		own, err := q.SweepDeposits(ctx, except)
		if err != nil {
			return nil, err
		}
		for _, d := range own {
			if d.ContractAddress == "" {
				left.Sub(left, minBig(left, d.GrossAmount))
			}
		}
	}
	return new(big.Int).Sub(parked, minBig(parked, left)), nil
}

// afterCarry is what a token group's transfers send, the address's carry for the asset (other
// than the sweep's own rows) taken off as a whole, as a batch takes it (feeFromCarry,
// takeAcrossSides): to the bankroll, its deposits' net; to the fee address (with one), their
// fees. Either may be zero. Taken side by side, a carry whose sides did not match the
// deposits' fee (the operator changed it between the sweep that carried and this one) asked
// the address, which the carry's transfers had emptied, for one side's difference while the
// other side's carry held it: the transfer failed its gas estimate on every pass.
func (s *Service) afterCarry(ctx context.Context, n chain.Network, sw domain.Sweep, g *group) (net, fee *big.Int, err error) {
	carry, err := store.New(s.pool).CarryBalance(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return nil, nil, err
	}
	feeFromCarry(g, transferSides(n, g), carry)
	planned, _ := takeAcrossSides(transferSides(n, g), carry)
	return planned.Bankroll, planned.Fee, nil
}

// transferSides is what an unbatched group's transfers move for its deposits (gas aside): their
// net to the bankroll and, with a fee address, their fees to it (without one the fee stays at
// the deposit address).
func transferSides(n chain.Network, g *group) store.Carry {
	sides := store.Carry{Bankroll: new(big.Int), Fee: new(big.Int)}
	for _, d := range g.deposits {
		fee := g.fees[d.ID]
		sides.Bankroll.Add(sides.Bankroll, new(big.Int).Sub(d.GrossAmount, fee))
		if n.FeeAddress != (common.Address{}) {
			sides.Fee.Add(sides.Fee, fee)
		}
	}
	return sides
}

// unsweptAfterCarry is what of a token's unswept deposits at an address (gross) the address
// still holds once its carry is taken off: what a transfer of them can move. Never negative.
func (s *Service) unsweptAfterCarry(ctx context.Context, n chain.Network, address string, g *group) (*big.Int, error) {
	carry, err := store.New(s.pool).CarryBalance(ctx, n.ChainID, address, g.asset.Symbol, 0)
	if err != nil {
		return nil, err
	}
	left := new(big.Int).Sub(g.gross, carry.Bankroll)
	left.Sub(left, carry.Fee)
	if left.Sign() < 0 {
		left.SetInt64(0)
	}
	return left, nil
}

// settleCarries records, in the transaction crediting a finished sweep, for each group: the
// carry its transfers did not send (its deposits' need less what was mined, which the carry
// must hold for a token), taken; and the share of its deposits not credited (written off) of
// what reached the bankroll and, for a token, the fee address, carried.
func (s *Service) settleCarries(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, groups []*group,
	credited map[int64]bool,
) error {
	for _, g := range groups {
		settle := s.settleGroupCarry
		switch {
		case sw.Batched:
			settle = s.settleBatchedCarry
		case g.asset.Native:
			settle = s.settleNativeCarry
		}
		if err := settle(ctx, q, n, sw, g, credited); err != nil {
			return err
		}
	}
	return nil
}

// settleGroupCarry is settleCarries for one token group: the carry taken is its deposits'
// need less what its transfers moved, each side, but for the fee its plan left to the carry's
// bankroll side (afterCarry): that part of the bankroll side is taken for the fee side.
func (s *Service) settleGroupCarry(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group,
	credited map[int64]bool,
) error {
	need := transferSides(n, g)
	left := transferSides(n, &group{deposits: slices.DeleteFunc(slices.Clone(g.deposits), func(d domain.Deposit) bool {
		return credited[d.ID]
	}), fees: g.fees})
	moved, err := s.movedTokens(ctx, q, sw, g)
	if err != nil {
		return err
	}
	balance, err := q.CarryBalance(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return err
	}
	extra := feeInBankrollSide(need, balance)
	taken, err := s.take(ctx, q, n, sw, g, store.Carry{
		Bankroll: new(big.Int).Add(new(big.Int).Sub(need.Bankroll, moved.Bankroll), extra),
		Fee:      new(big.Int).Sub(new(big.Int).Sub(need.Fee, moved.Fee), extra)})
	if err != nil {
		return err
	}
	// What reached each side for these deposits, less what the credited ones own: the
	// bankroll's is exact (take checked it); a fee transfer cancelled by a retirement sent
	// nothing, and only what did reach the fee address is carried.
	carried := store.Carry{Bankroll: left.Bankroll, Fee: new(big.Int).Add(moved.Fee, taken.Fee)}
	carried.Fee.Sub(carried.Fee, new(big.Int).Sub(need.Fee, left.Fee))
	carried.Fee = minBig(carried.Fee, left.Fee)
	if carried.Fee.Sign() < 0 {
		carried.Fee.SetInt64(0)
	}
	return s.carry(ctx, q, n, sw, g, carried)
}

// feeInBankrollSide is what of need's fee side a plan took out of carry's bankroll side
// (takeAcrossSides): kept in the bankroll, asked of no transfer.
func feeInBankrollSide(need, carry store.Carry) *big.Int {
	planned, taken := takeAcrossSides(need, carry)
	return new(big.Int).Sub(taken.Bankroll, new(big.Int).Sub(need.Bankroll, planned.Bankroll))
}

// settleBatchedCarry is settleCarries for a batched sweep's group: its batch moved exactly
// what was planned (its receipt was checked against batchPlanned), so the carry taken is the
// one the plan took (batchPlan), and what reached the bankroll and the fee address for the deposits not
// credited is their whole share.
func (s *Service) settleBatchedCarry(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group,
	credited map[int64]bool,
) error {
	_, taken, err := s.batchPlan(ctx, q, n, sw, g)
	if err != nil {
		return err
	}
	if _, err := s.take(ctx, q, n, sw, g, taken); err != nil {
		return err
	}
	return s.carry(ctx, q, n, sw, g, batchSides(n, g, func(d domain.Deposit) bool { return !credited[d.ID] }))
}

// batchSides is what a batch moves for a group's deposits that match: to the bankroll their
// net and to the fee address their fees; without a fee address their gross to the bankroll
// (the Sweeper pays fees nowhere else).
func batchSides(n chain.Network, g *group, match func(domain.Deposit) bool) store.Carry {
	sides := store.Carry{Bankroll: new(big.Int), Fee: new(big.Int)}
	withFee := n.FeeAddress != (common.Address{})
	for _, d := range g.deposits {
		if !match(d) {
			continue
		}
		fee := g.fees[d.ID]
		if !withFee || fee == nil {
			sides.Bankroll.Add(sides.Bankroll, d.GrossAmount)
			continue
		}
		sides.Bankroll.Add(sides.Bankroll, new(big.Int).Sub(d.GrossAmount, fee))
		sides.Fee.Add(sides.Fee, fee)
	}
	return sides
}

// batchPlanned is what batched sweep sw asks its address for of a group (batchAccount).
func (s *Service) batchPlanned(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group) (store.Carry, error) {
	planned, _, err := s.batchPlan(ctx, q, n, sw, g)
	return planned, err
}

// batchPlan is what batched sweep sw asks its address for of a group, and what it takes of
// the address's carry: each side of its deposits (batchSides) less what the carry held of it
// when the sweep was planned (the rows of earlier sweeps: read again at its receipt and its
// credit, the plan is the one signed), taken as a whole (takeAcrossSides). The carry is money
// already off the address, so its two sides together, not each alone, are what the address
// no longer holds: one side short and the other over-covered (the operator's fee changed
// between the batch that carried and this one) asked the address for money it lacked, and
// the sweep was skipped on every pass.
func (s *Service) batchPlan(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group) (planned, taken store.Carry, err error) {
	carry, err := q.CarryBalanceBefore(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return planned, taken, err
	}
	all := func(domain.Deposit) bool { return true }
	feeFromCarry(g, batchSides(n, g, all), carry)
	planned, taken = takeAcrossSides(batchSides(n, g, all), carry)
	return planned, taken, nil
}

// feeFromCarry raises the group's deposits' fees by what the carry's fee side holds beyond
// their fees (need, the group's sides), up to what its bankroll side lacks of their net: that
// part of their money is at the fee address already (moved at the fee of the sweep that
// carried), never to reach the bankroll, so it is not credited. Once raised (fixed on the
// deposits when signed), it raises nothing again: the plan read at the receipt and the credit
// is the one signed.
func feeFromCarry(g *group, need, carry store.Carry) {
	surplus := new(big.Int).Sub(carry.Fee, minBig(carry.Fee, need.Fee))
	lacking := new(big.Int).Sub(need.Bankroll, minBig(need.Bankroll, carry.Bankroll))
	raise := minBig(surplus, lacking)
	for _, d := range g.deposits {
		if raise.Sign() <= 0 || g.fees[d.ID] == nil {
			continue
		}
		more := minBig(raise, new(big.Int).Sub(d.GrossAmount, g.fees[d.ID]))
		g.fees[d.ID] = new(big.Int).Add(g.fees[d.ID], more)
		g.fee.Add(g.fee, more)
		raise = new(big.Int).Sub(raise, more)
	}
}

// takeAcrossSides is what a sweep asks its address for of need once carry is taken, and what
// it takes: each side of the carry covers its own side, and what the bankroll side holds
// beyond the net covers the fee side too (that fee stays in the bankroll, as it does with no
// fee address).
func takeAcrossSides(need, carry store.Carry) (planned, taken store.Carry) {
	covered := func(need, held *big.Int) *big.Int { return new(big.Int).Set(minBig(need, maxBig(held, new(big.Int)))) }
	taken = store.Carry{Bankroll: covered(need.Bankroll, carry.Bankroll), Fee: covered(need.Fee, carry.Fee)}
	planned = store.Carry{Bankroll: new(big.Int).Sub(need.Bankroll, taken.Bankroll), Fee: new(big.Int).Sub(need.Fee, taken.Fee)}
	extra := covered(planned.Fee, new(big.Int).Sub(carry.Bankroll, taken.Bankroll))
	planned.Fee.Sub(planned.Fee, extra)
	taken.Bankroll.Add(taken.Bankroll, extra)
	return planned, taken
}

// carry records what sweep sw's group moved for deposits it does not credit (written off), to
// be taken by the address's next sweep of the asset; nothing when it moved nothing for them.
func (s *Service) carry(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group, carried store.Carry) error {
	if carried.Bankroll.Sign() == 0 && carried.Fee.Sign() == 0 {
		return nil
	}
	if err := q.InsertCarry(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID, store.CarryCarried, carried); err != nil {
		return err
	}
	s.log.Warn("a sweep moved money for deposits it does not credit (written off): carried to the address's next sweep of "+
		"the asset", "sweep", sw.ID, "chain", n.ChainID, "address", sw.Address, "currency", g.asset.Symbol,
		"bankroll", carried.Bankroll, "fee", carried.Fee)
	return nil
}

// take records the carry a sweep's group took: what its transfers sent short of its deposits'
// need. The bankroll side must be in the carry (else the sweep is an error and nothing is
// credited: the bankroll would be short); the fee side takes what the carry holds (a fee
// transfer cancelled by a retirement left the fee at the address, as before).
func (s *Service) take(ctx context.Context, q *store.Queries, n chain.Network, sw domain.Sweep, g *group, short store.Carry) (store.Carry, error) {
	balance, err := q.CarryBalance(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID)
	if err != nil {
		return store.Carry{}, err
	}
	if short.Bankroll.Sign() < 0 || short.Bankroll.Cmp(balance.Bankroll) > 0 {
		return store.Carry{}, fmt.Errorf("sweep %d: its %s transfer sent %s short of its deposits' net; the address's carry "+
			"holds %s", sw.ID, g.asset.Symbol, short.Bankroll, balance.Bankroll)
	}
	taken := store.Carry{Bankroll: short.Bankroll, Fee: new(big.Int)}
	if short.Fee.Sign() > 0 {
		taken.Fee.Set(minBig(short.Fee, balance.Fee))
	}
	if taken.Bankroll.Sign() == 0 && taken.Fee.Sign() == 0 {
		return taken, nil
	}
	neg := store.Carry{Bankroll: new(big.Int).Neg(taken.Bankroll), Fee: new(big.Int).Neg(taken.Fee)}
	return taken, q.InsertCarry(ctx, n.ChainID, sw.Address, g.asset.Symbol, sw.ID, store.CarryTaken, neg)
}

// leaveFinishedSweep takes the deposits a finished sweep did not credit (written off) out of
// it, in the transaction that credits the others: what it moved in their name went to the
// bankroll for no one (carried to later deposits, for a token). One an engineer reinstates
// (its payment back on the chain, its money at the address) is then due again and swept by a
// new sweep, as after a retirement (closeRetired); left in the done sweep it stayed SWEEPING
// for good, its money at the address.
func (s *Service) leaveFinishedSweep(ctx context.Context, q *store.Queries, sw domain.Sweep, deposits []domain.Deposit,
	credited map[int64]bool,
) error {
	var ids []int64
	for _, d := range deposits {
		if !credited[d.ID] {
			ids = append(ids, d.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	left, err := q.DetachUncredited(ctx, sw.ID, ids)
	if err == nil && left > 0 {
		s.log.Warn("written-off deposits left their finished sweep, not credited: swept again if reinstated", "sweep", sw.ID,
			"chain", sw.ChainID, "address", sw.Address, "deposits", ids)
	}
	return err
}

// movedTokens is what a finished sweep's mined transfers of a token group sent to the bankroll
// and to the fee address (zero for a transfer not planned: the carry covered it).
func (s *Service) movedTokens(ctx context.Context, q *store.Queries, sw domain.Sweep, g *group) (store.Carry, error) {
	moved := store.Carry{Bankroll: new(big.Int), Fee: new(big.Int)}
	for _, side := range []struct {
		purpose string
		into    *big.Int
	}{{PurposeSweep, moved.Bankroll}, {PurposeSweepFee, moved.Fee}} {
		t, err := q.ChainTxByRef(ctx, side.purpose, sweepRef(sw.ID, g.asset.Symbol))
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return moved, err
		}
		if t.State == domain.ChainTxMined {
			side.into.Set(chain.ERC20TransferAmount(t.Data))
		}
	}
	return moved, nil
}

// maxBig is the greater of a and b (one of them, not a copy).
func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) > 0 {
		return a
	}
	return b
}

// minBig is the smaller of a and b.
func minBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) < 0 {
		return a
	}
	return b
}
