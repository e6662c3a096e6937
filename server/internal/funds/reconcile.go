package funds

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Holding is one service wallet's balance counted by a reconciliation.
type Holding struct {
	Role    string // "bankroll" or "hot wallet"
	Address common.Address
	Amount  decimal.Decimal
}

// Line is the reconciliation of one asset of one chain: what the service holds on-chain
// against what it owes operators. Surplus = Holdings - Owed; OK means Surplus >= 0.
type Line struct {
	ChainID   int64
	Currency  string
	Holdings  decimal.Decimal
	ByWallet  []Holding
	Available decimal.Decimal
	Reserved  decimal.Decimal
	// PaidOut is the part of Reserved already sent by a payout on the chain at the block the
	// holdings were read at, whether or not the payout job has recorded it mined yet: it is no
	// longer in the hot wallet, so it is not owed from the holdings.
	PaidOut decimal.Decimal
	// Shortfall is what operators whose available went below zero (a reorg reversed a credit
	// they had used) owe back. It is not counted in Available: a debt is not cash, so it never
	// offsets what the service owes the other operators.
	Shortfall decimal.Decimal
	Owed      decimal.Decimal
	Surplus   decimal.Decimal
	OK        bool
	// Unconfigured: operators are owed this asset but its chain or token is no longer in the
	// chains file, so its holdings cannot be read (Holdings is zero). Amounts are in token
	// units with the decimals its deposits or withdrawals were recorded with (in the smallest
	// unit when none was).
	Unconfigured bool
}

// Reconciler reads the service wallets' balances.
type Reconciler struct {
	Ledger  *Ledger
	Clients map[int64]*chain.Client
	// HotWallet pays payouts on every chain.
	HotWallet common.Address
	// GasTank pays sweeps' gas on every chain; the periodic reconciliation reports its native
	// balance (coffer_wallet_balance{wallet="gas_tank"}).
	GasTank common.Address
}

// Reconcile checks, for every configured chain and asset (one chain when chainID is not 0),
// that the service's on-chain holdings (the chain's bankroll, which swept deposits reach,
// and the hot wallet, which pays payouts) cover the sum of all operators' available and
// reserved funds, and says by how much. A chain that cannot be read answers UNAVAILABLE.
func (r *Reconciler) Reconcile(ctx context.Context, chainID int64) ([]Line, error) {
	rep, err := r.ReconcileEach(ctx, chainID)
	if err != nil {
		return nil, err
	}
	if len(rep.Unread) > 0 {
		return nil, rep.Unread[0].Err
	}
	return rep.Lines, nil
}

// Report is a reconciliation that went on past the chains it could not read.
type Report struct {
	// Lines are those of every chain that was read, and of unconfigured assets.
	Lines []Line
	// Unread are the chains whose holdings could not be read, in chain order. Their lines are
	// missing: nothing proves them covered.
	Unread []Unread
}

// Unread is a chain a reconciliation could not read.
type Unread struct {
	ChainID int64
	// Err is UNAVAILABLE, naming the chain (and the wallet).
	Err *fault.Error
}

// Short reports whether a line that was read is not covered: the books are short whatever
// the unread chains hold.
func (rep Report) Short() bool {
	for _, l := range rep.Lines {
		if !l.OK {
			return true
		}
	}
	return false
}

// Covered reports whether the books are proven covered: every chain read, every line OK.
func (rep Report) Covered() bool { return len(rep.Unread) == 0 && !rep.Short() }

// ReconcileEach is Reconcile going on past a chain it cannot read (Report.Unread), so that a
// short line elsewhere is still reported. err is what stopped it altogether: the database
// (INTERNAL or UNAVAILABLE), or chainID not configured (INVALID_ARGUMENT).
func (r *Reconciler) ReconcileEach(ctx context.Context, chainID int64) (Report, error) {
	// The heads first, then the books: a payout that left the hot wallet at or below a head
	// was stored before the books' snapshot, so the snapshot has it in flight (paidOutAt).
	// Read the other way round, one signed and mined between the two reads was in neither.
	heads := r.heads(ctx, chainID)
	totals, inFlight, err := store.New(r.Ledger.pool).FundBooks(ctx)
	if err != nil {
		return Report{}, fault.Wrap(err, "sum funds")
	}
	owed := map[string]store.FundTotal{}
	for _, t := range totals {
		owed[fmt.Sprintf("%d/%s", t.ChainID, t.Currency)] = t
	}
	var rep Report
	for _, n := range r.Ledger.chains.Networks() {
		if chainID != 0 && n.ChainID != chainID {
			continue
		}
		lines, err := r.chainLines(ctx, n, owed, inFlight, heads[n.ChainID])
		if err != nil {
			rep.Unread = append(rep.Unread, Unread{ChainID: n.ChainID, Err: err})
			continue
		}
		rep.Lines = append(rep.Lines, lines...)
	}
	unconfigured, err := r.unconfigured(ctx, totals, owed, inFlight, chainID)
	if err != nil {
		return Report{}, err
	}
	rep.Lines = append(rep.Lines, unconfigured...)
	if chainID != 0 && len(rep.Lines) == 0 && len(rep.Unread) == 0 {
		return Report{}, fault.Invalid("chainId", "chain %d is not configured", chainID)
	}
	return rep, nil
}

