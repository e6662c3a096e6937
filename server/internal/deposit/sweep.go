package deposit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Sweeps. A sweep moves every confirmed, unswept deposit of one deposit address to the
// bankroll, one transfer per asset (plus one to the fee address), and credits them all when
// every transfer is mined. One sweep at a time per address, because its transactions share the
// address's nonce sequence and its gas is planned for all of them together:
//
//   - the address's native currency is accounted in two parts: deposits (confirming, waiting,
//     below the minimum, or in the sweep) and gas; a sweep is signed only once the address
//     holds what all its transactions can cost plus every native deposit it does not move, and
//     the gas tank tops the address up when it does not — so a native deposit is never spent
//     as another sweep's gas, whatever arrives in which order;
//   - a native transfer pays its own gas out of the value it sends (a replacement with higher
//     fees lowers the value), so it never costs more than the deposits it moves; one that
//     credits a deposit back moves its deposits whole and its gas is the gas tank's (planNative);
//   - the same check runs before every advance of a signed sweep: fee bumps of token transfers
//     that need more gas get it, so a signed sweep is never left unaffordable;
//   - deposits below the asset's minimum are parked (BELOW_MINIMUM) and swept with the next
//     deposit that brings the address's unswept balance of the asset to the minimum.

// maxTopUps bounds the gas top-ups of one sweep (or one prefunding): each sends the shortfall
// plus a margin for fee bumps, so reaching it means fees kept rising far beyond any margin.
const maxTopUps = 8

// sweepRef is the chain_txs ref of a sweep's transfer of one asset (purposes sweep, sweep-fee).
func sweepRef(sweepID int64, symbol string) string {
	return fmt.Sprintf("sweep:%d:%s", sweepID, symbol)
}

// sweepStep advances the sweep of an address as far as it can now: it opens one when deposits
// are due, funds and signs it, advances its transactions and, once all are mined, credits its
// deposits.
func (s *Service) sweepStep(ctx context.Context, n chain.Network, c *chain.Client, address string) error {
	sw, err := store.New(s.pool).OpenSweep(ctx, n.ChainID, address)
	if errors.Is(err, store.ErrNotFound) {
		if sw, err = s.openSweep(ctx, n, c, address); errors.Is(err, store.ErrNotFound) {
			// Nothing due, or another job opened the sweep of these deposits between the two
			// reads: advance that one (this job's deposit is in it).
			if sw, err = store.New(s.pool).OpenSweep(ctx, n.ChainID, address); errors.Is(err, store.ErrNotFound) {
				return nil
			}
		}
	}
	if err != nil {
		return err
	}
	// A deposit of this signed sweep left the chain (reorg.go): send, top up and credit
	// nothing until the reorg is resolved, since its money may be gone.
	if held, err := store.New(s.pool).SweepHeldByReorg(ctx, sw.ID); err != nil || held {
		return err
	}
	if sw.Batched {
		return s.batchedSweepStep(ctx, n, c, sw)
	}
	// A deposit of it was written off: its transfers can never pay (retire.go). Before they are
	// advanced, which would send them again.
	if sw.Status == domain.SweepSending {
		if retiring, err := s.retireSweep(ctx, n, c, sw); err != nil || retiring {
			return err
		}
		// An earlier sweep's transfer that left the chain holds a nonce below its own.
		if waiting, err := s.cancelGapBefore(ctx, n, c, sw); err != nil || waiting {
			return err
		}
	}
	if sw.Status == domain.SweepFunding {
		signed, err := s.signSweep(ctx, n, c, sw)
		if err != nil || !signed {
			return err
		}
		sw.Status = domain.SweepSending
	}
	mined, err := s.sendSweep(ctx, n, c, sw)
	if err != nil || !mined {
		return err
	}
	return s.finishSweep(ctx, n, sw)
}

// group is the deposits of one asset in a sweep.
type group struct {
	asset    chain.Asset
	deposits []domain.Deposit
	gross    *big.Int
	fee      *big.Int // the operators' deposit fees (basis points), summed
	// fees is each deposit's fee (by deposit id): fixed on the deposits when a transaction
	// sweeping them is signed (store.FixDepositFees).
	fees map[int64]*big.Int
}

// creditsBack: a deposit of the group was credited before (creditBack credits it again).
func (g *group) creditsBack() bool {
	return slices.ContainsFunc(g.deposits, func(d domain.Deposit) bool { return d.CreditedAt != nil })
}

