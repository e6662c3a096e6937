package funds

import (
	"context"
	"log/slog"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/metrics"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
)

// ThresholdChange sets (or, with an empty Amount, removes) a wallet's low-balance threshold.
type ThresholdChange struct {
	ChainID  int64
	Wallet   string
	Currency string
	Amount   string // token units, e.g. "0.5"; "" removes the threshold
	Reason   string
	Actor    domain.Actor
}

// SetThreshold records a wallet's low-balance threshold in one asset (audited with the actor
// and reason). The chain and the currency must be configured; the wallet is any address
// (hot wallet, gas tank, bankroll, a treasury).
func (l *Ledger) SetThreshold(ctx context.Context, c ThresholdChange) (domain.WalletThreshold, error) {
	if _, ok := l.chains.Network(c.ChainID); !ok {
		return domain.WalletThreshold{}, fault.New(fault.NotFound, "chain %d is not configured", c.ChainID)
	}
	a, err := l.asset(c.ChainID, c.Currency)
	if err != nil {
		return domain.WalletThreshold{}, err
	}
	if !common.IsHexAddress(c.Wallet) {
		return domain.WalletThreshold{}, fault.Invalid("wallet", "must be an address, 0x + 40 hex")
	}
	if strings.TrimSpace(c.Reason) == "" {
		return domain.WalletThreshold{}, fault.Invalid("reason", "a reason is required (it is kept in the audit trail)")
	}
	t := domain.WalletThreshold{ChainID: c.ChainID, Wallet: common.HexToAddress(c.Wallet).Hex(), Currency: a.Symbol,
		Removed: c.Amount == "", SetBy: c.Actor, Reason: strings.TrimSpace(c.Reason)}
	if !t.Removed {
		amount, err := decimal.NewFromString(c.Amount)
		if err != nil || amount.IsNegative() {
			return t, fault.Invalid("amount", "must be a non-negative amount of %s with at most %d decimals", a.Symbol, a.Decimals)
		}
		if _, err := tokenUnits(amount, c.Amount, a); err != nil {
			return t, err
		}
		t.Amount = amount
	}
	out, err := store.New(l.pool).InsertWalletThreshold(ctx, t)
	if err != nil {
		return out, fault.Wrap(err, "set threshold")
	}
	return out, nil
}

// Thresholds lists the thresholds in force.
func (l *Ledger) Thresholds(ctx context.Context) ([]domain.WalletThreshold, error) {
	list, err := store.New(l.pool).WalletThresholds(ctx)
	if err != nil {
		return nil, fault.Wrap(err, "list thresholds")
	}
	return list, nil
}

// CheckThresholds reads the balance of every wallet with a threshold, exports the thresholds
// (coffer_wallet_low_balance_threshold) and logs a WARN for each wallet under its threshold.
// A balance that cannot be read is logged and skipped (the next run tries again).
func CheckThresholds(ctx context.Context, l *Ledger, clients map[int64]*chain.Client, log *slog.Logger) error {
	list, err := l.Thresholds(ctx)
	if err != nil {
		return err
	}
	metrics.WalletLowBalanceThreshold.Reset()
	for _, t := range list {
		threshold, _ := t.Amount.Float64()
		metrics.WalletLowBalanceThreshold.WithLabelValues(strconv.FormatInt(t.ChainID, 10), t.Wallet, t.Currency).Set(threshold)
		a, err := l.asset(t.ChainID, t.Currency)
		c := clients[t.ChainID]
		if err != nil || c == nil {
			continue // a chain or asset removed from the configuration
		}
		var bal *big.Int
		if a.Native {
			bal, err = c.Balance(ctx, common.HexToAddress(t.Wallet))
		} else {
			bal, err = c.TokenBalance(ctx, a.Contract, common.HexToAddress(t.Wallet))
		}
		if err != nil {
			log.WarnContext(ctx, "low-balance check: cannot read a wallet's balance", "chain", t.ChainID, "wallet", t.Wallet,
				"currency", t.Currency, "error", err)
			continue
		}
		have := rates.FromUnits(bal, a.Decimals)
		below := have.LessThan(t.Amount)
		metrics.WalletBelowThreshold.Set(map[bool]float64{false: 0, true: 1}[below], strconv.FormatInt(t.ChainID, 10), t.Wallet, t.Currency)
		if below {
			log.WarnContext(ctx, "wallet balance under its low-balance threshold: fund it", "chain", t.ChainID, "wallet", t.Wallet,
				"currency", t.Currency, "balance", have, "threshold", t.Amount)
		}
	}
	return nil
}