// headRead is a chain's head block as the reconciliation read it before the books, or why not.
type headRead struct {
	at  uint64
	err *fault.Error
}

// heads reads the head block of every chain reconciled (chainID, or all when 0).
func (r *Reconciler) heads(ctx context.Context, chainID int64) map[int64]headRead {
	out := map[int64]headRead{}
	for _, n := range r.Ledger.chains.Networks() {
		if chainID != 0 && n.ChainID != chainID {
			continue
		}
		c := r.Clients[n.ChainID]
		if c == nil {
			out[n.ChainID] = headRead{err: fault.New(fault.Unavailable, "chain %d has no client", n.ChainID)}
			continue
		}
		at, err := c.BlockNumber(ctx)
		if err != nil {
			e := fault.New(fault.Unavailable, "chain %d: its head block: try again shortly", n.ChainID)
			e.Cause = err
			out[n.ChainID] = headRead{err: e}
			continue
		}
		out[n.ChainID] = headRead{at: at}
	}
	return out
}

// chainLines reads a chain's holdings of every asset it configures, all at head (read before
// the books), and sets them against owed less the payouts in flight that block already holds.
// A wallet (or head) it cannot read is UNAVAILABLE naming the chain. Either way the chain's
// assets are checked off owed: they are configured, so an unread one must not be reported as
// unconfigured.
func (r *Reconciler) chainLines(ctx context.Context, n chain.Network, owed map[string]store.FundTotal,
	inFlight []store.PayoutInFlight, head headRead) ([]Line, *fault.Error) {
	assets := make([]chain.Asset, 0, 1+len(n.Tokens))
	assets = append(assets, chain.Asset{Symbol: n.NativeSymbol, Decimals: n.NativeDecimals, Native: true})
	for _, t := range n.Tokens {
		assets = append(assets, chain.Asset{Symbol: t.Symbol, Decimals: t.Decimals, Contract: t.ContractAddress})
	}
	owes := make([]store.FundTotal, len(assets))
	for i, a := range assets {
		key := fmt.Sprintf("%d/%s", n.ChainID, a.Symbol)
		owes[i] = owed[key]
		delete(owed, key)
	}
	if head.err != nil {
		return nil, head.err
	}
	c, at := r.Clients[n.ChainID], head.at
	paid, ferr := paidOutAt(ctx, c, n.ChainID, at, inFlight)
	if ferr != nil {
		return nil, ferr
	}
	wallets := []Holding{{Role: "hot wallet", Address: r.HotWallet}}
	if n.BankrollAddress != (common.Address{}) && n.BankrollAddress != r.HotWallet {
		wallets = append(wallets, Holding{Role: "bankroll", Address: n.BankrollAddress})
	}
	out := make([]Line, 0, len(assets))
	for i, a := range assets {
		line := Line{ChainID: n.ChainID, Currency: a.Symbol}
		for _, w := range wallets {
			var bal *big.Int
			var err error
			if a.Native {
				bal, err = c.BalanceAt(ctx, w.Address, at)
			} else {
				bal, err = c.TokenBalanceAt(ctx, a.Contract, w.Address, at)
			}
			if err != nil {
				e := fault.New(fault.Unavailable, "chain %d: balance of the %s %s: try again shortly", n.ChainID, w.Role, w.Address.Hex())
				e.Cause = err
				return nil, e
			}
			w.Amount = rates.FromUnits(bal, a.Decimals)
			line.ByWallet = append(line.ByWallet, w)
			line.Holdings = line.Holdings.Add(w.Amount)
		}
		line.owe(owes[i], paid[a.Symbol], a.Decimals)
		out = append(out, line)
	}
	return out, nil
}

