// Package funds keeps each operator's money apart: per operator (a sub-operator has its own)
// and per (chain, asset), funds are credited by its users' swept deposits (the net amount) and
// by payments to its treasury address, reserved when a payout is queued, settled when the
// payout confirms, released when a payout is abandoned before it was signed, and adjusted only
// by audited service-team entries. Every movement is a fund_entries row written in the same
// database transaction as the state change it accounts for, and no debit can take the balances
// below zero, so no payout path can pay more than the operator holds, whatever runs
// concurrently. The one exception is a reorg deeper than the confirmation depth (reorg.go): a
// credited deposit's credit is reversed even if the operator used it, leaving a shortfall.
//
// Reconcile proves the books against the chain: for every chain and asset, what the service
// holds on-chain (bankroll and hot wallet) must cover every operator's available and reserved
// funds.
package funds

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Ledger is the operator-funds service.
type Ledger struct {
	pool   *pgxpool.Pool
	chains *chain.Registry
}

// New returns the ledger.
func New(pool *pgxpool.Pool, chains *chain.Registry) *Ledger {
	return &Ledger{pool: pool, chains: chains}
}

// Balance is an operator's funds in one asset, in token units.
type Balance struct {
	OperatorID string
	ChainID    int64
	Currency   string
	Decimals   int32
	Available  decimal.Decimal
	Reserved   decimal.Decimal
}

func (l *Ledger) asset(chainID int64, currency string) (chain.Asset, error) {
	n, ok := l.chains.Network(chainID)
	if !ok {
		return chain.Asset{}, fault.Invalid("chainId", "chain %d is not configured", chainID)
	}
	a, ok := n.Asset(currency)
	if !ok {
		return chain.Asset{}, fault.Invalid("currency", "%s is not an asset of chain %d", currency, chainID)
	}
	return a, nil
}

// balance reads funds in token units: with the asset's configured decimals, or, for an asset
// no longer configured, those its deposits or withdrawals were recorded with (the smallest
// unit, decimals 0, when none was), so that 40 USDT is never shown as 40000000.
func (l *Ledger) balance(ctx context.Context, f domain.Funds) (Balance, error) {
	b := Balance{OperatorID: f.OperatorID, ChainID: f.ChainID, Currency: f.Currency}
	if a, err := l.asset(f.ChainID, f.Currency); err == nil {
		b.Decimals = a.Decimals
	} else {
		d, _, err := store.New(l.pool).RecordedDecimals(ctx, f.ChainID, f.Currency)
		if err != nil {
			return b, fault.Wrap(err, "decimals of %s on chain %d", f.Currency, f.ChainID)
		}
		b.Decimals = max(d, 0)
	}
	b.Available, b.Reserved = rates.FromUnits(f.Available, b.Decimals), rates.FromUnits(f.Reserved, b.Decimals)
	return b, nil
}