// maxGasCost is the most t's gas can cost: MaxCost without the value it moves.
func maxGasCost(t domain.ChainTx) *big.Int {
	return new(big.Int).Sub(t.MaxCost(), t.Latest().Value)
}

// fees are the deposit fees of groups, by deposit id.
func fees(groups []*group) map[int64]*big.Int {
	out := map[int64]*big.Int{}
	for _, g := range groups {
		maps.Copy(out, g.fees)
	}
	return out
}

// groups splits deposits by asset, in a stable order (native first, then by symbol).
func (s *Service) groups(ctx context.Context, n chain.Network, deposits []domain.Deposit) ([]*group, error) {
	bySymbol := map[string]*group{}
	var out []*group
	for _, d := range deposits {
		g := bySymbol[d.Currency]
		if g == nil {
			a, ok := n.Asset(d.Currency)
			if !ok {
				return nil, fmt.Errorf("deposit %d: %s is no longer an asset of chain %d", d.ID, d.Currency, n.ChainID)
			}
			g = &group{asset: a, gross: new(big.Int), fee: new(big.Int), fees: map[int64]*big.Int{}}
			bySymbol[d.Currency] = g
			out = append(out, g)
		}
		fee, err := s.bpsFee(ctx, d)
		if err != nil {
			return nil, err
		}
		g.deposits = append(g.deposits, d)
		g.gross.Add(g.gross, d.GrossAmount)
		g.fee.Add(g.fee, fee)
		g.fees[d.ID] = fee
	}
	slices.SortFunc(out, func(a, b *group) int {
		if a.asset.Native != b.asset.Native {
			if a.asset.Native {
				return -1
			}
			return 1
		}
		return strings.Compare(a.asset.Symbol, b.asset.Symbol)
	})
	return out, nil
}

// bpsFee is the operator's deposit fee on a deposit (none on treasury payments): the one fixed
// when a transaction sweeping it was signed, else the operator's current one. A sweep is
// planned, signed and credited with the same fee even if the operator changes its fee
// meanwhile: the chain moved that fee to the fee address and the rest to the bankroll.
func (s *Service) bpsFee(ctx context.Context, d domain.Deposit) (*big.Int, error) {
	if d.SignedFee != nil {
		return new(big.Int).Set(d.SignedFee), nil
	}
	if d.Treasury {
		return new(big.Int), nil
	}
	op, err := store.New(s.pool).GetOperator(ctx, d.OperatorID)
	if err != nil {
		return nil, err
	}
	fee := new(big.Int).Mul(d.GrossAmount, big.NewInt(int64(op.DepositFeeBps)))
	return fee.Div(fee, big.NewInt(10000)), nil
}

// minimum is the smallest amount of an asset swept on its own, in the smallest unit: the
// chain's explicit minimum, else MinDepositUSD at the current price (none without a price).
func (s *Service) minimum(ctx context.Context, n chain.Network, a chain.Asset) *big.Int {
	if m, ok := s.pricedMinimum(ctx, n, a); ok {
		return m
	}
	return new(big.Int)
}

// pricedMinimum is minimum, with ok false when it is a USD value and the asset has no price
// now (minimum then takes none).
func (s *Service) pricedMinimum(ctx context.Context, n chain.Network, a chain.Asset) (*big.Int, bool) {
	if v := n.MinDeposit(a.Symbol); v != "" {
		return rates.ToUnits(decimal.RequireFromString(v), a.Decimals), true
	}
	usd := decimal.RequireFromString(n.MinDepositUSD)
	if usd.IsZero() {
		return new(big.Int), true
	}
	price, err := s.prices.USD(ctx, a.Symbol)
	if err != nil || !price.Value.IsPositive() {
		return nil, false
	}
	return rates.FiatToTokenUnits(usd, decimal.NewFromInt(1), price.Value, a.Decimals), true
}

// nativeTxs is how many transfers a native group sends: the net one, and the fee one when
// there is a fee address and the fee pays more than its own gas.
func nativeTxs(n chain.Network, fee, gasCost *big.Int) int {
	if n.FeeAddress != (common.Address{}) && fee.Cmp(gasCost) > 0 {
		return 2
	}
	return 1
}