// paidOutAt sums, per currency, the payouts in flight on a chain that left the hot wallet at or
// below block at: recorded mined there, or with an attempt that succeeded there, which the
// payout job may not have recorded yet (it looks again at its next poll). A node that cannot
// tell (it is still indexing transactions) is UNAVAILABLE: a payout it hides would read as a
// shortfall.
func paidOutAt(ctx context.Context, c *chain.Client, chainID int64, at uint64, inFlight []store.PayoutInFlight) (map[string]*big.Int,
	*fault.Error) {
	paid := map[string]*big.Int{}
	for _, p := range inFlight {
		if p.ChainID != chainID {
			continue
		}
		left := p.Mined != 0 && p.Mined <= at
		for _, h := range p.Hashes {
			if left {
				break
			}
			rc, err := c.Receipt(ctx, common.HexToHash(h))
			if errors.Is(err, ethereum.NotFound) && !errors.Is(err, chain.ErrIndexing) {
				continue
			}
			if err != nil {
				e := fault.New(fault.Unavailable, "chain %d: the receipt of payout %s: try again shortly", chainID, h)
				e.Cause = err
				return nil, e
			}
			left = rc.Status == types.ReceiptStatusSuccessful && rc.BlockNumber.Uint64() <= at
		}
		if !left {
			continue
		}
		if paid[p.Currency] == nil {
			paid[p.Currency] = new(big.Int)
		}
		paid[p.Currency].Add(paid[p.Currency], p.Amount)
	}
	return paid, nil
}

// recordedPaidOut sums the payouts in flight of one asset that the payout job recorded mined
// (an asset no longer configured, whose chain is not read).
func recordedPaidOut(inFlight []store.PayoutInFlight, chainID int64, currency string) *big.Int {
	sum := new(big.Int)
	for _, p := range inFlight {
		if p.ChainID == chainID && p.Currency == currency && p.Mined != 0 {
			sum.Add(sum, p.Amount)
		}
	}
	return sum
}

// owe fills in what operators are owed (t, in the smallest unit; zero when nothing was ever
// held) less paidOut (nil: nothing) against the line's holdings.
func (line *Line) owe(t store.FundTotal, paidOut *big.Int, decimals int32) {
	if paidOut == nil {
		paidOut = new(big.Int)
	}
	line.Available = rates.FromUnits(t.Available, decimals)
	line.Reserved = rates.FromUnits(t.Reserved, decimals)
	line.PaidOut = rates.FromUnits(paidOut, decimals)
	line.Shortfall = rates.FromUnits(t.Shortfall, decimals)
	line.Owed = line.Available.Add(line.Reserved).Sub(line.PaidOut)
	line.Surplus = line.Holdings.Sub(line.Owed)
	line.OK = !line.Surplus.IsNegative()
}

// unconfigured is a line for every asset operators are owed (or owe) whose chain or token is
// no longer configured (left, in totals order, in unchecked): a reconciliation that skipped it
// would answer OK while nothing shows the service still holds that money. With no holdings to
// read, such a line is not OK while anything is owed, until the service team configures the
// asset again (adjustments, payouts and this check all need it).
func (r *Reconciler) unconfigured(ctx context.Context, totals []store.FundTotal, unchecked map[string]store.FundTotal,
	inFlight []store.PayoutInFlight, chainID int64) ([]Line, error) {
	var out []Line
	for _, t := range totals {
		if _, ok := unchecked[fmt.Sprintf("%d/%s", t.ChainID, t.Currency)]; !ok || chainID != 0 && t.ChainID != chainID {
			continue
		}
		if t.Available.Sign() == 0 && t.Reserved.Sign() == 0 && t.Shortfall.Sign() == 0 {
			continue // nothing owed either way: nothing to prove
		}
		decimals, _, err := store.New(r.Ledger.pool).RecordedDecimals(ctx, t.ChainID, t.Currency)
		if err != nil {
			return nil, fault.Wrap(err, "decimals of %s on chain %d", t.Currency, t.ChainID)
		}
		line := Line{ChainID: t.ChainID, Currency: t.Currency, Unconfigured: true}
		line.owe(t, recordedPaidOut(inFlight, t.ChainID, t.Currency), max(decimals, 0))
		out = append(out, line)
	}
	return out, nil
}

