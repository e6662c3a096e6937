package deposit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Batch sweeps (EIP-7702, docs/sweeps-eip7702.md). On a chain whose sweepMethod is eip7702,
// the sweeps of token-deposit addresses are batched: the address signs nothing but its
// delegation to the chain's Sweeper (an authorization the batch carries the first time), and
// the gas tank sends one transaction that sweeps up to batchsweep.MaxBatch addresses to the
// bankroll. No top-up, no dust. The money rules stay those of sweep.go:
//
//   - a sweep still opens per address with its confirmed deposits and is credited from its own
//     deposits, exactly once (finishSweep);
//   - it enters a batch (FUNDING → SENDING) in the database transaction that stores the
//     batch's signed transaction, before any broadcast; a batch takes every sweep due when it
//     forms (the sweeps of all token addresses with confirmed deposits are opened first), and
//     a few batches may be in flight per chain, so a deposit never waits for another batch;
//   - the batch sweeps exact amounts (the deposits'), and its receipt, never its success,
//     decides each sweep: swept (the token Transfer / NativeSwept logs show exactly those
//     amounts reaching the bankroll) or skipped (a delegation cleared or replaced, a balance
//     short of the amounts) and back to wait for the next batch, which re-authorizes it;
//   - a batch that can never be mined (reverted, cancelled, failed) skips every sweep of it;
//   - a reorg holds a sweep as before: a held sweep joins no batch, and one already swept is
//     credited only once the reorg is resolved;
//   - the deposit fee stays in the bankroll (the Sweeper pays nowhere else): the operator is
//     credited the net amount, the fee is recorded on the deposit as with topup.

// PurposeSweepBatch is the gas tank's batch transaction (chain_txs.purpose).
const PurposeSweepBatch = "sweep-batch"

// batchRef is the chain_txs ref of a batch's transaction.
func batchRef(batchID int64) string { return fmt.Sprintf("batch:%d", batchID) }

// stepBatchStored: a batch's transaction is stored with its sweeps, not broadcast yet.
const stepBatchStored = "batch-stored"

// stepBatchPlanned: a batch is planned and signed, about to be stored (where two workers'
// planners of the same sweeps meet).
const stepBatchPlanned = "batch-planned"

// stepBatchSettled: a batch's outcome is recorded, its swept sweeps not credited yet.
const stepBatchSettled = "batch-settled"

// errBatchStale: a sweep changed between planning a batch and storing it; the batch is
// planned again on the next step.
var errBatchStale = errors.New("deposit: a sweep changed while its batch was planned")

// batched reports whether the sweeps of address on n go in batches: a token-deposit address
// on an eip7702 chain. Every other address (native deposits, treasuries, addresses handed out
// before the chain moved to eip7702) keeps the top-up sweep, so it is never delegated. So does
// a token-deposit address no batch has swept while a carry stands for it (carryStands).
func (s *Service) batched(ctx context.Context, n chain.Network, address string) (bool, error) {
	if !n.Batched() {
		return false, nil
	}
	q := store.New(s.pool)
	owner, err := q.DepositAddressByAddress(ctx, address)
	if err != nil {
		return false, fmt.Errorf("deposit: owner of %s: %w", address, err)
	}
	if !owner.Token {
		return false, nil
	}
	if stands, err := s.carryStands(ctx, n, address); err != nil || !stands {
		return err == nil, err
	}
	return q.AddressBatched(ctx, n.ChainID, address)
}

// carryStands reports whether a carry not yet taken stands for address, of any asset of n.
// One recorded before the chain moved to eip7702, by an unbatched sweep, is taken by the
// address's top-up sweeps while no batch has swept it (it is not delegated): a native one is
// what reached the bankroll, and the address also paid that transfer's gas, which a batch
// asking for the deposits less the carry would find missing. An address a batch has swept
// (delegated: a 21,000-gas top-up to it fails) has its carries taken by its batches
// (batchPlanned), a batch's carries among them.
func (s *Service) carryStands(ctx context.Context, n chain.Network, address string) (bool, error) {
	q := store.New(s.pool)
	symbols := make([]string, 0, 1+len(n.Tokens))
	symbols = append(symbols, n.NativeSymbol)
	for _, t := range n.Tokens {
		symbols = append(symbols, t.Symbol)
	}
	for _, symbol := range symbols {
		carry, err := q.CarryBalance(ctx, n.ChainID, address, symbol, 0)
		if err != nil {
			return false, err
		}
		if carry.Bankroll.Sign() != 0 || carry.Fee.Sign() != 0 {
			return true, nil
		}
	}
	return false, nil
}

