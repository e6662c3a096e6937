package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Reasons a replayed transaction does not qualify (data.reason / ErrorInfo metadata).
const (
	ReasonTxFailed           = "TX_FAILED"
	ReasonConfirmations      = "INSUFFICIENT_CONFIRMATIONS"
	ReasonNotDepositAddress  = "NOT_A_DEPOSIT_ADDRESS"
	ReasonUnknownToken       = "UNKNOWN_TOKEN"
	ReasonTransactionMissing = "TX_NOT_FOUND"
)

func refuse(code fault.Code, reason, format string, args ...any) error {
	e := fault.New(code, format, args...)
	e.Details = map[string]any{"reason": reason}
	return e
}

// Replayed is the outcome of a replay.
type Replayed struct {
	Deposits []domain.Deposit
	// AlreadyKnown is true when every qualifying transfer was known: nothing changed.
	AlreadyKnown bool
}

// Replay credits a transaction the scanner missed. It is verified on-chain first: it exists,
// succeeded, has the chain's confirmations, and pays a deposit address in a configured asset
// (directly, by a token Transfer log, or, when the network traces internal transfers, from a
// contract: the transaction is traced and its internal transfers keyed as the scanner does).
// Each qualifying transfer then runs the normal pipeline (sweep, DEPOSIT). Transfers already
// known are returned unchanged; a replay never credits a transfer twice. scope limits the
// deposit addresses considered to those operators'. actor is kept on each deposit the replay
// records (Deposit.ReplayedBy), for the audit.
func (s *Service) Replay(ctx context.Context, actor domain.Actor, scope domain.Scope, chainID int64, txHash common.Hash) (Replayed, error) {
	n, ok := s.chains.Network(chainID)
	if !ok {
		return Replayed{}, fault.Invalid("chainId", "chain %d is not configured", chainID)
	}
	_, c, err := s.chains.Lookup(chainID)
	if err != nil {
		return Replayed{}, fault.Wrap(err, "replay")
	}
	tx, pending, err := c.Transaction(ctx, txHash)
	if errors.Is(err, ethereum.NotFound) {
		return Replayed{}, refuse(fault.NotFound, ReasonTransactionMissing, "transaction %s was not found on chain %d", txHash.Hex(), chainID)
	}
	if err != nil {
		return Replayed{}, fault.NotAvailable(err, "chain %d", chainID)
	}
	if pending {
		return Replayed{}, refuse(fault.FailedPrecondition, ReasonConfirmations, "transaction %s is still pending", txHash.Hex())
	}
	receipt, err := c.Receipt(ctx, txHash)
	if err != nil {
		return Replayed{}, fault.NotAvailable(err, "receipt of %s", txHash.Hex())
	}
	if receipt.Status != types.ReceiptStatusSuccessful {
		return Replayed{}, refuse(fault.FailedPrecondition, ReasonTxFailed, "transaction %s failed on-chain (reverted): it moved no funds", txHash.Hex())
	}
	if err := s.checkDepth(ctx, n, c, receipt.BlockNumber.Uint64()); err != nil {
		return Replayed{}, err
	}
	header, err := c.Header(ctx, receipt.BlockNumber)
	if err != nil {
		return Replayed{}, fault.NotAvailable(err, "block %s", receipt.BlockNumber)
	}
	if header.Hash() != receipt.BlockHash {
		// The chain at that height is not the block the receipt came from (a reorg between the
		// two calls, or nodes on different forks): a deposit recorded against this block would
		// not be in it. As the scanner does (ErrRaced), it is tried again, not recorded.
		return Replayed{}, fault.NotAvailable(fmt.Errorf("receipt of %s is from block %s, the chain has %s at %s",
			txHash.Hex(), receipt.BlockHash.Hex(), header.Hash().Hex(), receipt.BlockNumber), "chain %d (it moved while the transaction was checked)", chainID)
	}
	block := types.NewBlockWithHeader(header)
	var trace *chain.CallFrame
	if n.TraceInternalTransfers {
		if trace, err = c.TraceTransaction(ctx, txHash); err != nil {
			return Replayed{}, fault.NotAvailable(err, "trace of %s", txHash.Hex())
		}
	}
	q := store.New(s.pool)
	scanned, err := s.chainAtScannedHeight(ctx, q, c, chainID, header)
	if err != nil {
		return Replayed{}, err
	}
	found, err := s.replayTransfers(ctx, q, scope, n, block, tx, receipt, trace)
	if err != nil {
		return Replayed{}, err
	}
	return s.recordReplayed(ctx, actor, chainID, txHash, found, scanned)
}

