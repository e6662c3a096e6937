package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// transferTopic is keccak256("Transfer(address,address,uint256)").
func transferTopic() common.Hash {
	return common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")
}

// ScanArgs scans one chain. A periodic job per chain inserts it; at most one runs per chain.
type ScanArgs struct {
	ChainID int64 `json:"chainId"`
}

// Kind implements river.JobArgs.
func (ScanArgs) Kind() string { return "deposit.scan" }

// InsertOpts keeps one scan per chain queued or running.
func (ScanArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: jobs.OnePerArgs()}
}

// ScanWorker works ScanArgs.
type ScanWorker struct {
	river.WorkerDefaults[ScanArgs]

	Service *Service
}

// Work runs one pass.
func (w *ScanWorker) Work(ctx context.Context, job *river.Job[ScanArgs]) error {
	return w.Service.Scan(ctx, job.Args.ChainID)
}

// Periodic returns the periodic scan job of every configured chain.
func (s *Service) Periodic() []*river.PeriodicJob {
	networks := s.chains.Networks()
	out := make([]*river.PeriodicJob, 0, len(networks))
	for _, n := range networks {
		chainID := n.ChainID
		out = append(out, river.NewPeriodicJob(river.PeriodicInterval(s.cfg.ScanInterval),
			func() (river.JobArgs, *river.InsertOpts) { return ScanArgs{ChainID: chainID}, nil },
			&river.PeriodicJobOpts{ID: fmt.Sprintf("deposit.scan.%d", chainID), RunOnStart: true}))
	}
	return out
}