// openSweep opens a sweep of the address's due deposits: every asset whose unswept total
// reaches its minimum (a native total must also pay for its own transfers). Deposits of the
// other assets are parked BELOW_MINIMUM. ErrNotFound: nothing is due.
func (s *Service) openSweep(ctx context.Context, n chain.Network, c *chain.Client, address string) (domain.Sweep, error) {
	due, err := store.New(s.pool).DueDeposits(ctx, n.ChainID, address)
	if err != nil || len(due) == 0 {
		if err == nil {
			err = store.ErrNotFound
		}
		return domain.Sweep{}, err
	}
	groups, err := s.groups(ctx, n, due)
	if err != nil {
		return domain.Sweep{}, err
	}
	batched, err := s.batched(ctx, n, address)
	if err != nil {
		return domain.Sweep{}, err
	}
	feeCap := new(big.Int)
	if !batched { // a batch's gas is the gas tank's: no native group pays its own
		if _, feeCap, err = c.Fees(ctx); err != nil {
			return domain.Sweep{}, err
		}
	}
	// The statements below re-check each status (another job may have moved a deposit since
	// this read); the table says which deposits they may move.
	var take, park, parkNow []int64
	for _, g := range groups {
		enough := g.gross.Cmp(s.minimum(ctx, n, g.asset)) >= 0
		if g.asset.Native && !batched { // a batch's gas is the gas tank's
			gas := new(big.Int).Mul(big.NewInt(nativeTransferGas), feeCap)
			net := new(big.Int).Sub(g.gross, g.fee)
			enough = enough && net.Cmp(gas) > 0
		}
		for _, d := range g.deposits {
			switch {
			case enough && Moves(d.Status, Take):
				take = append(take, d.ID)
			case !enough:
				park = append(park, d.ID)
				if Moves(d.Status, Park) { // not those already BELOW_MINIMUM
					parkNow = append(parkNow, d.ID)
				}
			}
		}
	}
	var sw domain.Sweep
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.LockAddress(ctx, n.ChainID, address); err != nil {
			return err
		}
		if open, err := q.OpenSweep(ctx, n.ChainID, address); err == nil {
			sw = open // opened meanwhile by another job
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if len(parkNow) > 0 {
			if err := q.MarkBelowMinimum(ctx, parkNow); err != nil {
				return err
			}
		}
		if len(take) == 0 {
			return nil // only parked deposits: nothing to sweep
		}
		sw, err = q.InsertSweep(ctx, n.ChainID, address, batched, take)
		return err
	})
	if err != nil {
		return sw, err
	}
	if len(park) > 0 {
		s.log.Info("deposits below the minimum wait until the address holds more", "chain", n.ChainID, "address", address,
			"deposits", park)
	}
	if sw.ID == 0 {
		return sw, store.ErrNotFound
	}
	s.log.Info("sweep opened", "sweep", sw.ID, "chain", n.ChainID, "address", address, "deposits", take, "batched", batched)
	return sw, nil
}

// planned is a sweep transaction ready to sign.
type planned struct {
	prepared chaintx.Prepared
	cost     *big.Int // the most it can take from the address
}

// planNative prepares the native transfers of a sweep. The net transfer sends the deposits
// minus the fee, minus its own gas; the fee goes on to the fee address (minus that transfer's
// gas) when it pays more than its gas, else it stays at the address. Together they cost at
// most the deposits. A group that credits a deposit back (creditsBack) sends its whole net
// instead, its gas the gas tank's (a top-up, as for a token transfer): that deposit is credited
// back what its first sweep delivered, and this sweep's gas, at today's fee, may cost more.
func (s *Service) planNative(ctx context.Context, n chain.Network, c *chain.Client, from common.Address, sw domain.Sweep, g *group,
	ref string,
) ([]planned, error) {
	paysOwnGas := !g.creditsBack()
	// What an earlier sweep carried to the bankroll for these deposits is not sent again (carry.go).
	net, fee, carry, err := s.nativeAfterCarry(ctx, n, sw, g)
	if err != nil || net.Sign() == 0 {
		return nil, err // the carry covers them
	}
	p, gas, err := s.prepareNative(ctx, n, c, from, n.BankrollAddress, net, paysOwnGas, PurposeSweep, ref)
	if err != nil {
		return nil, err
	}
	if paysOwnGas {
		net.Sub(net, gas)
	}
	if net.Sign() <= 0 && carry.Bankroll.Sign() > 0 {
		return nil, nil // the carry covers them but for what cannot pay its own transfer's gas (left at the address)
	}
	if net.Sign() <= 0 {
		return nil, fmt.Errorf("sweep %d: native deposits of %s wei cannot pay their transfer's gas (%s)", sw.ID, g.gross, gas)
	}
	p.Value = net
	sweep := planned{prepared: p, cost: new(big.Int).Add(net, gas)}
	// The fee less what an earlier sweep's fee transfer already sent for these deposits.
	if nativeTxs(n, fee, gas) != 2 {
		return []planned{sweep}, nil
	}
	fp, feeGas, err := s.prepareNative(ctx, n, c, from, n.FeeAddress, fee, true, PurposeSweepFee, ref)
	if err != nil {
		return nil, err
	}
	if feeGas.Cmp(fee) >= 0 {
		return []planned{sweep}, nil // fees rose between the two reads: the fee stays at the address
	}
	fp.Value = new(big.Int).Sub(fee, feeGas)
	return []planned{sweep, {prepared: fp, cost: fee}}, nil
}