// batchedSweepStep advances a batched sweep: it advances the chain's batch (forming one when
// none is in flight) and credits the sweep once its batch swept it.
func (s *Service) batchedSweepStep(ctx context.Context, n chain.Network, c *chain.Client, sw domain.Sweep) error {
	if sw.Status == domain.SweepSending && sw.MinedAt != nil {
		return s.finishSweep(ctx, n, sw)
	}
	return s.batchStep(ctx, n, c)
}

// freeSkips is how many times a sweep may be skipped and join the very next batch (a
// cleared or replaced delegation is re-authorized by it); after that it backs off (LeaveBatch).
const freeSkips = 3

// maxBatchesInFlight bounds a chain's batches on their way: sweeps that fall due while one is
// in flight go out at once in the next (no waiting for a block), and a stalled chain does not
// queue more gas-tank transactions than this behind the first.
const maxBatchesInFlight = 4

// batchStep advances the chain's batches in flight, then forms the next one from the sweeps
// that wait.
func (s *Service) batchStep(ctx context.Context, n chain.Network, c *chain.Client) error {
	// The settle jobs of a chain's deposits all land here; while one of this process's is at
	// it, the others leave it (it takes their sweeps, or the next poll does) instead of
	// planning the same batch at the same time and losing.
	v, _ := s.batching.LoadOrStore(n.ChainID, new(sync.Mutex))
	mu, _ := v.(*sync.Mutex)
	if !mu.TryLock() {
		return nil
	}
	defer mu.Unlock()
	open, err := store.New(s.pool).OpenSweepBatches(ctx, n.ChainID)
	if err != nil {
		return err
	}
	inFlight := 0
	for _, b := range open {
		settled, err := s.advanceBatch(ctx, n, c, b)
		if err != nil {
			return err
		}
		if !settled {
			inFlight++
		}
	}
	if inFlight >= maxBatchesInFlight {
		return nil
	}
	// Open the sweeps of every token address with confirmed deposits first, so that deposits
	// confirmed together go in one batch, whichever deposit's job forms it.
	due, err := store.New(s.pool).DueTokenAddresses(ctx, n.ChainID, batchsweep.MaxBatch)
	if err != nil {
		return err
	}
	for _, address := range due {
		if _, err := s.openSweep(ctx, n, c, address); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	return s.formBatch(ctx, n, c)
}

// chainState reads what batchsweep.Build needs at the latest block.
type chainState struct{ c *chain.Client }

func (st chainState) CodeAt(ctx context.Context, a common.Address, block *big.Int) ([]byte, error) {
	return st.c.CodeAt(ctx, a, block)
}

func (st chainState) NonceAt(ctx context.Context, a common.Address, _ *big.Int) (uint64, error) {
	return st.c.Nonce(ctx, a, false)
}

// batchAccount is what a sweep moves from its address: per asset, the sum of its deposits in
// exact amounts (the native currency as the zero token) less what a carry stands for them
// (batchPlanned; an asset the carry covers is left out), with the operators' deposit fees
// going to the chain's feeAddress (none without one: the fee then stays in the bankroll).
func (s *Service) batchAccount(ctx context.Context, n chain.Network, sw domain.Sweep, deposits []domain.Deposit) (batchsweep.Account, map[int64]*big.Int, error) {
	acct := batchsweep.Account{Address: common.HexToAddress(sw.Address)}
	groups, err := s.groups(ctx, n, deposits)
	if err != nil {
		return acct, nil, err
	}
	for _, g := range groups {
		planned, err := s.batchPlanned(ctx, store.New(s.pool), n, sw, g)
		if err != nil {
			return acct, nil, err
		}
		amount := new(big.Int).Add(planned.Bankroll, planned.Fee)
		if amount.Sign() == 0 {
			continue // the carry covers it (carry.go)
		}
		token := common.Address{}
		if !g.asset.Native {
			token = g.asset.Contract
		}
		as := batchsweep.Asset{Token: token, Amount: amount}
		if planned.Fee.Sign() > 0 {
			as.Fee = planned.Fee
		}
		acct.Assets = append(acct.Assets, as)
	}
	return acct, fees(groups), nil
}

// formBatch stores the next batch of the chain's waiting sweeps, signed, before anything is
// broadcast, then broadcasts it.
func (s *Service) formBatch(ctx context.Context, n chain.Network, c *chain.Client) error {
	q := store.New(s.pool)
	due, err := q.DueBatchSweeps(ctx, n.ChainID, batchsweep.MaxBatch)
	if err != nil || len(due) == 0 {
		return err
	}
	if err := s.verifySweeper(ctx, n, c); err != nil {
		return err
	}
	var (
		sweeps   []domain.Sweep
		accounts []batchsweep.Account
		planned  = map[int64][]int64{}  // sweep → its deposits, as planned
		fees     = map[int64]*big.Int{} // deposit → its fee, as planned
	)
	for _, sw := range due {
		// A written-off deposit's amount is not at the address (retire.go).
		if _, err := q.DetachWrittenOff(ctx, sw.ID); err != nil {
			return err
		}
		deposits, err := q.SweepDeposits(ctx, sw.ID)
		if err != nil {
			return err
		}
		if deposits, err = s.dropUnbackedWrittenOff(ctx, n, c, sw, deposits); errors.Is(err, errBatchStale) {
			return nil // the next step plans again
		} else if err != nil {
			return err
		}
		if len(deposits) == 0 {
			// Its deposits left with a reorg before it was signed (reorg.go detaches them
			// from a FUNDING sweep), or were written off: nothing to sweep, the sweep closes.
			if err := s.closeEmptySweep(ctx, sw.ID); err != nil {
				return err
			}
			continue
		}
		acct, planFees, err := s.batchAccount(ctx, n, sw, deposits)
		if err != nil {
			return err
		}
		if len(acct.Assets) == 0 {
			// A carry covers its deposits: nothing to move, it is credited from the carry.
			if err := s.creditCovered(ctx, n, sw.ID, deposits, planFees); err != nil {
				return err
			}
			continue
		}
		maps.Copy(fees, planFees)
		sweeps = append(sweeps, sw)
		accounts = append(accounts, acct)
		for _, d := range deposits {
			planned[sw.ID] = append(planned[sw.ID], d.ID)
		}
	}
	if len(sweeps) == 0 {
		return nil
	}
	plan, err := batchsweep.Build(ctx, chainState{c}, s.engine.Keys(), big.NewInt(n.ChainID), n.SweeperAddress, accounts)
	if err != nil {
		return fmt.Errorf("deposit: plan a batch of %d sweeps on chain %d: %w", len(sweeps), n.ChainID, err)
	}
	p, err := s.engine.Prepare(ctx, chaintx.Request{ChainID: n.ChainID, From: s.wallet.GasTankAddress(), To: n.SweeperAddress,
		Data: plan.Data, Authorizations: plan.Authorizations, Purpose: PurposeSweepBatch})
	if err != nil {
		return fmt.Errorf("deposit: prepare a batch of %d sweeps on chain %d: %w", len(sweeps), n.ChainID, err)
	}
	if s.crash != nil {
		s.crash(stepBatchPlanned)
	}
	var (
		batch domain.SweepBatch
		txID  int64
	)
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.LockBatchChain(ctx, n.ChainID); err != nil {
			return err
		}
		if open, err := q.OpenSweepBatches(ctx, n.ChainID); err != nil {
			return err
		} else if len(open) >= maxBatchesInFlight {
			return errBatchStale // other jobs formed batches meanwhile
		}
		if batch, err = q.InsertSweepBatch(ctx, n.ChainID); err != nil {
			return err
		}
		for _, sw := range sweeps {
			if err := joinBatch(ctx, q, sw.ID, batch.ID, planned[sw.ID], fees); err != nil {
				return err
			}
		}
		p.Ref = batchRef(batch.ID)
		t, _, err := s.engine.Create(ctx, tx, p)
		txID = t.ID
		return err
	})
	if errors.Is(err, errBatchStale) {
		return nil // the next step plans again
	}
	if err != nil {
		return err
	}
	if s.crash != nil {
		s.crash(stepBatchStored)
	}
	s.log.Info("sweep batch signed", "batch", batch.ID, "chain", n.ChainID, "sweeps", len(sweeps),
		"authorizations", len(plan.Authorizations))
	_, err = s.engine.Advance(ctx, txID)
	return err
}