// ScanNow queues a pass over every chain, for a worker that has just started. River's
// periodic scans begin only once a process is elected leader and its maintenance services
// are past their staggered start (up to a second, after the election), so after a start or a
// deploy the first pass came 1-3 s late, and so did every deposit mined meanwhile. A scan is
// unique per chain: a queued or running one makes this a no-op.
func (s *Service) ScanNow(ctx context.Context) error {
	return store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, n := range s.chains.Networks() {
			if _, err := s.river.InsertTx(ctx, tx, ScanArgs{ChainID: n.ChainID}, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// stepForkFound (tests): a pass found a reorg and has not rolled back yet.
const stepForkFound = "scan-fork-found"

// stepBlocksRead (tests): a pass read its blocks and has not recorded them yet.
const stepBlocksRead = "scan-blocks-read"

// ErrRaced means the chain or the cursor moved under a pass (a reorg while reading, or a
// concurrent pass); the next pass starts over.
var ErrRaced = errors.New("deposit: chain or cursor moved during the scan; retrying on the next pass")

// ErrNodeBehind is a node without a block the scanner has already read: it is behind, and the
// pass waits for it rather than read the missing blocks as a reorg (which would reverse
// credited deposits).
var ErrNodeBehind = errors.New("deposit: the RPC endpoint is behind the scanned blocks")

// ErrGenesisChanged is a node whose block 0 is not the one the chain was scanned on: its
// blocks are another network's. The scan refuses it (the scan lag grows, and the error is
// logged every pass) rather than orphan the deposits waiting for confirmations and scan again
// from block 1. `coffer dev` refuses a reset dev chain at start.
var ErrGenesisChanged = errors.New("deposit: the chain's genesis block changed")

// Scan runs one pass over a chain: reset or roll back on a changed genesis or a reorg, read the
// next window of blocks, record the transfers to deposit addresses, and confirm the deposits
// that reached the confirmation depth. RPC calls happen before the database transaction; the
// transaction commits only if the cursor did not move meanwhile.
func (s *Service) Scan(ctx context.Context, chainID int64) error {
	n, c, err := s.chains.Lookup(chainID)
	if err != nil {
		return err
	}
	q := store.New(s.pool)
	if err := s.refreshWatched(ctx, q); err != nil {
		return err
	}
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return err
	}
	genesis, err := c.Header(ctx, big.NewInt(0))
	if err != nil {
		return err
	}
	cur, err := q.GetCursor(ctx, chainID)
	if errors.Is(err, store.ErrNotFound) {
		return s.watchNewChain(ctx, q, n, genesis.Hash(), head)
	}
	if err != nil {
		return err
	}
	if cur.GenesisHash != genesis.Hash().Hex() {
		return fmt.Errorf("%w: chain %d was scanned on genesis %s, its RPC endpoint serves genesis %s (another network behind this chain id?): nothing is scanned until the endpoint is fixed",
			ErrGenesisChanged, chainID, cur.GenesisHash, genesis.Hash().Hex())
	}
	// The newest block read, as kept before the chain is read: the pass records only while the
	// cursor and that block are still the ones its reads follow.
	tip, err := keptTip(ctx, q, chainID, cur.NextBlock)
	if err != nil {
		return err
	}
	if rolledBack, err := s.rollBackAReorg(ctx, q, c, chainID, cur.NextBlock, tip); err != nil || rolledBack {
		return err
	}
	to := min(head, cur.NextBlock+s.cfg.LogWindow-1)
	var w readWindow
	if cur.NextBlock <= head {
		if w, err = s.read(ctx, n, c, cur.NextBlock, to); err != nil {
			return err
		}
	} else {
		to = cur.NextBlock - 1
	}
	blocks, found := w.refs, w.found
	ahead, err := s.sweepsLeftAhead(ctx, c, chainID, w) // sweepleft.go
	if err != nil {
		return err
	}
	confirmUpTo, confirming, err := s.confirmedTip(ctx, n, c, head, to)
	if err != nil {
		return err
	}
	var ready map[int64]bool // reorged deposits mined again that can count again (reorg.go)
	if confirming {
		if ready, err = s.readyToReinstate(ctx, c, chainID, confirmUpTo); err != nil {
			return err
		}
	}
	if s.crash != nil {
		s.crash(stepBlocksRead)
	}
	reincluded := 0
	var marked []reorged        // deposits whose block this pass shows left the chain
	var reopenedList []reopened // written-off deposits mined again: new incidents
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := lockUnmoved(ctx, q, cur, tip); err != nil {
			return err
		}
		var err error
		if marked, err = s.record(ctx, tx, chainID, blocks, found, to); err != nil {
			return err
		}
		left, err := s.markSweepsLeft(ctx, tx, chainID, ahead)
		if err != nil {
			return err
		}
		marked = append(marked, left...)
		if confirming {
			ids, err := q.ConfirmDeposits(ctx, chainID, confirmUpTo) // Confirm: CONFIRMING → SWEEPING
			if err != nil {
				return err
			}
			for _, id := range ids {
				s.log.Info("deposit confirmed", "deposit", id, "chain", chainID)
				// Sweep now: a settle job that finished its pre-confirmation work (gas) is gone, so
				// this inserts a new one, ready at once (a live one makes this a no-op).
				if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: id}, nil); err != nil {
					return err
				}
			}
			if reincluded, err = s.resolveReincluded(ctx, tx, chainID, confirmUpTo, ready); err != nil {
				return err
			}
			if reopenedList, err = s.reopenWrittenOff(ctx, tx, chainID, confirmUpTo); err != nil {
				return err
			}
		}
		return q.PutCursor(ctx, store.Cursor{ChainID: chainID, GenesisHash: cur.GenesisHash, NextBlock: to + 1, HeadBlock: head})
	})
	if err != nil {
		return err
	}
	s.reportReorged(ctx, chainID, marked)
	s.reportReopened(ctx, chainID, reopenedList)
	if reincluded > 0 {
		if err := funds.ReportUnresolvedReorgs(ctx, s.pool, s.chains.Registry); err != nil {
			s.log.WarnContext(ctx, "count unresolved reorged deposits", "error", err)
		}
	}
	return s.recheckWaiting(ctx, n, c)
}

// record stores, in a scan pass's transaction, what the pass read up to block to: first the
// deposits it shows are in blocks no longer on the chain (leftTheChain; the transfers found
// again then land as after a rollback), then the transfers it found, then the blocks' hashes.
// It returns the deposits it marked REORGED, to report once the pass commits.
func (s *Service) record(ctx context.Context, tx pgx.Tx, chainID int64, blocks []store.BlockRef, found []domain.Deposit, to uint64) ([]reorged, error) {
	marked, err := s.leftTheChain(ctx, tx, chainID, blocks, found)
	if err != nil {
		return nil, err
	}
	if err := s.saveFound(ctx, tx, chainID, found); err != nil {
		return nil, err
	}
	if len(blocks) > 0 {
		if err := store.New(tx).PutBlocks(ctx, chainID, blocks, s.keepFrom(to+1)); err != nil {
			return nil, err
		}
	}
	return marked, nil
}