// prepareNative prepares a native transfer (its value is set by the caller), paying its own gas
// out of what it sends or not, and says the most that gas costs. A recipient with code (a Safe)
// gets the gas it needs to receive, more than 21,000.
func (s *Service) prepareNative(ctx context.Context, n chain.Network, c *chain.Client, from, to common.Address, value *big.Int,
	paysOwnGas bool, purpose, ref string,
) (chaintx.Prepared, *big.Int, error) {
	limit, err := c.NativeTransferGas(ctx, from, to, value)
	if err != nil {
		return chaintx.Prepared{}, nil, err
	}
	p, err := s.engine.Prepare(ctx, chaintx.Request{ChainID: n.ChainID, From: from, To: to, GasLimit: limit,
		PaysOwnGas: paysOwnGas, Purpose: purpose, Ref: ref})
	if err != nil {
		return chaintx.Prepared{}, nil, err
	}
	return p, new(big.Int).Mul(new(big.Int).SetUint64(limit), p.FeeCap()), nil
}

// plan prepares a sweep's transactions at the current gas fees, and says each deposit's fee
// they were planned with.
func (s *Service) plan(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) ([]planned, map[int64]*big.Int, error) {
	deposits, err := store.New(s.pool).SweepDeposits(ctx, sw.ID)
	if err != nil {
		return nil, nil, err
	}
	groups, err := s.groups(ctx, n, deposits)
	if err != nil {
		return nil, nil, err
	}
	if n.BankrollAddress == (common.Address{}) {
		return nil, nil, fmt.Errorf("deposit: chain %d has no bankrollAddress to sweep to", n.ChainID)
	}
	from := common.HexToAddress(sw.Address)
	var out []planned
	add := func(req chaintx.Request) (chaintx.Prepared, error) {
		p, err := s.engine.Prepare(ctx, req)
		if err != nil {
			return p, err
		}
		out = append(out, planned{prepared: p})
		return p, nil
	}
	for _, g := range groups {
		ref := sweepRef(sw.ID, g.asset.Symbol)
		if g.asset.Native {
			native, err := s.planNative(ctx, n, c, from, sw, g, ref)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, native...)
			continue
		}
		token := g.asset.Contract
		// What an earlier sweep carried to the bankroll for these deposits is not sent again (carry.go).
		net, fee, err := s.afterCarry(ctx, n, sw, g)
		if err != nil {
			return nil, nil, err
		}
		transfers := []struct {
			purpose string
			to      common.Address
			amount  *big.Int
		}{{PurposeSweep, n.BankrollAddress, net}}
		if fee.Sign() > 0 && n.FeeAddress != (common.Address{}) {
			transfers = append(transfers, struct {
				purpose string
				to      common.Address
				amount  *big.Int
			}{PurposeSweepFee, n.FeeAddress, fee})
		}
		for _, tr := range transfers {
			if tr.amount.Sign() == 0 {
				continue // the carry covers it
			}
			data := chain.ERC20Transfer(tr.to, tr.amount)
			est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &token, Data: data})
			if err != nil {
				return nil, nil, fmt.Errorf("sweep %d: estimate gas of %s transfer (does %s hold %s?): %w", sw.ID, g.asset.Symbol,
					sw.Address, rates.FormatUnits(new(big.Int).Add(net, fee), g.asset.Decimals), err)
			}
			p, err := add(chaintx.Request{ChainID: n.ChainID, From: from, To: token, Data: data, GasLimit: est + est*3/10,
				Purpose: tr.purpose, Ref: ref})
			if err != nil {
				return nil, nil, err
			}
			out[len(out)-1].cost = new(big.Int).Mul(new(big.Int).SetUint64(p.GasLimit), p.FeeCap())
		}
	}
	return out, fees(groups), nil
}

