package deposit

import (
	"context"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// recheckWaiting looks, at most once per Config.ParkedRecheck per chain, for confirmed deposits
// that nothing would move again: those parked below the minimum whose address may hold enough
// now (recheckParked), and those waiting for their sweep whose settle job River gave up on
// (reviveSettles).
func (s *Service) recheckWaiting(ctx context.Context, n chain.Network, c *chain.Client) error {
	if last, ok := s.rechecked.Load(n.ChainID); ok {
		if at, _ := last.(time.Time); time.Since(at) < s.cfg.ParkedRecheck {
			return nil
		}
	}
	s.rechecked.Store(n.ChainID, time.Now())
	if err := s.reviveSettles(ctx, n.ChainID); err != nil {
		return err
	}
	return s.recheckParked(ctx, n, c)
}

// reviveSettles queues again the settle job of SWEEPING deposits that have none that will run:
// River discards a job after its attempts (25, over some 18 days of backoff), and a sweep can
// fail that long (a node down, a transfer an engineer must look at).
// Nothing else queues a confirmed deposit's job, so once the cause was fixed the deposit stayed
// SWEEPING, never credited.
func (s *Service) reviveSettles(ctx context.Context, chainID int64) error {
	ids, err := store.New(s.pool).SweepingWithoutJob(ctx, chainID)
	if err != nil || len(ids) == 0 {
		return err
	}
	s.log.Warn("deposits waiting for their sweep had no settle job left (discarded after its retries): queued again",
		"chain", chainID, "deposits", ids)
	return s.queueSettles(ctx, ids)
}

// queueSettles queues the settle jobs of deposits (a live one makes an insert a no-op).
func (s *Service) queueSettles(ctx context.Context, ids []int64) error {
	return store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, id := range ids {
			if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: id}, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// recheckParked queues the settle job of addresses whose deposits parked below the minimum may
// be swept now. A deposit is parked against what held when its sweep was looked at: the asset's
// minimum (an explicit one the chains file may lower, or a USD value at the price of the day)
// and, for native deposits, the gas of their own transfer. Without this, one parked while gas
// was dear stayed parked once gas fell, until another deposit reached the same address, which
// may never come. The sweep step decides exactly (openSweep); this only picks the addresses
// worth asking.
func (s *Service) recheckParked(ctx context.Context, n chain.Network, c *chain.Client) error {
	parked, err := store.New(s.pool).ParkedTotals(ctx, n.ChainID)
	if err != nil || len(parked) == 0 {
		return err
	}
	type floor struct {
		units  *big.Int
		priced bool
	}
	minimums := map[string]floor{}
	gas := &nativeGas{c: c}
	var due []int64
	for _, p := range parked {
		a, ok := n.Asset(p.Currency)
		if !ok {
			continue
		}
		key := strings.ToUpper(a.Symbol)
		m, seen := minimums[key]
		if !seen {
			m.units, m.priced = s.pricedMinimum(ctx, n, a)
			minimums[key] = m
		}
		// A USD minimum without a price is no minimum to the sweep (openSweep): dust parked
		// against it must not be swept, topped up with gas, because a rate source is down.
		if !m.priced || p.Total.Cmp(m.units) < 0 {
			continue
		}
		if p.Native {
			// A native sweep pays its own gas (a batch's is the gas tank's): worth asking once the
			// deposits hold more.
			batched, err := s.batched(ctx, n, p.Address)
			if err != nil {
				return err
			}
			cost, err := gas.cost(ctx)
			if err != nil {
				return err
			}
			if !batched && p.Total.Cmp(cost) <= 0 {
				continue
			}
		}
		due = append(due, p.FirstID)
	}
	if len(due) == 0 {
		return nil
	}
	s.log.Info("deposits below the minimum may be swept now", "chain", n.ChainID, "deposits", due)
	return s.queueSettles(ctx, due)
}

// nativeGas is a plain native transfer's gas at the current fees, read once.
type nativeGas struct {
	c   *chain.Client
	wei *big.Int
}

func (g *nativeGas) cost(ctx context.Context) (*big.Int, error) {
	if g.wei == nil {
		_, feeCap, err := g.c.Fees(ctx)
		if err != nil {
			return nil, err
		}
		g.wei = new(big.Int).Mul(big.NewInt(nativeTransferGas), feeCap)
	}
	return g.wei, nil
}