// verifySweeper checks, once per chain and process, that the configured Sweeper obeys this
// service's gas tank and pays the chain's bankroll, before anything is delegated to it: a
// wrong sweeperAddress (another deployment, a contract paying someone else) stops the chain's
// batches with an error in the log, and every deposit waits at its address.
func (s *Service) verifySweeper(ctx context.Context, n chain.Network, c *chain.Client) error {
	if n.SweeperAddress == (common.Address{}) || n.BankrollAddress == (common.Address{}) {
		return fmt.Errorf("deposit: chain %d sweeps in batches but has no sweeperAddress or bankrollAddress", n.ChainID)
	}
	if ok, _ := s.sweepers.Load(n.ChainID); ok == n.SweeperAddress {
		return nil
	}
	if err := batchsweep.Verify(ctx, c, n.SweeperAddress, s.wallet.GasTankAddress(), n.BankrollAddress, n.FeeAddress); err != nil {
		s.log.Error("sweeperAddress refused: no batch is sent on this chain until it names a Sweeper of this gas tank, bankroll and feeAddress",
			"chain", n.ChainID, "sweeper", n.SweeperAddress, "error", err)
		return fmt.Errorf("deposit: chain %d: %w", n.ChainID, err)
	}
	s.sweepers.Store(n.ChainID, n.SweeperAddress)
	return nil
}