// signSweep signs and stores a funding sweep's transactions, all in one database transaction,
// once the address holds what they can cost (it asks the gas tank for the rest). signed is
// false while a top-up is on its way.
func (s *Service) signSweep(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) (signed bool, err error) {
	txs, fees, err := s.plan(ctx, n, c, sw)
	if err != nil {
		return false, err
	}
	need, margin := new(big.Int), new(big.Int)
	for _, t := range txs {
		need.Add(need, t.cost)
		if !t.prepared.PaysOwnGas {
			margin.Add(margin, new(big.Int).Sub(t.cost, t.prepared.Value)) // room for fee bumps of the gas tank's gas
		}
	}
	funded, err := s.fund(ctx, n, c, sw.Address, sw.ID, need, margin, fmt.Sprintf("sweep:%d", sw.ID))
	if err != nil || !funded {
		return false, err
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		return moveSweep(ctx, q, sw.ID, SweepSigned, func() error {
			for _, t := range txs {
				if _, _, err := s.engine.Create(ctx, tx, t.prepared); err != nil {
					return err
				}
			}
			return q.FixDepositFees(ctx, fees)
		})
	})
	if err != nil {
		return false, err
	}
	s.log.Info("sweep signed", "sweep", sw.ID, "chain", n.ChainID, "address", sw.Address, "transactions", len(txs), "cost_wei", need)
	return true, nil
}

// sweepTxs are a sweep's stored transactions: its own, or a batched sweep's batch transaction
// (none while it waits for a batch); not the cancels a retirement retired (sweepTxsRetiredToo).
func (s *Service) sweepTxs(ctx context.Context, sweepID int64) ([]domain.ChainTx, error) {
	return s.sweepTxsOf(ctx, sweepID, false)
}

// sweepTxsRetiredToo are sweepTxs with the retired cancels: a done sweep cancelled after it
// left the chain (cancelLeftChain) keeps its deposits, and only its retired cancels tell that
// it can never pay (sweepCancelled).
func (s *Service) sweepTxsRetiredToo(ctx context.Context, sweepID int64) ([]domain.ChainTx, error) {
	return s.sweepTxsOf(ctx, sweepID, true)
}

func (s *Service) sweepTxsOf(ctx context.Context, sweepID int64, retiredToo bool) ([]domain.ChainTx, error) {
	q := store.New(s.pool)
	sw, err := q.LockSweep(ctx, sweepID) // a read, outside a transaction
	if err != nil {
		return nil, err
	}
	if sw.Batched {
		if sw.BatchID == 0 {
			return nil, nil
		}
		t, err := q.ChainTxByRef(ctx, PurposeSweepBatch, batchRef(sw.BatchID))
		return []domain.ChainTx{t}, err
	}
	var out []domain.ChainTx
	for _, purpose := range []string{PurposeSweep, PurposeSweepFee} {
		txs, err := q.ChainTxsByRefPrefix(ctx, purpose, fmt.Sprintf("sweep:%d:", sweepID))
		if err != nil {
			return nil, err
		}
		// A failed one was reverted and sent again (resendReverted): the new one stands for it;
		// or it was failed, or its cancel retired, by a retirement (closeRetired): its
		// deposits left the sweep.
		out = append(out, slices.DeleteFunc(txs, func(t domain.ChainTx) bool {
			return t.State == domain.ChainTxFailed || (!retiredToo && t.State == domain.ChainTxCancelled && strings.Contains(t.Ref, ":resolved:"))
		})...)
	}
	return out, nil
}

// maxResends bounds how often one transfer of a sweep is sent again after a revert: a token
// that keeps reverting is left to an engineer.
const maxResends = 3