// Balances lists the funds of the operators in scope. Every configured asset of every chain is
// listed for each operator named by a limited scope, zero when it never held any, so an
// operator sees where it can be funded; AllOperators lists what is held.
func (l *Ledger) Balances(ctx context.Context, scope domain.Scope) ([]Balance, error) {
	_, operatorIDs := scope.Filter()
	rows, err := store.New(l.pool).ListFunds(ctx, auth.OperatorIDs(scope))
	if err != nil {
		return nil, fault.Wrap(err, "list funds")
	}
	held := map[string]domain.Funds{}
	for _, f := range rows {
		held[f.OperatorID+"/"+strconv.FormatInt(f.ChainID, 10)+"/"+f.Currency] = f
	}
	var out []Balance
	for _, op := range operatorIDs {
		for _, n := range l.chains.Networks() {
			symbols := []string{n.NativeSymbol}
			for _, t := range n.Tokens {
				symbols = append(symbols, t.Symbol)
			}
			for _, sym := range symbols {
				key := op + "/" + strconv.FormatInt(n.ChainID, 10) + "/" + sym
				f, ok := held[key]
				if !ok {
					f = domain.Funds{OperatorID: op, ChainID: n.ChainID, Currency: sym, Available: new(big.Int), Reserved: new(big.Int)}
				}
				delete(held, key)
				b, err := l.balance(ctx, f)
				if err != nil {
					return nil, err
				}
				out = append(out, b)
			}
		}
	}
	for _, f := range rows { // assets no longer configured, and every operator when the scope is all of them
		if _, ok := held[f.OperatorID+"/"+strconv.FormatInt(f.ChainID, 10)+"/"+f.Currency]; ok {
			b, err := l.balance(ctx, f)
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// OwnBalances lists an operator's funds as the operator asks for them: its own, or, naming
// operatorID, those of one of its sub-operators (NOT_FOUND for any other operator). tree is the
// caller's scope with its sub-operators (auth.SubOperators).
func (l *Ledger) OwnBalances(ctx context.Context, tree domain.Scope, callerID, operatorID string) ([]Balance, error) {
	target := callerID
	if operatorID != "" {
		target = strings.ToLower(operatorID)
	}
	scope, ok := tree.Narrow(target)
	if !ok {
		return nil, fault.New(fault.NotFound, "operator %s is not one of your sub-operators", operatorID)
	}
	return l.Balances(ctx, scope)
}

// OperatorFunds is one operator's funds.
type OperatorFunds struct {
	Operator domain.Operator
	Balances []Balance
}

// ByOperator lists the funds of every operator in scope by operator name, or those of the one
// operator asked for (NOT_FOUND when it does not exist or is outside the scope).
func (l *Ledger) ByOperator(ctx context.Context, scope domain.Scope, operatorID string) ([]OperatorFunds, error) {
	scope, ok := scope.Narrow(strings.ToLower(operatorID))
	if !ok {
		return nil, fault.New(fault.NotFound, "operator not found")
	}
	q := store.New(l.pool)
	var ops []domain.Operator
	all, ids := scope.Filter()
	if all {
		list, err := q.ListOperators(ctx, "")
		if err != nil {
			return nil, fault.Wrap(err, "list operators")
		}
		ops = list
	}
	for _, id := range ids {
		op, err := q.GetOperator(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fault.New(fault.NotFound, "operator not found")
		} else if err != nil {
			return nil, fault.Wrap(err, "get operator")
		}
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b domain.Operator) int { return strings.Compare(a.Name, b.Name) })
	out := make([]OperatorFunds, len(ops))
	for i, op := range ops {
		list, err := l.Balances(ctx, domain.Operators(op.ID))
		if err != nil {
			return nil, err
		}
		out[i] = OperatorFunds{Operator: op, Balances: list}
	}
	return out, nil
}

// Credit adds a swept deposit's net amount (or a treasury payment) to its operator's funds,
// in the caller's transaction. A deposit is credited once (the database refuses a second entry).
func Credit(ctx context.Context, tx pgx.Tx, d domain.Deposit, amount *big.Int) error {
	kind := domain.FundDeposit
	if d.Treasury {
		kind = domain.FundTreasury
	}
	_, ok, err := store.New(tx).MoveFunds(ctx, domain.FundEntry{OperatorID: d.OperatorID, ChainID: d.ChainID, Currency: d.Currency,
		Kind: kind, AvailableDelta: amount, ReservedDelta: new(big.Int), Ref: fmt.Sprintf("deposit:%d", d.ID), Actor: domain.System})
	if err == nil && !ok {
		err = fmt.Errorf("funds: crediting deposit %d refused", d.ID)
	}
	return err
}

// Shortfall is a payout its operator cannot afford: what it needs and what is available.
//
//nolint:errname // "shortfall" is the domain word; withdrawal and deposit match on *funds.Shortfall
type Shortfall struct {
	OperatorID string
	ChainID    int64
	Currency   string
	Decimals   int32
	Needed     *big.Int
	Available  *big.Int
}

func (s *Shortfall) Error() string {
	missing := new(big.Int).Sub(s.Needed, s.Available)
	return fmt.Sprintf("the operator's available funds on chain %d are %s %s; the payout needs %s %[3]s (short by %[5]s %[3]s)", s.ChainID,
		rates.FormatUnits(s.Available, s.Decimals), s.Currency, rates.FormatUnits(s.Needed, s.Decimals),
		rates.FormatUnits(missing, s.Decimals))
}

// Payout identifies a payout's money: whose, which asset, how much (smallest unit).
type Payout struct {
	WithdrawalID string
	OperatorID   string
	ChainID      int64
	Currency     string
	Decimals     int32
	Amount       *big.Int
	Actor        domain.Actor
}

func (p Payout) entry(kind domain.FundKind, avail, reserved *big.Int, note string) domain.FundEntry {
	return domain.FundEntry{OperatorID: p.OperatorID, ChainID: p.ChainID, Currency: p.Currency, Kind: kind, AvailableDelta: avail,
		ReservedDelta: reserved, Ref: "withdrawal:" + p.WithdrawalID, Actor: p.Actor, Note: note}
}

// Reserve moves a payout's amount from available to reserved in the caller's transaction (the
// one that queues the payout). Not enough available: a *Shortfall, nothing written.
func Reserve(ctx context.Context, tx pgx.Tx, p Payout) error {
	f, ok, err := store.New(tx).MoveFunds(ctx, p.entry(domain.FundReserve, new(big.Int).Neg(p.Amount), p.Amount, "payout queued"))
	if err != nil {
		return err
	}
	if !ok {
		return &Shortfall{OperatorID: p.OperatorID, ChainID: p.ChainID, Currency: p.Currency, Decimals: p.Decimals,
			Needed: p.Amount, Available: f.Available}
	}
	return nil
}

// reserved is what a payout holds reserved: its amount, or nothing for a payout queued before
// operator funds existed (nothing to settle or release then).
func reserved(ctx context.Context, tx pgx.Tx, p Payout) (bool, error) {
	held, err := store.New(tx).ReservedFor(ctx, p.OperatorID, "withdrawal:"+p.WithdrawalID)
	if err != nil {
		return false, err
	}
	switch held.Cmp(p.Amount) {
	case 0:
		return true, nil
	case -1:
		if held.Sign() == 0 {
			return false, nil
		}
	}
	return false, fmt.Errorf("funds: withdrawal %s holds %s reserved, its payout %s", p.WithdrawalID, held, p.Amount)
}

// Settle takes a confirmed payout's amount out of reserved (the money left), once.
func Settle(ctx context.Context, tx pgx.Tx, p Payout) error {
	return unreserve(ctx, tx, p, domain.FundSettle, new(big.Int), "payout confirmed", "settling")
}

// Release gives an abandoned payout's reservation back to available.
func Release(ctx context.Context, tx pgx.Tx, p Payout, why string) error {
	return unreserve(ctx, tx, p, domain.FundRelease, p.Amount, why, "releasing")
}

// unreserve takes a payout's amount out of reserved, adding avail to available, once: a payout
// holding nothing reserved (queued before operator funds existed) is left alone.
func unreserve(ctx context.Context, tx pgx.Tx, p Payout, kind domain.FundKind, avail *big.Int, note, doing string) error {
	if ok, err := reserved(ctx, tx, p); err != nil || !ok {
		return err
	}
	_, ok, err := store.New(tx).MoveFunds(ctx, p.entry(kind, avail, new(big.Int).Neg(p.Amount), note))
	if err == nil && !ok {
		err = fmt.Errorf("funds: %s withdrawal %s: less reserved than its amount", doing, p.WithdrawalID)
	}
	return err
}

// Adjustment is a service-team entry.
type Adjustment struct {
	OperatorID string
	ChainID    int64
	Currency   string
	// Amount in token units, signed ("+100", "-2.5").
	Amount string
	Note   string
	Actor  domain.Actor
}

// Adjust applies a service-team adjustment, audited with its actor and note. A debit beyond
// what is available is refused (CONFLICT naming the shortfall), changing nothing.
func (l *Ledger) Adjust(ctx context.Context, a Adjustment) (Balance, error) {
	asset, err := l.asset(a.ChainID, a.Currency)
	if err != nil {
		return Balance{}, err
	}
	amount, err := decimal.NewFromString(strings.TrimSpace(a.Amount))
	if err != nil || amount.IsZero() {
		return Balance{}, fault.Invalid("amount", "must be a non-zero signed decimal in token units, such as +100 or -2.5")
	}
	units, err := tokenUnits(amount, a.Amount, asset)
	if err != nil {
		return Balance{}, err
	}
	if strings.TrimSpace(a.Note) == "" {
		return Balance{}, fault.Invalid("note", "is required: say why the funds change")
	}
	if len(a.Note) > 1000 {
		return Balance{}, fault.Invalid("note", "must be at most 1000 characters")
	}
	var out domain.Funds
	err = store.InTx(ctx, l.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if _, err := q.GetOperator(ctx, a.OperatorID); errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "operator %s not found", a.OperatorID)
		} else if err != nil {
			return err
		}
		f, ok, err := q.MoveFunds(ctx, domain.FundEntry{OperatorID: a.OperatorID, ChainID: a.ChainID, Currency: asset.Symbol,
			Kind: domain.FundAdjustment, AvailableDelta: units, ReservedDelta: new(big.Int), Ref: "adjustment", Actor: a.Actor,
			Note: strings.TrimSpace(a.Note)})
		if err != nil {
			return err
		}
		if !ok {
			return fault.New(fault.Conflict, "the operator has %s %s available on chain %d; a debit of %s would leave it negative",
				rates.FormatUnits(f.Available, asset.Decimals), asset.Symbol, a.ChainID, amount.Abs())
		}
		out = f
		return nil
	})
	if err != nil {
		if fe := (*fault.Error)(nil); errors.As(err, &fe) {
			return Balance{}, fe
		}
		return Balance{}, fault.Wrap(err, "adjust funds")
	}
	return l.balance(ctx, out)
}

// tokenUnits is amount (written raw) of asset in its smallest units: INVALID_ARGUMENT when it
// has more decimals than the asset or is more than a uint256 of units, which no balance
// exceeds. The digits are checked first, so a written-out exponent ("1e1000000000") is refused
// before it is expanded.
func tokenUnits(amount decimal.Decimal, raw string, asset chain.Asset) (*big.Int, error) {
	tooMuch := fault.Invalid("amount", "%s is more %s than can exist (a token amount is at most 2^256-1 units)", raw, asset.Symbol)
	if int64(amount.NumDigits())+int64(amount.Exponent())+int64(asset.Decimals) > 78 {
		return nil, tooMuch
	}
	units, err := rates.ToUnitsExact(amount, asset.Decimals)
	if err != nil {
		return nil, fault.Invalid("amount", "%s has at most %d decimals", asset.Symbol, asset.Decimals)
	}
	if units.BitLen() > 256 {
		return nil, tooMuch
	}
	return units, nil
}