// joinBatch moves a sweep into a batch, after checking (with its deposits' rows locked) that
// its deposits are still those the batch was planned with.
func joinBatch(ctx context.Context, q *store.Queries, sweepID, batchID int64, planned []int64, fees map[int64]*big.Int) error {
	if err := stillAsPlanned(ctx, q, sweepID, planned); err != nil {
		return err
	}
	return moveSweep(ctx, q, sweepID, SweepSigned, func() error {
		joined, err := q.JoinBatch(ctx, sweepID, batchID)
		if err == nil && !joined {
			err = errBatchStale
		}
		if err != nil {
			return err
		}
		mine := make(map[int64]*big.Int, len(planned))
		for _, id := range planned {
			mine[id] = fees[id]
		}
		return q.FixDepositFees(ctx, mine)
	})
}

// creditCovered credits a waiting batched sweep whose deposits a carry covers, with no batch:
// it is marked sent and mined (after checking its deposits are still those planned), then
// credited as a swept one, taking the carry (settleBatchedCarry). One whose credit waits (a
// reorg, a rate) is credited by its deposits' next step (batchedSweepStep: sent and mined).
func (s *Service) creditCovered(ctx context.Context, n chain.Network, sweepID int64, deposits []domain.Deposit,
	fees map[int64]*big.Int,
) error {
	planned := make([]int64, 0, len(deposits))
	for _, d := range deposits {
		planned = append(planned, d.ID)
	}
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := coverSweep(ctx, q, sweepID, planned, fees); err != nil {
			return err
		}
		_, err := q.MarkSweepMined(ctx, sweepID)
		return err
	})
	if errors.Is(err, errBatchStale) {
		return nil // the next step plans again
	} else if err != nil {
		return err
	}
	s.log.Info("batched sweep covered by its address's carry: credited with no batch", "sweep", sweepID, "chain", n.ChainID)
	return s.creditSwept(ctx, n, sweepID)
}

// coverSweep is joinBatch for a sweep a carry covers: it moves on with no batch.
func coverSweep(ctx context.Context, q *store.Queries, sweepID int64, planned []int64, fees map[int64]*big.Int) error {
	if err := stillAsPlanned(ctx, q, sweepID, planned); err != nil {
		return err
	}
	return moveSweep(ctx, q, sweepID, SweepSigned, func() error { return q.FixDepositFees(ctx, fees) })
}