// resendReverted sends a sweep's reverted token transfer again, once its revert has the
// confirmation depth (it can no longer leave the chain and be mined again another way): the
// reverted transaction is marked failed, which frees its ref, and a new one with the same
// transfer and a fresh gas estimate takes the ref, in one database transaction. A token
// transfer reverts when its gas limit, estimated when it was signed, no longer covers it: the
// bankroll (or the fee address) held the token then and was emptied before it was mined, and
// crediting an empty balance costs more gas than the estimate's margin. Its tokens are still at
// the deposit address, so the same transfer sent again moves them once; without this the
// deposit stayed SWEEPING for good. A native transfer that reverted paid its gas out of the
// deposits it was to move: it is left to an engineer, as before. t is returned as it stands
// while its revert is not deep enough.
func (s *Service) resendReverted(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep, t domain.ChainTx) (domain.ChainTx, error) {
	stuck := fmt.Errorf("sweep %d: %s transaction %s reverted; the funds are still at %s", sw.ID, t.Purpose, t.MinedHash, sw.Address)
	if t.PaysOwnGas || len(t.Data) == 0 {
		return t, stuck
	}
	if tip, ok, err := s.confirmedTipNow(ctx, n, c); err != nil || !ok || t.MinedBlock > tip {
		return t, err
	}
	resent, err := store.New(s.pool).CountChainTxs(ctx, t.Purpose, t.Ref+":resolved:")
	if err != nil {
		return t, err
	}
	if resent >= maxResends {
		return t, fmt.Errorf("%w (sent %d times)", stuck, resent+1)
	}
	from, to := common.HexToAddress(t.From), common.HexToAddress(t.To)
	est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &to, Data: t.Data})
	if err != nil {
		return t, fmt.Errorf("%w: estimate gas to send it again: %w", stuck, err)
	}
	p, err := s.engine.Prepare(ctx, chaintx.Request{ChainID: n.ChainID, From: from, To: to, Data: t.Data, GasLimit: est + est*3/10,
		Purpose: t.Purpose, Ref: t.Ref})
	if err != nil {
		return t, err
	}
	var again domain.ChainTx
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		if err := chaintx.MarkFailed(ctx, tx, t, domain.System, "sweep transfer reverted at its depth: sent again"); err != nil {
			return err
		}
		again, _, err = s.engine.Create(ctx, tx, p)
		return err
	})
	if errors.Is(err, chaintx.ErrRefused) {
		return t, nil // another job sent it again meanwhile: the next step advances that one
	} else if err != nil {
		return t, err
	}
	s.log.Warn("a sweep transfer reverted; sent again", "sweep", sw.ID, "chain", n.ChainID, "address", sw.Address,
		"reverted", t.MinedHash, "gas_used", t.GasUsed, "gas_limit", t.GasLimit, "new_gas_limit", p.GasLimit, "tx", again.ID)
	again, err = s.engine.Advance(ctx, again.ID)
	if errors.Is(err, chaintx.ErrInsufficientFunds) {
		err = nil // the address is topped up for it (sendSweep), then it is broadcast
	}
	return again, err
}

// sendSweep advances a signed sweep's transactions and reports whether all are mined. After
// advancing them (which reads their receipts), it checks that the address still holds what the
// ones left pending can cost (a fee bump of a token transfer may need more gas) and tops it up
// when not; the next step broadcasts what could not be broadcast meanwhile.
func (s *Service) sendSweep(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) (bool, error) {
	txs, err := s.sweepTxs(ctx, sw.ID)
	if err != nil {
		return false, err
	}
	need, margin := new(big.Int), new(big.Int)
	pending := 0
	var pendingNonces []uint64 // of the address's own transactions still pending
	reverted := 0
	for _, t := range txs {
		if t.State == domain.ChainTxPending {
			if t, err = s.engine.Advance(ctx, t.ID); err != nil && !errors.Is(err, chaintx.ErrInsufficientFunds) {
				return false, err
			}
		}
		if t.State == domain.ChainTxReverted {
			if t, err = s.resendReverted(ctx, n, c, sw, t); err != nil {
				return false, err
			}
		}
		switch t.State {
		case domain.ChainTxReverted: // until its revert has the depth
			reverted++
		case domain.ChainTxMined: // at its depth or on the way: nothing owed
		case domain.ChainTxCancelled, domain.ChainTxFailed:
			// Only a retirement cancels a sweep transfer (retireSweep, which takes the sweep
			// first), and the ops actions that fail one take payouts only.
			return false, fmt.Errorf("sweep %d: %s transaction %d is %s; the funds are still at %s", sw.ID, t.Purpose, t.ID, t.State, sw.Address)
		case domain.ChainTxPending:
			pending++
			if strings.EqualFold(t.From, sw.Address) {
				pendingNonces = append(pendingNonces, t.Nonce)
			}
			need.Add(need, t.MaxCost())
			if !t.PaysOwnGas {
				margin.Add(margin, maxGasCost(t)) // room for fee bumps of the gas tank's gas
			}
		}
	}
	if pending > 0 {
		_, err := s.fund(ctx, n, c, sw.Address, sw.ID, need, margin, fmt.Sprintf("sweep:%d", sw.ID), pendingNonces...)
		return false, err
	}
	if reverted > 0 {
		return false, nil
	}
	_, err = store.New(s.pool).MarkSweepMined(ctx, sw.ID)
	return err == nil, err
}