// leftTheChain handles, in the scan pass's transaction, the deposits recorded in a block this
// pass shows is not on the chain: recorded at a height the pass read under another hash, or
// whose transfer the pass found in another block. Such a deposit was recorded ahead of the
// scanner (a replay records a transfer in a confirmed block wherever the cursor is) or below
// the hashes it keeps: the rollback (findFork) walks only the kept hashes, so nothing else
// would see its block leave the chain. Each is treated as a rollback treats a deposit in a block
// that left the chain: a settled one is REORGED (reorgDeposits), an unconfirmed one ORPHANED.
// The transfer found again (saveFound, next) is then re-included as after a rollback. One
// indexed query per pass (LockDepositsOffChain).
func (s *Service) leftTheChain(ctx context.Context, tx pgx.Tx, chainID int64, blocks []store.BlockRef, found []domain.Deposit) ([]reorged, error) {
	if len(blocks) == 0 && len(found) == 0 {
		return nil, nil
	}
	q := store.New(tx)
	gone, err := q.LockDepositsOffChain(ctx, chainID, blocks, found)
	if err != nil || len(gone) == 0 {
		return nil, err
	}
	read := make(map[uint64]string, len(blocks))
	for _, b := range blocks {
		read[b.Number] = b.Hash
	}
	foundAt := make(map[string]uint64, len(found))
	for _, d := range found {
		foundAt[d.IdempotencyKey] = d.BlockNumber
	}
	var settled []domain.Deposit
	var orphans []int64
	for _, d := range gone {
		switch {
		case Moves(d.Status, Reorg):
			settled = append(settled, d)
		case Moves(d.Status, Orphan):
			orphans = append(orphans, d.ID)
		default:
			return nil, fmt.Errorf("deposit %d: %s left the chain: %w", d.ID, d.Status, errRefused) // the statement selected it
		}
	}
	if len(orphans) > 0 {
		if _, err := q.OrphanDeposits(ctx, orphans); err != nil { // Orphan: CONFIRMING → ORPHANED
			return nil, err
		}
		s.log.WarnContext(ctx, "deposits recorded ahead of the scanner are in blocks no longer on the chain: orphaned",
			"chain", chainID, "deposits", orphans)
	}
	return s.reorgDeposits(ctx, tx, chainID, settled, func(d domain.Deposit) (uint64, string) {
		// The two chains part somewhere below the deposit's height (and below where the pass
		// found its transfer again); further down is unknown: the scanner never read the old branch.
		at, why := d.BlockNumber, ""
		if h, ok := read[d.BlockNumber]; ok {
			why = fmt.Sprintf("the scanner read block %s at that height", h)
		}
		if n, ok := foundAt[d.IdempotencyKey]; ok {
			at, why = min(at, n), fmt.Sprintf("the scanner found its transfer in block %d", n)
		}
		fork := uint64(0)
		if at > 0 {
			fork = at - 1
		}
		return fork, blockLeft(d, fmt.Sprintf("%s; the chains share blocks up to %d at most", why, fork))
	})
}

// keepFrom is the oldest block whose hash is kept (KeepBlocks of them) once next is the next
// block to scan.
func (s *Service) keepFrom(next uint64) uint64 {
	if next > s.cfg.KeepBlocks {
		return next - s.cfg.KeepBlocks
	}
	return 0
}

// watchNewChain starts the cursor of a chain scanned for the first time a little before its
// head (or at its configured start), so a payment made before the first scan is not missed.
func (s *Service) watchNewChain(ctx context.Context, q *store.Queries, n chain.Network, genesis common.Hash, head uint64) error {
	from := uint64(0)
	if head > s.cfg.KeepBlocks {
		from = head - s.cfg.KeepBlocks
	}
	if n.StartBlock != nil {
		from = *n.StartBlock
	}
	s.log.Info("watching a new chain", "chain", n.ChainID, "from_block", from, "head", head)
	return q.PutCursor(ctx, store.Cursor{ChainID: n.ChainID, GenesisHash: genesis.Hex(), NextBlock: from, HeadBlock: head})
}