// stillAsPlanned checks, with the sweep's and its deposits' rows locked, that the sweep still
// waits for a batch with the deposits it was planned with, else errBatchStale.
func stillAsPlanned(ctx context.Context, q *store.Queries, sweepID int64, planned []int64) error {
	// Another worker's planner may have put it in a batch since this one read it: this plan is
	// then stale. Signing it anyway would sweep the address twice (moveSweep leaves a refused
	// move alone without an error, so this check must come first).
	if err := lockWaiting(ctx, q, sweepID); err != nil {
		return err
	}
	return samePlanned(ctx, q, sweepID, planned)
}

// lockWaiting locks a sweep's row and checks that it still waits for a batch (FUNDING, in
// none), else errBatchStale.
func lockWaiting(ctx context.Context, q *store.Queries, sweepID int64) error {
	sw, err := q.LockSweep(ctx, sweepID)
	if err != nil {
		return err
	}
	if sw.Status != domain.SweepFunding || sw.BatchID != 0 {
		return errBatchStale
	}
	return nil
}

// samePlanned checks, with their rows locked, that a sweep's deposits are still those planned.
func samePlanned(ctx context.Context, q *store.Queries, sweepID int64, planned []int64) error {
	for _, id := range planned {
		d, err := q.LockDeposit(ctx, id)
		if err != nil {
			return err
		}
		if d.SweepID != sweepID {
			return errBatchStale
		}
	}
	now, err := q.SweepDeposits(ctx, sweepID)
	if err != nil {
		return err
	}
	if len(now) != len(planned) {
		return errBatchStale
	}
	return nil
}

// closeEmptySweep closes a waiting batched sweep left without deposits.
func (s *Service) closeEmptySweep(ctx context.Context, sweepID int64) error {
	return store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if deposits, err := q.SweepDeposits(ctx, sweepID); err != nil || len(deposits) > 0 {
			return err
		}
		if err := moveSweep(ctx, q, sweepID, SweepSigned, func() error { return nil }); err != nil {
			return err
		}
		return moveSweep(ctx, q, sweepID, SweepCredited, func() error { return nil })
	})
}

// advanceBatch advances a batch's transaction; once it is mined it settles the batch from
// the receipt and credits the sweeps it swept. settled: the batch is done.
func (s *Service) advanceBatch(ctx context.Context, n chain.Network, c *chain.Client, b domain.SweepBatch) (settled bool, err error) {
	q := store.New(s.pool)
	t, err := q.ChainTxByRef(ctx, PurposeSweepBatch, batchRef(b.ID))
	if err != nil {
		return false, fmt.Errorf("deposit: batch %d: its transaction: %w", b.ID, err)
	}
	if t.State == domain.ChainTxPending {
		if err := s.cancelBatchOfWrittenOff(ctx, n, b, t); err != nil {
			return false, err
		}
		if err := s.cancelBatchGapBefore(ctx, n, c, t); err != nil {
			return false, err
		}
		if t, err = s.engine.Advance(ctx, t.ID); err != nil && !errors.Is(err, chaintx.ErrInsufficientFunds) {
			return false, err
		}
	}
	if t.State == domain.ChainTxCancelled {
		// Cancelled for a written-off deposit (cancelBatchOfWrittenOff): settled once the cancel
		// holds at depth on the chain. One that left the chain is pending again and sent again;
		// settled before, the gas tank's nonce stayed unused and every later transaction of the
		// gas tank waited behind it, while the batch's public bytes could still be mined.
		if deep, err := s.allDeep(ctx, n, c, []domain.ChainTx{t}); err != nil || !deep {
			return false, err
		}
	}
	sweeps, err := q.BatchSweeps(ctx, b.ID)
	if err != nil {
		return false, err
	}
	swept := map[int64]bool{}
	switch t.State {
	case domain.ChainTxPending:
		return false, nil
	case domain.ChainTxMined:
		if ok, err := s.minedBatchSettles(ctx, n, c, t, sweeps); err != nil || !ok {
			return false, err // settledepth.go
		}
		results, err := s.batchResults(ctx, n, c, t, sweeps)
		if err != nil {
			return false, err
		}
		for _, sw := range sweeps {
			swept[sw.ID] = results[common.HexToAddress(sw.Address)].Swept
		}
	case domain.ChainTxReverted, domain.ChainTxCancelled, domain.ChainTxFailed:
		// Nothing of it reached the chain's state: every sweep waits for the next batch.
		s.log.Error("sweep batch not mined: its sweeps go in the next batch", "batch", b.ID, "chain", n.ChainID,
			"state", t.State, "hash", t.MinedHash)
	}
	if err := s.settleBatch(ctx, n, b, sweeps, swept); err != nil {
		return false, err
	}
	if s.crash != nil {
		s.crash(stepBatchSettled)
	}
	for _, sw := range sweeps {
		if !swept[sw.ID] {
			continue
		}
		if err := s.creditSwept(ctx, n, sw.ID); err != nil {
			return false, err
		}
	}
	return true, nil
}