// fund makes sure address holds need plus every native deposit at it outside sweep except (0:
// none): it waits for a top-up on its way (logged at ERROR once that takes longer than
// Config.GasWaitAlert) or, one that left the chain in a reorg, sends it again (lostTopUps),
// and otherwise asks the gas tank for the shortfall plus margin. ready is true when the address holds enough now. pendingNonces are those of the
// address's own transactions still pending as far as the caller saw: the balance is read at
// one block with the address's nonce, and when one of them was mined by then (after the
// caller looked for its receipt) nothing is sent: the balance no longer holds what it moved,
// and a top-up then would only leave the gas tank's ETH at the address.
func (s *Service) fund(ctx context.Context, n chain.Network, c *chain.Client, address string, except int64,
	need, margin *big.Int, refPrefix string, pendingNonces ...uint64) (ready bool, err error) {
	q := store.New(s.pool)
	// The newest top-up before the pending ones are looked at and the balance is read: one
	// stored after it (another job's for the same address, at the same time) covers what the
	// balance read misses, and the last check before sending one (noTopUpSince) sees it.
	lastTopUp, err := q.LastTopUpID(ctx, n.ChainID, address, PurposeGas)
	if err != nil {
		return false, err
	}
	topups, err := q.PendingTopUps(ctx, n.ChainID, address, PurposeGas)
	if err != nil {
		return false, err
	}
	for _, id := range topups {
		if err := s.cancelBatchGapBeforeTopUp(ctx, n, c, id); err != nil {
			return false, err
		}
		t, err := s.engine.Advance(ctx, id)
		if errors.Is(err, chaintx.ErrInsufficientFunds) {
			// An empty gas tank: offered again (chaintx.Engine.RefusedRetry), a wait.
			s.waitingForGas(ctx, n, address, except, refPrefix, t)
			return false, nil
		} else if err != nil {
			return false, err
		}
		if t.State == domain.ChainTxPending {
			if superseded, err := s.supersededTopUp(ctx, n, c, t); err != nil || !superseded {
				s.waitingForGas(ctx, n, address, except, refPrefix, t)
				return false, err
			}
		}
	}
	parked, err := q.UnsweptNative(ctx, n.ChainID, address, except)
	if err != nil {
		return false, err
	}
	if parked, err = s.parkedAfterCarry(ctx, q, n, address, except, parked); err != nil {
		return false, err
	}
	total := new(big.Int).Add(need, parked)
	block, err := c.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	if len(pendingNonces) > 0 {
		nonce, err := c.NonceAt(ctx, common.HexToAddress(address), block)
		if err != nil {
			return false, err
		}
		if nonce > slices.Min(pendingNonces) {
			return false, nil // mined meanwhile: the next step reads its receipt
		}
	}
	bal, err := c.BalanceAt(ctx, common.HexToAddress(address), block)
	if err != nil {
		return false, err
	}
	if bal.Cmp(total) >= 0 {
		return true, nil
	}
	if wait, err := s.lostTopUps(ctx, n, c, address); err != nil || wait {
		return false, err
	}
	sent, err := q.CountChainTxs(ctx, PurposeGas, refPrefix+"#")
	if err != nil {
		return false, err
	}
	if sent >= maxTopUps {
		return false, fmt.Errorf("deposit: %s on chain %d: %d gas top-ups sent for %s and it still holds %s wei of the %s needed",
			address, n.ChainID, sent, refPrefix, bal, total)
	}
	gasTank := s.wallet.GasTankAddress()
	amount := new(big.Int).Add(new(big.Int).Sub(total, bal), margin)
	t, stored, err := s.engine.SubmitIf(ctx, chaintx.Request{ChainID: n.ChainID, From: gasTank, To: common.HexToAddress(address), Value: amount,
		GasLimit: nativeTransferGas, Purpose: PurposeGas, Ref: fmt.Sprintf("%s#%d", refPrefix, sent+1)},
		func(tx pgx.Tx) (bool, error) { return s.noTopUpSince(ctx, tx, n.ChainID, address, lastTopUp) })
	if err != nil {
		return false, fmt.Errorf("deposit: gas top-up of %s: %w", address, err)
	}
	if !stored {
		return false, nil // another job topped the address up meanwhile: the next step waits for it
	}
	s.log.Info("gas top-up sent", "chain", n.ChainID, "address", address, "for", refPrefix, "wei", amount, "balance", bal, "needed", total)
	// Refused for want of funds (an empty gas tank): stored, and offered again on a later step
	// (chaintx.Engine.RefusedRetry), as a refused sweep transaction is. An error here had the
	// settle job retried with River's growing backoff, hours apart once the tank had been empty
	// a while, and the deposit waited that long after it was refilled.
	if _, err = s.engine.Advance(ctx, t.ID); errors.Is(err, chaintx.ErrInsufficientFunds) {
		err = nil
	}
	return false, err
}