// recordReplayed records a replay's transfers that qualify, in the transaction holding the
// chain's cursor, and queues their settle jobs; known transfers are returned unchanged.
func (s *Service) recordReplayed(ctx context.Context, actor domain.Actor, chainID int64, txHash common.Hash,
	found []domain.Deposit, scanned scannedBlock) (Replayed, error) {
	out := Replayed{AlreadyKnown: true}
	err := store.InTx(ctx, s.pool, func(dbtx pgx.Tx) error {
		q := store.New(dbtx)
		// The chain's cursor lock, which the scanner's writes hold: a replay records the
		// transfers after any other replay or scan pass of the chain that could record them
		// too (two inserts of one transfer at once fail on its idempotency key). A chain never
		// scanned has no cursor; an insert met meanwhile is then known (below).
		if _, err := q.GetCursor(ctx, chainID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := scanned.check(ctx, q, chainID); err != nil {
			return err
		}
		for _, d := range found {
			known, err := q.DepositByTransfer(ctx, d.ChainID, d.TxHash, d.LogIndex)
			if err == nil && known.Status != domain.DepositOrphaned {
				out.Deposits = append(out.Deposits, known)
				continue
			}
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			orphaned := err == nil
			d.Manual, d.ReplayedBy = true, actor
			saved, inserted, err := q.UpsertDeposit(ctx, d)
			if err != nil {
				return err
			}
			if !inserted && !orphaned {
				// Recorded meanwhile (a concurrent replay or the scanner, whose insert this one
				// waited on): known, and whoever recorded it confirms and settles it.
				out.Deposits = append(out.Deposits, saved)
				continue
			}
			out.AlreadyKnown = false
			if err := q.ConfirmDeposit(ctx, saved.ID); err != nil { // Confirm, as the scan's
				return err
			}
			if _, err := s.river.InsertTx(ctx, dbtx, SettleArgs{DepositID: saved.ID}, nil); err != nil {
				return err
			}
			if saved, err = q.GetDeposit(ctx, saved.ID); err != nil {
				return err
			}
			s.log.Info("missed deposit replayed", "deposit", saved.ID, "chain", chainID, "tx", txHash.Hex(), "log_index", saved.LogIndex)
			out.Deposits = append(out.Deposits, saved)
		}
		return nil
	})
	if refused, ok := errors.AsType[*fault.Error](err); ok {
		return Replayed{}, refused // the scanner's view refused it (scannedBlock.check)
	} else if err != nil {
		return Replayed{}, fault.Wrap(err, "replay %s", txHash.Hex())
	}
	return out, nil
}

// scannedBlock is the chain's block, as a replay read it, at the height of the scanner's
// newest block at or below the replayed one (zero when the scanner has read no block).
type scannedBlock struct {
	number uint64
	hash   common.Hash
}

// chainAtScannedHeight reads the chain's block at the height of the scanner's newest block at
// or below the replayed block (header): the replayed block itself when the scanner is past it.
func (s *Service) chainAtScannedHeight(ctx context.Context, q *store.Queries, c *chain.Client, chainID int64,
	header *types.Header) (scannedBlock, error) {
	cur, err := q.GetCursor(ctx, chainID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && cur.NextBlock == 0) {
		return scannedBlock{}, nil
	} else if err != nil {
		return scannedBlock{}, fault.Wrap(err, "replay")
	}
	number := header.Number.Uint64()
	if number < cur.NextBlock {
		return scannedBlock{number: number, hash: header.Hash()}, nil
	}
	tip, err := c.Header(ctx, new(big.Int).SetUint64(cur.NextBlock-1))
	if err != nil {
		return scannedBlock{}, fault.NotAvailable(err, "block %d", cur.NextBlock-1)
	}
	return scannedBlock{number: cur.NextBlock - 1, hash: tip.Hash()}, nil
}

// check refuses a replay from a branch the scanner has not followed yet (in the transaction
// holding the chain's cursor): the scanner holds another block at that height. Its next pass
// rolls back to the fork, and took a deposit recorded now for one whose block left the chain
// (REORGED, its credit reversed) though its block is the chain's; after that pass the scanner
// records it itself, or a replay does.
func (b scannedBlock) check(ctx context.Context, q *store.Queries, chainID int64) error {
	if b.hash == (common.Hash{}) {
		return nil
	}
	held, err := q.BlockHash(ctx, chainID, b.number)
	if err != nil || held == "" || held == b.hash.Hex() {
		return err // "": rolled back or pruned since; the scanner reads the chain's blocks from there
	}
	return fault.NotAvailable(fmt.Errorf("the scanner holds block %s at %d, the chain has %s", held, b.number, b.hash.Hex()),
		"chain %d (its scanner has not yet followed a reorg at block %d; replay it again after its next pass)", chainID, b.number)
}

func (s *Service) checkDepth(ctx context.Context, n chain.Network, c *chain.Client, block uint64) error {
	if n.Finalized {
		f, err := c.Finalized(ctx)
		if err != nil {
			return fault.NotAvailable(err, "finalized block of chain %d", n.ChainID)
		}
		if block > f.Number.Uint64() {
			return refuse(fault.FailedPrecondition, ReasonConfirmations, "block %d is not finalized yet (finalized: %d)", block, f.Number)
		}
		return nil
	}
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return fault.NotAvailable(err, "head of chain %d", n.ChainID)
	}
	var have uint64 // confirmations so far: none while the block is beyond the head
	if head+1 > block {
		have = head + 1 - block
	}
	if have < depth(n) {
		return refuse(fault.FailedPrecondition, ReasonConfirmations, "%d of %d confirmations so far; replay it again later", have, n.Confirmations)
	}
	return nil
}