// saveFound stores the deposits a scan found and queues their settle jobs.
func (s *Service) saveFound(ctx context.Context, tx pgx.Tx, chainID int64, found []domain.Deposit) error {
	q := store.New(tx)
	for _, d := range found {
		// Mined (transitions.go): new, or an ORPHANED one CONFIRMING again; the statement
		// follows the table (TestStatementsFollowTheTable), as do Scan's bulk ones.
		saved, inserted, err := q.UpsertDeposit(ctx, d)
		if err != nil {
			return err
		}
		if saved.Status == domain.DepositReorged {
			if err := s.noteReinclusion(ctx, q, saved); err != nil {
				return err
			}
			continue // never settled again: it counts again once this block is confirmed
		}
		if inserted {
			s.log.Info("deposit detected", "deposit", saved.ID, "chain", chainID, "tx", saved.TxHash, "currency", saved.Currency,
				"amount", saved.GrossAmount, "block", saved.BlockNumber)
		}
		if _, err := s.river.InsertTx(ctx, tx, SettleArgs{DepositID: saved.ID}, nil); err != nil {
			return err
		}
	}
	return nil
}

// confirmedTip is the highest block whose deposits have the required depth: by count, or the
// finalized block. Only scanned blocks count (up to `scanned`), whose hashes were checked.
// ok is false while no block has the depth yet.
func (s *Service) confirmedTip(ctx context.Context, n chain.Network, c *chain.Client, head, scanned uint64) (tip uint64, ok bool, err error) {
	if n.Finalized {
		h, err := c.Finalized(ctx)
		if err != nil {
			return 0, false, err
		}
		tip = h.Number.Uint64()
	} else {
		depth := depth(n)
		if head+1 < depth {
			return 0, false, nil
		}
		tip = head + 1 - depth
	}
	return min(tip, scanned), true, nil
}

// confirmedTipNow is confirmedTip at the chain's head as the node tells it now, with every
// block up to the head counted as scanned: what a step checking depth outside the scan needs.
func (s *Service) confirmedTipNow(ctx context.Context, n chain.Network, c *chain.Client) (tip uint64, ok bool, err error) {
	head, err := c.BlockNumber(ctx)
	if err != nil {
		return 0, false, err
	}
	return s.confirmedTip(ctx, n, c, head, head)
}

// findFork checks that the last scanned block is still on the chain. When it is not, it walks
// back through the kept hashes to the newest block that still is: the fork point.
func (s *Service) findFork(ctx context.Context, q *store.Queries, c *chain.Client, chainID int64, last uint64) (uint64, bool, error) {
	// A block the node does not have is no proof that it left the chain: the node may be behind
	// (syncing, or a provider's slow node). Only another hash at a height proves a reorg.
	changed := false
	for n, depth := last, uint64(0); ; n, depth = n-1, depth+1 {
		stored, err := q.BlockHash(ctx, chainID, n)
		if err != nil {
			return 0, false, err
		}
		if stored == "" {
			// Nothing kept this far back: rescan from here.
			if depth > 0 && !changed {
				return 0, false, nodeBehind(chainID, last)
			}
			return n, depth > 0, nil
		}
		h, err := c.Header(ctx, new(big.Int).SetUint64(n))
		switch {
		case errors.Is(err, ethereum.NotFound):
		case err != nil:
			return 0, false, err
		case h.Hash().Hex() == stored:
			if depth > 0 && !changed {
				return 0, false, nodeBehind(chainID, last)
			}
			return n, changed, nil
		default:
			changed = true
		}
		if n == 0 || depth >= s.cfg.KeepBlocks {
			if !changed {
				return 0, false, nodeBehind(chainID, last)
			}
			return n, true, nil
		}
	}
}