// noTopUpSince is fund's last check, in the transaction that would store a top-up: holding the
// address's lock, no other top-up to it was stored since last. Settle jobs of two deposits at
// one address (a prefund each, or a prefund and the sweep's) run at once on different workers;
// each read the same short balance, and without this both topped the address up.
func (s *Service) noTopUpSince(ctx context.Context, tx pgx.Tx, chainID int64, address string, last int64) (bool, error) {
	q := store.New(tx)
	if err := q.LockAddress(ctx, chainID, address); err != nil {
		return false, err
	}
	now, err := q.LastTopUpID(ctx, chainID, address, PurposeGas)
	return now == last, err
}

// prefund tops a confirming token deposit's address up with the gas of its sweep while the
// confirmations accrue, so the sweep goes out as soon as the deposit is confirmed. It does
// nothing for a deposit that will be parked below the minimum, or while the address has a
// sweep of its own (which funds itself). ready is true when there is nothing to wait for.
func (s *Service) prefund(ctx context.Context, n chain.Network, c *chain.Client, d domain.Deposit) (bool, error) {
	q := store.New(s.pool)
	if _, err := q.OpenSweep(ctx, n.ChainID, d.Address); err == nil {
		return true, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	if batched, err := s.batched(ctx, n, d.Address); err != nil || batched {
		return batched, err // a batch needs no gas at the address
	}
	unswept, err := q.UnsweptDeposits(ctx, n.ChainID, d.Address)
	if err != nil {
		return false, err
	}
	groups, err := s.groups(ctx, n, unswept)
	if err != nil {
		return false, err
	}
	_, feeCap, err := c.Fees(ctx)
	if err != nil {
		return false, err
	}
	need := new(big.Int)
	tokenGas := new(big.Int)
	for _, g := range groups {
		if g.asset.Native || g.gross.Cmp(s.minimum(ctx, n, g.asset)) < 0 {
			continue
		}
		left, err := s.unsweptAfterCarry(ctx, n, d.Address, g)
		if err != nil || left.Sign() == 0 {
			if err != nil {
				return false, err
			}
			continue // the carry covers them: no transfer (carry.go)
		}
		token := g.asset.Contract
		est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: common.HexToAddress(d.Address), To: &token,
			Data: chain.ERC20Transfer(n.BankrollAddress, left)})
		if err != nil {
			return false, fmt.Errorf("deposit %d: estimate sweep gas: %w", d.ID, err)
		}
		txs := int64(1)
		if g.fee.Sign() > 0 && n.FeeAddress != (common.Address{}) {
			txs = 2
		}
		gas := new(big.Int).Mul(new(big.Int).SetUint64(est+est*3/10), big.NewInt(txs))
		gas.Mul(gas, feeCap)
		tokenGas.Add(tokenGas, gas)
	}
	if tokenGas.Sign() == 0 {
		return true, nil
	}
	need.Add(need, tokenGas)
	return s.fund(ctx, n, c, d.Address, 0, need, tokenGas, fmt.Sprintf("prefund:%d", d.ID))
}