// ReconcileArgs is the periodic reconciliation: it keeps the coffer_funds_surplus,
// coffer_reconcile_chain_unread and coffer_deposits_reorged_unresolved metrics current and
// logs an error for every line whose holdings fall short and every chain it cannot read.
type ReconcileArgs struct{}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return "funds.reconcile" }

// InsertOpts keeps one reconciliation queued or running.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 1, UniqueOpts: jobs.OnePerArgs()}
}

// ReconcileWorker works ReconcileArgs.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]

	Reconciler *Reconciler
	Log        *slog.Logger
}

// Work implements river.Worker. A chain it cannot read stops nothing: every other chain's
// lines and gas tank are still published (an alert on one chain's shortfall must not go blind
// while another chain's node is down), and the unread chain is logged at ERROR and marked
// (coffer_reconcile_chain_unread 1).
func (w *ReconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	if err := ReportUnresolvedReorgs(ctx, w.Reconciler.Ledger.pool, w.Reconciler.Ledger.chains); err != nil {
		return err
	}
	if err := CheckThresholds(ctx, w.Reconciler.Ledger, w.Reconciler.Clients, w.Log); err != nil {
		return err
	}
	rep, err := w.Reconciler.ReconcileEach(ctx, 0)
	if err != nil {
		return err
	}
	w.publishLines(ctx, rep.Lines)
	w.markUnread(ctx, rep.Unread)
	w.Reconciler.reportGasTanks(ctx, w.Log)
	return nil
}

// publishLines sets each line's surplus and wallet balances, and logs an error for every line
// whose holdings fall short.
func (w *ReconcileWorker) publishLines(ctx context.Context, lines []Line) {
	for _, l := range lines {
		surplus, _ := l.Surplus.Float64()
		metrics.FundsSurplus.Set(surplus, strconv.FormatInt(l.ChainID, 10), l.Currency)
		for _, h := range l.ByWallet {
			amount, _ := h.Amount.Float64()
			metrics.WalletBalance.Set(amount, strconv.FormatInt(l.ChainID, 10), l.Currency, strings.ReplaceAll(h.Role, " ", "_"))
		}
		switch {
		case !l.OK && l.Unconfigured:
			w.Log.ErrorContext(ctx, "reconciliation: operators are owed an asset that is no longer configured; its holdings cannot be "+
				"read (configure it again)", "chain", l.ChainID, "currency", l.Currency, "owed", l.Owed)
		case !l.OK:
			w.Log.ErrorContext(ctx, "reconciliation: on-chain holdings do not cover operators' funds", "chain", l.ChainID,
				"currency", l.Currency, "holdings", l.Holdings, "owed", l.Owed, "short", l.Surplus.Neg())
		}
	}
}

// markUnread sets coffer_reconcile_chain_unread of every configured chain (1: its holdings
// could not be read, so its lines are missing and nothing proves them covered) and logs each
// unread one at ERROR.
func (w *ReconcileWorker) markUnread(ctx context.Context, unread []Unread) {
	failed := map[int64]*fault.Error{}
	for _, u := range unread {
		failed[u.ChainID] = u.Err
	}
	for _, n := range w.Reconciler.Ledger.chains.Networks() {
		err, isUnread := failed[n.ChainID]
		metrics.ReconcileChainUnread.Set(map[bool]float64{false: 0, true: 1}[isUnread], strconv.FormatInt(n.ChainID, 10))
		if isUnread {
			w.Log.ErrorContext(ctx, "reconciliation: a chain's holdings cannot be read; its lines are not checked (nothing proves "+
				"operators' funds on it covered) until its node answers", "chain", n.ChainID, "error", err, "cause", err.Cause)
		}
	}
}

// reportGasTanks sets the gas tank's native balance on every chain it can read.
func (r *Reconciler) reportGasTanks(ctx context.Context, log *slog.Logger) {
	if r.GasTank == (common.Address{}) {
		return
	}
	for _, n := range r.Ledger.chains.Networks() {
		c := r.Clients[n.ChainID]
		if c == nil {
			continue
		}
		bal, err := c.Balance(ctx, r.GasTank)
		if err != nil {
			log.WarnContext(ctx, "reconciliation: cannot read the gas tank's balance", "chain", n.ChainID, "error", err)
			continue
		}
		amount, _ := rates.FromUnits(bal, n.NativeDecimals).Float64()
		metrics.WalletBalance.Set(amount, strconv.FormatInt(n.ChainID, 10), n.NativeSymbol, "gas_tank")
	}
}

// Periodic is the reconciliation's schedule.
func (w *ReconcileWorker) Periodic(every time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})
}
