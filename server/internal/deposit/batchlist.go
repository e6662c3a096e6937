package deposit

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// BatchOutcome is what a batch did to one of its addresses, as the ops listing shows it.
type BatchOutcome string

// The outcomes.
const (
	// BatchSwept: the batch moved the address's amounts to the bankroll (its sweep stays in it).
	BatchSwept BatchOutcome = "swept"
	// BatchSkippedEntry: the batch did not sweep the address (a delegation cleared or replaced,
	// a reverted sweep, a batch never mined): its sweep left it to wait for a later batch.
	BatchSkippedEntry BatchOutcome = "skipped"
	// BatchWaiting: the batch is still SENDING.
	BatchWaiting BatchOutcome = "waiting"
)

// ListedBatch is a batch as an engineer sees it: its transaction and one entry per address it
// carried, read from the transaction as signed (its call data and authorizations).
type ListedBatch struct {
	domain.SweepBatch

	// Tx is its transaction (ID, State, MinedHash, MinedBlock set).
	Tx domain.ChainTx
	// Authorizations counts the EIP-7702 authorizations the transaction carries.
	Authorizations int
	Entries        []BatchEntry
}

// BatchEntry is one address of a batch and the sweep it carried.
type BatchEntry struct {
	// SweepID is 0 when no batched sweep of the address was open when the batch formed (only a
	// manual change of the tables can do that).
	SweepID int64
	Address string
	Assets  []BatchAsset
	// Authorized: the batch delegated the address to the Sweeper.
	Authorized bool
	Outcome    BatchOutcome
	// Skips, SweepStatus and CurrentBatchID are the sweep's now.
	Skips          int32
	SweepStatus    domain.SweepStatus
	CurrentBatchID int64
	DepositIDs     []int64
}

// BatchAsset is an exact amount of one asset a batch moves from an address, with its fee.
type BatchAsset struct {
	// Currency is the symbol, "" when the chain no longer lists the token.
	Currency string
	// Token is the contract, the zero address for the native currency.
	Token  common.Address
	Amount *big.Int
	// Fee is the part of Amount paid to the chain's feeAddress (the rest to the bankroll).
	Fee *big.Int
}

// ListBatches lists up to limit batches newest first, of one chain (0: every chain), only those
// still SENDING when open. Read only: what each batch carried comes from its stored
// transaction, where each of its sweeps is from the sweeps table.
func (s *Service) ListBatches(ctx context.Context, chainID int64, open bool, limit int) ([]ListedBatch, error) {
	q := store.New(s.pool)
	rows, err := q.ListSweepBatches(ctx, chainID, open, limit)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.Batch.ID
	}
	held, err := q.SweepsInBatches(ctx, ids)
	if err != nil {
		return nil, err
	}
	inBatch := map[int64]map[common.Address]domain.Sweep{}
	for _, sw := range held {
		if inBatch[sw.BatchID] == nil {
			inBatch[sw.BatchID] = map[common.Address]domain.Sweep{}
		}
		inBatch[sw.BatchID][common.HexToAddress(sw.Address)] = sw
	}
	out := make([]ListedBatch, len(rows))
	// The addresses a batch carried but no longer holds (it skipped them), per chain: their
	// sweeps are looked up by address.
	left := map[int64][]common.Address{}
	for i, r := range rows {
		lb, err := s.listedBatch(r, inBatch[r.Batch.ID])
		if err != nil {
			return nil, err
		}
		for _, e := range lb.Entries {
			if e.SweepID == 0 {
				left[r.Batch.ChainID] = append(left[r.Batch.ChainID], common.HexToAddress(e.Address))
			}
		}
		out[i] = lb
	}
	for chainID, addrs := range left {
		if err := s.findSkipped(ctx, q, chainID, addrs, out); err != nil {
			return nil, err
		}
	}
	var sweepIDs []int64
	for _, b := range out {
		for _, e := range b.Entries {
			if e.SweepID != 0 {
				sweepIDs = append(sweepIDs, e.SweepID)
			}
		}
	}
	deposits, err := q.DepositIDsOfSweeps(ctx, sweepIDs)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for j := range out[i].Entries {
			out[i].Entries[j].DepositIDs = deposits[out[i].Entries[j].SweepID]
		}
	}
	return out, nil
}