// batchResults reads what a mined batch did to each of its sweeps' addresses, checked against
// the exact amounts the batch was planned with (the sweeps' deposits).
func (s *Service) batchResults(ctx context.Context, n chain.Network, c *chain.Client, t domain.ChainTx,
	sweeps []domain.Sweep) (map[common.Address]batchsweep.Result, error) {
	plan := batchsweep.Plan{Sweeper: n.SweeperAddress}
	for _, sw := range sweeps {
		deposits, err := store.New(s.pool).SweepDeposits(ctx, sw.ID)
		if err != nil {
			return nil, err
		}
		acct, _, err := s.batchAccount(ctx, n, sw, deposits)
		if err != nil {
			return nil, err
		}
		plan.Accounts = append(plan.Accounts, acct)
	}
	r, err := c.Receipt(ctx, common.HexToHash(t.MinedHash))
	if err != nil {
		return nil, fmt.Errorf("deposit: receipt of batch transaction %s: %w", t.MinedHash, err)
	}
	results, err := batchsweep.Results(plan, n.BankrollAddress, n.FeeAddress, r)
	if err != nil {
		return nil, fmt.Errorf("deposit: batch transaction %s: %w", t.MinedHash, err)
	}
	out := make(map[common.Address]batchsweep.Result, len(results))
	for _, res := range results {
		out[res.Address] = res
	}
	return out, nil
}

// settleBatch records a batch's outcome in one database transaction: the swept sweeps are
// marked mined (credited next), the others wait for the next batch, the batch is done. A
// batch already settled is left alone.
func (s *Service) settleBatch(ctx context.Context, n chain.Network, b domain.SweepBatch, sweeps []domain.Sweep, swept map[int64]bool) error {
	return store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		return moveBatch(ctx, q, b.ID, BatchSettled, func() error {
			for _, sw := range sweeps {
				if swept[sw.ID] {
					if _, err := q.MarkSweepMined(ctx, sw.ID); err != nil {
						return err
					}
					continue
				}
				if err := moveSweep(ctx, q, sw.ID, SweepSkipped, func() error { return q.LeaveBatch(ctx, sw.ID, b.ID) }); err != nil {
					return err
				}
				if sw.Skips+1 > freeSkips {
					s.log.Error("sweep skipped again by its batch: its address holds less than its deposits or its delegation keeps "+
						"being lost; it waits longer before each next batch (at most 10 minutes): an engineer should look "+
						"(coffer ops batches)", "sweep", sw.ID, "batch", b.ID, "chain", n.ChainID, "address", sw.Address, "skips", sw.Skips+1)
					continue
				}
				s.log.Warn("sweep skipped by its batch: it goes in the next one (re-authorized if its delegation was cleared or replaced)",
					"sweep", sw.ID, "batch", b.ID, "chain", n.ChainID, "address", sw.Address, "skips", sw.Skips+1)
			}
			return nil
		})
	})
}

// creditSwept credits a sweep its batch swept, unless a reorg holds it (credited once the
// reorg is resolved) or its deposits wait for a rate (their settle jobs credit it later).
func (s *Service) creditSwept(ctx context.Context, n chain.Network, sweepID int64) error {
	q := store.New(s.pool)
	if held, err := q.SweepHeldByReorg(ctx, sweepID); err != nil || held {
		return err
	}
	sw, err := q.LockSweep(ctx, sweepID) // outside a transaction: a read
	if err != nil {
		return err
	}
	if err := s.finishSweep(ctx, n, sw); err != nil && !errors.Is(err, errWaitingForRate) {
		return err
	}
	return nil
}