func nodeBehind(chainID int64, scanned uint64) error {
	return fmt.Errorf("%w: chain %d: the RPC endpoint does not have block %d, which was scanned already; waiting for it to catch up",
		ErrNodeBehind, chainID, scanned)
}

// lockUnmoved locks the chain's cursor and checks that neither it nor the newest block kept
// (tip) moved since the pass read them (ErrRaced). An overlapping pass (see rollback) may have
// rolled back and read another branch up to the same cursor: this pass's blocks follow the
// one it kept, not the new branch's.
func lockUnmoved(ctx context.Context, q *store.Queries, cur store.Cursor, tip string) error {
	locked, err := q.GetCursor(ctx, cur.ChainID)
	if err != nil {
		return err
	}
	if locked.NextBlock != cur.NextBlock || locked.GenesisHash != cur.GenesisHash {
		return ErrRaced
	}
	if kept, err := keptTip(ctx, q, cur.ChainID, cur.NextBlock); err != nil {
		return err
	} else if kept != tip {
		return ErrRaced
	}
	return nil
}

// keptTip is the hash kept for the newest block read below next ("" when none).
func keptTip(ctx context.Context, q *store.Queries, chainID int64, next uint64) (string, error) {
	if next == 0 {
		return "", nil
	}
	return q.BlockHash(ctx, chainID, next-1)
}

// rollBackAReorg compares the newest blocks read (below next; tip is the hash kept for
// next-1) with the chain and, when they left it, rolls back to the fork; rolledBack ends the
// pass.
func (s *Service) rollBackAReorg(ctx context.Context, q *store.Queries, c *chain.Client, chainID int64, next uint64,
	tip string) (rolledBack bool, err error) {
	if next == 0 {
		return false, nil
	}
	fork, reorged, err := s.findFork(ctx, q, c, chainID, next-1)
	if err != nil || !reorged {
		return false, err
	}
	if s.crash != nil {
		s.crash(stepForkFound)
	}
	return true, s.rollback(ctx, c, chainID, next, tip, fork)
}

// rollback forgets the blocks after the fork point: unconfirmed deposits in them are orphaned,
// those already past the confirmation depth are marked reorged (reorg.go), and the scan
// resumes right after the fork. next and tip are the cursor and the hash kept for block next-1
// that the pass found gone; anything else now is another pass's work (ErrRaced).
func (s *Service) rollback(ctx context.Context, c *chain.Client, chainID int64, next uint64, tip string, fork uint64) error {
	var marked []reorged
	sweeps, err := s.sweepsOffChain(ctx, c, chainID, fork) // sweepleft.go
	if err != nil {
		return err
	}
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		cur, err := q.GetCursor(ctx, chainID)
		if err != nil {
			return err
		}
		if cur.NextBlock != next {
			return ErrRaced
		}
		// A pass that overlapped this one (a scan River's rescuer gave to another worker) may
		// have rolled back and read the new branch up to the same cursor: the blocks above the
		// fork are then the chain's, and so are their deposits.
		if kept, err := keptTip(ctx, q, chainID, next); err != nil {
			return err
		} else if kept != tip {
			return ErrRaced
		}
		if err := recordMoved(ctx, q, sweeps.moved); err != nil {
			return err
		}
		if marked, err = s.markReorged(ctx, tx, chainID, fork, sweeps.offChain); err != nil {
			return err
		}
		orphaned, err := q.OrphanDepositsFrom(ctx, chainID, fork+1) // Orphan: CONFIRMING → ORPHANED
		if err != nil {
			return err
		}
		if err := q.DeleteBlocksFrom(ctx, chainID, fork+1); err != nil {
			return err
		}
		s.log.Warn("chain reorganised: rolled back", "chain", chainID, "fork_block", fork, "blocks", next-fork-1, "orphaned_deposits", orphaned,
			"reorged_deposits", len(marked))
		cur.NextBlock = fork + 1
		return q.PutCursor(ctx, cur)
	})
	if err == nil {
		s.reportReorged(ctx, chainID, marked)
	}
	return err
}