// replayTransfers finds the transfers of a transaction that qualify as deposits; trace is its
// call trace when the network traces internal transfers (else nil).
func (s *Service) replayTransfers(ctx context.Context, q *store.Queries, scope domain.Scope, n chain.Network, b *types.Block,
	tx *types.Transaction, r *types.Receipt, trace *chain.CallFrame) ([]domain.Deposit, error) {
	var found []domain.Deposit
	unknownToken := ""
	isDepositAddress := func(a common.Address) (store.DepositAddress, bool, error) {
		owner, err := q.DepositAddressByAddress(ctx, a.Hex())
		if errors.Is(err, store.ErrNotFound) {
			return owner, false, nil
		}
		return owner, err == nil && scope.Includes(owner.OperatorID), err
	}
	sender, _ := types.Sender(types.LatestSignerForChainID(big.NewInt(n.ChainID)), tx)
	own := s.serviceWallets()[sender]
	if to := tx.To(); to != nil && tx.Value().Sign() > 0 {
		owner, ok, err := isDepositAddress(*to)
		if err != nil {
			return nil, err
		}
		if ok && !own {
			d, err := s.newDeposit(ctx, q, n, b, tx.Hash(), -1, owner, *to, n.NativeSymbol, n.NativeDecimals, common.Address{}, tx.Value())
			if err != nil {
				return nil, err
			}
			found = append(found, d)
		}
	}
	for _, t := range chain.InternalTransfers(trace) {
		if t.Reverted || own {
			continue
		}
		owner, ok, err := isDepositAddress(t.To)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		d, err := s.newDeposit(ctx, q, n, b, tx.Hash(), InternalLogIndex(t.Ordinal), owner, t.To, n.NativeSymbol, n.NativeDecimals, common.Address{}, t.Value)
		if err != nil {
			return nil, err
		}
		found = append(found, d)
	}
	for _, l := range r.Logs {
		if len(l.Topics) != 3 || l.Topics[0] != transferTopic() || len(l.Data) != 32 {
			continue
		}
		recipient := common.BytesToAddress(l.Topics[2].Bytes())
		amount := new(big.Int).SetBytes(l.Data)
		owner, ok, err := isDepositAddress(recipient)
		if err != nil {
			return nil, err
		}
		if !ok || amount.Sign() <= 0 {
			continue
		}
		var token *chain.Token
		for i := range n.Tokens {
			if n.Tokens[i].ContractAddress == l.Address {
				token = &n.Tokens[i]
			}
		}
		if token == nil {
			unknownToken = l.Address.Hex()
			continue
		}
		d, err := s.newDeposit(ctx, q, n, b, tx.Hash(), logIndex(l.Index), owner, recipient, token.Symbol, token.Decimals, token.ContractAddress, amount)
		if err != nil {
			return nil, err
		}
		found = append(found, d)
	}
	if len(found) > 0 {
		return found, nil
	}
	if unknownToken != "" {
		return nil, refuse(fault.FailedPrecondition, ReasonUnknownToken,
			"the transaction pays a deposit address in token %s, which chain %d does not accept", unknownToken, n.ChainID)
	}
	return nil, refuse(fault.FailedPrecondition, ReasonNotDepositAddress,
		"transaction %s pays no deposit address of this service on chain %d", tx.Hash().Hex(), n.ChainID)
}