// listedBatch reads a batch's entries from its transaction; held are the sweeps it holds now.
func (s *Service) listedBatch(r store.BatchWithTx, held map[common.Address]domain.Sweep) (ListedBatch, error) {
	lb := ListedBatch{SweepBatch: r.Batch, Tx: r.Tx}
	accounts, err := batchsweep.Accounts(r.Tx.Data)
	if err != nil {
		return lb, fmt.Errorf("deposit: batch %d: its transaction %d: %w", r.Batch.ID, r.Tx.ID, err)
	}
	authorized, err := authorities(r.Tx.Authorizations)
	if err != nil {
		return lb, fmt.Errorf("deposit: batch %d: its transaction %d: %w", r.Batch.ID, r.Tx.ID, err)
	}
	lb.Authorizations = len(authorized)
	n, known := s.chains.Network(r.Batch.ChainID)
	for _, a := range accounts {
		e := BatchEntry{Address: a.Address.Hex(), Authorized: authorized[a.Address], Outcome: BatchWaiting}
		for _, as := range a.Assets {
			ba := BatchAsset{Token: as.Token, Amount: as.Amount, Fee: as.Fee}
			switch {
			case !known:
			case as.Token == (common.Address{}):
				ba.Currency = n.NativeSymbol
			default:
				for _, t := range n.Tokens {
					if t.ContractAddress == as.Token {
						ba.Currency = t.Symbol
					}
				}
			}
			e.Assets = append(e.Assets, ba)
		}
		if sw, ok := held[a.Address]; ok {
			setSweep(&e, sw)
			if r.Batch.Status == domain.BatchDone {
				e.Outcome = BatchSwept // a skipped sweep leaves its batch when the batch is settled
			}
		} else if r.Batch.Status == domain.BatchDone {
			e.Outcome = BatchSkippedEntry
		}
		lb.Entries = append(lb.Entries, e)
	}
	return lb, nil
}

// findSkipped finds, for the entries of batches that no longer hold their sweep, the sweep the
// batch carried: the address's last skipped sweep opened before the batch formed (an address
// has at most one open sweep at a time, a batch carries only open ones, and a sweep a batch
// skipped counts it in skips).
func (s *Service) findSkipped(ctx context.Context, q *store.Queries, chainID int64, addrs []common.Address, batches []ListedBatch) error {
	// Both spellings: the query compares text, whichever way the address was stored.
	spelled := make([]string, 0, 2*len(addrs))
	for _, a := range addrs {
		spelled = append(spelled, a.Hex(), strings.ToLower(a.Hex()))
	}
	sweeps, err := q.SkippedSweepsOfAddresses(ctx, chainID, spelled)
	if err != nil {
		return err
	}
	for i := range batches {
		b := &batches[i]
		if b.ChainID != chainID {
			continue
		}
		for j := range b.Entries {
			e := &b.Entries[j]
			if e.SweepID != 0 {
				continue
			}
			for _, sw := range sweeps { // oldest first: the last one opened before the batch
				if common.HexToAddress(sw.Address) == common.HexToAddress(e.Address) && !sw.CreatedAt.After(b.CreatedAt) {
					setSweep(e, sw)
				}
			}
		}
	}
	return nil
}

func setSweep(e *BatchEntry, sw domain.Sweep) {
	e.SweepID, e.Skips, e.SweepStatus, e.CurrentBatchID = sw.ID, sw.Skips, sw.Status, sw.BatchID
}

// authorities recovers the addresses a stored authorization list delegates (nil JSON: none).
func authorities(raw []byte) (map[common.Address]bool, error) {
	out := map[common.Address]bool{}
	if len(raw) == 0 {
		return out, nil
	}
	var auths []types.SetCodeAuthorization
	if err := json.Unmarshal(raw, &auths); err != nil {
		return nil, fmt.Errorf("its authorizations: %w", err)
	}
	for _, a := range auths {
		addr, err := a.Authority()
		if err != nil {
			return nil, fmt.Errorf("an authorization's signer: %w", err)
		}
		out[addr] = true
	}
	return out, nil
}