// read fetches blocks from..to and the transfers in them to deposit addresses: top-level
// native transfers, token Transfer logs and, when the network traces them, internal native
// transfers. The recipients the watched set's filter lets through are checked exactly in one
// query for the whole window. It fails with ErrRaced when the blocks do not link up (the chain
// reorganised while being read).
func (s *Service) read(ctx context.Context, n chain.Network, c *chain.Client, from, to uint64) (readWindow, error) {
	q := store.New(s.pool)
	logs, err := tokenLogs(ctx, n, c, from, to)
	if err != nil {
		return readWindow{}, err
	}
	prev, err := q.BlockHash(ctx, n.ChainID, from-1)
	if err != nil {
		return readWindow{}, err
	}
	blocks := make([]store.BlockRef, 0, to-from+1)
	read := make([]readBlock, 0, to-from+1)
	byNumber := map[uint64]*types.Block{}
	var recipients []common.Address
	for num := from; num <= to; num++ {
		b, err := c.Block(ctx, num)
		if err != nil {
			return readWindow{}, err
		}
		if prev != "" && b.ParentHash().Hex() != prev {
			return readWindow{}, ErrRaced
		}
		prev = b.Hash().Hex()
		byNumber[num] = b
		blocks = append(blocks, store.BlockRef{Number: num, Hash: b.Hash().Hex(), ParentHash: b.ParentHash().Hex()})
		rb := readBlock{block: b}
		if n.TraceInternalTransfers && len(b.Transactions()) > 0 {
			if rb.traces, err = traceBlock(ctx, n, c, b); err != nil {
				return readWindow{}, err
			}
		}
		recipients = rb.recipients(recipients)
		read = append(read, rb)
	}
	for _, l := range logs {
		if transfer, ok := transferOf(l); ok {
			recipients = append(recipients, transfer.to)
		}
	}
	owners, err := s.watched.owners(ctx, q, recipients)
	if err != nil {
		return readWindow{}, err
	}
	signer := types.LatestSignerForChainID(big.NewInt(n.ChainID))
	own := s.serviceWallets()
	var found []domain.Deposit
	for _, rb := range read {
		native, err := s.nativeDeposits(ctx, q, n, c, rb.block, signer, own, owners)
		if err != nil {
			return readWindow{}, err
		}
		found = append(found, native...)
		internal, err := s.internalDeposits(ctx, q, n, c, rb, signer, own, owners)
		if err != nil {
			return readWindow{}, err
		}
		found = append(found, internal...)
	}
	for _, l := range logs {
		transfer, ok := transferOf(l)
		if !ok {
			continue
		}
		b := byNumber[l.BlockNumber]
		if b == nil || b.Hash() != l.BlockHash {
			return readWindow{}, ErrRaced
		}
		owner, watched := owners[transfer.to]
		if !watched {
			continue
		}
		var token chain.Token
		for _, t := range n.Tokens {
			if t.ContractAddress == l.Address {
				token = t
			}
		}
		d, err := s.newDeposit(ctx, q, n, b, l.TxHash, logIndex(l.Index), owner, transfer.to, token.Symbol, token.Decimals, token.ContractAddress, transfer.amount)
		if err != nil {
			return readWindow{}, err
		}
		found = append(found, d)
	}
	return readWindow{refs: blocks, blocks: byNumber, found: found}, nil
}

// readWindow is what a pass read of its blocks.
type readWindow struct {
	refs []store.BlockRef // the blocks' numbers and hashes, in order: what the pass keeps
	// blocks are the blocks themselves, by number: the sweep check reads its transactions in
	// them (sweepsLeftAhead) rather than fetch them again.
	blocks map[uint64]*types.Block
	found  []domain.Deposit // the transfers to deposit addresses
}

// readBlock is a block read by a scan, with its call traces when the network traces internal
// transfers.
type readBlock struct {
	block  *types.Block
	traces []chain.TxTrace
}

// recipients appends the addresses the block pays native value to: top-level and internal.
func (rb readBlock) recipients(out []common.Address) []common.Address {
	for _, tx := range rb.block.Transactions() {
		if to := tx.To(); to != nil && tx.Value().Sign() > 0 {
			out = append(out, *to)
		}
	}
	for _, tr := range rb.traces {
		for _, t := range chain.InternalTransfers(tr.Root) {
			if !t.Reverted {
				out = append(out, t.To)
			}
		}
	}
	return out
}

// tokenTransfer is a token Transfer log's recipient and amount.
type tokenTransfer struct {
	to     common.Address
	amount *big.Int
}

// transferOf decodes a Transfer log of a positive amount.
func transferOf(l types.Log) (tokenTransfer, bool) {
	if l.Removed || len(l.Topics) != 3 || l.Topics[0] != transferTopic() || len(l.Data) != 32 {
		return tokenTransfer{}, false
	}
	amount := new(big.Int).SetBytes(l.Data)
	return tokenTransfer{to: common.BytesToAddress(l.Topics[2].Bytes()), amount: amount}, amount.Sign() > 0
}

// tokenLogs fetches the Transfer logs of the network's tokens in blocks from..to.
func tokenLogs(ctx context.Context, n chain.Network, c *chain.Client, from, to uint64) ([]types.Log, error) {
	if len(n.Tokens) == 0 {
		return nil, nil
	}
	contracts := make([]common.Address, len(n.Tokens))
	for i, t := range n.Tokens {
		contracts[i] = t.ContractAddress
	}
	return c.Logs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
		Addresses: contracts, Topics: [][]common.Hash{{transferTopic()}}})
}

// nativeDeposits are a block's successful top-level native transfers to deposit addresses,
// except gas top-ups from Coffer's own wallets.
func (s *Service) nativeDeposits(ctx context.Context, q *store.Queries, n chain.Network, c *chain.Client, b *types.Block,
	signer types.Signer, own map[common.Address]bool, owners map[common.Address]store.DepositAddress) ([]domain.Deposit, error) {
	var found []domain.Deposit
	for _, tx := range b.Transactions() {
		to := tx.To()
		if to == nil || tx.Value().Sign() <= 0 {
			continue
		}
		owner, watched := owners[*to]
		if !watched {
			continue
		}
		if sender, err := types.Sender(signer, tx); err == nil && own[sender] {
			continue // a gas top-up from Coffer's own wallet
		}
		r, err := c.Receipt(ctx, tx.Hash())
		if err != nil {
			return nil, err
		}
		if r.Status != types.ReceiptStatusSuccessful {
			continue
		}
		d, err := s.newDeposit(ctx, q, n, b, tx.Hash(), -1, owner, *to, n.NativeSymbol, n.NativeDecimals, common.Address{}, tx.Value())
		if err != nil {
			return nil, err
		}
		found = append(found, d)
	}
	return found, nil
}

// newDeposit builds the record of a transfer to a deposit address (of owner), linked to the user's live
// deposit session that most recently handed out the address for this chain and currency (none:
// a direct send, null session fields), or marked a treasury payment. The moment is the block's
// time, or now if that is earlier (dev chains can run ahead of the clock).
func (s *Service) newDeposit(ctx context.Context, q *store.Queries, n chain.Network, b *types.Block, txHash common.Hash,
	logIndex int64, owner store.DepositAddress, to common.Address, symbol string, decimals int32, contract common.Address, amount *big.Int) (domain.Deposit, error) {
	d := domain.Deposit{OperatorID: owner.OperatorID, ExternalUserID: owner.ExternalUserID, ChainID: n.ChainID, TxHash: txHash.Hex(),
		LogIndex: logIndex, BlockNumber: b.NumberU64(), BlockHash: b.Hash().Hex(), Address: to.Hex(), AddressIndex: owner.Index,
		Currency: symbol, Decimals: decimals, GrossAmount: amount, Status: domain.DepositConfirming,
		IdempotencyKey: IdempotencyKey(n.ChainID, txHash, logIndex)}
	if contract != (common.Address{}) {
		d.ContractAddress = contract.Hex()
	}
	at := blockTime(b.Time())
	if now := time.Now(); now.Before(at) {
		at = now
	}
	if owner.Treasury {
		d.Treasury = true
		return d, nil
	}
	sess, err := q.AttributedSession(ctx, owner.OperatorID, owner.ExternalUserID, n.ChainID, symbol, at)
	if err == nil {
		d.SessionID = sess.ID
	} else if !errors.Is(err, store.ErrNotFound) {
		return d, err
	}
	return d, nil
}
