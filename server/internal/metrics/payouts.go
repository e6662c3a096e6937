package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PauseLabels are one active payout pause's labels.
type PauseLabels struct {
	Scope      string // global, chain or operator
	ChainID    int64  // chain scope only
	OperatorID string // operator scope only
}

// payoutsPaused reads the active pauses from PostgreSQL at each scrape, so every replica
// reports the same pauses whichever one made them.
type payoutsPaused struct {
	desc   *prometheus.Desc
	active func(context.Context) ([]PauseLabels, error)
}

// NewPayoutsPaused is the coffer_payouts_paused collector over active (the store's list of
// active pauses). A failed read reports nothing but the collector's error.
func NewPayoutsPaused(active func(context.Context) ([]PauseLabels, error)) prometheus.Collector {
	return payoutsPaused{active: active, desc: prometheus.NewDesc("coffer_payouts_paused",
		"1 for each active payout pause (OpsService.PausePayouts), by scope; the global series is always present (0 when not paused).",
		[]string{"scope", "chain_id", "operator_id"}, nil)}
}

func (c payoutsPaused) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c payoutsPaused) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	list, err := c.active(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	global := false
	for _, p := range list {
		chainID := ""
		if p.ChainID != 0 {
			chainID = strconv.FormatInt(p.ChainID, 10)
		}
		global = global || p.Scope == "global"
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, p.Scope, chainID, p.OperatorID)
	}
	if !global {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 0, "global", "", "")
	}
}

// WalletLowBalanceThreshold is each wallet's low-balance threshold (OpsService.SetWalletThreshold)
// in token units, refreshed by the periodic reconciliation; alert when a wallet balance falls
// under it.
var WalletLowBalanceThreshold = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "coffer_wallet_low_balance_threshold",
	Help: "Low-balance threshold of a service wallet in one asset, in token units (the reconciliation logs a WARN while the balance is under it).",
}, []string{"chain_id", "wallet", "currency"})

// WalletBelowThreshold is 1 while a wallet's balance is under its low-balance threshold, 0
// when it is not, per the latest check (the periodic reconciliation); a series older than
// ReconciledMaxAge drops out, so a worker that stopped checking reports nothing stale.
var WalletBelowThreshold = NewRecentGauge("coffer_wallet_below_threshold",
	"1 while a service wallet's balance in one asset is under its low-balance threshold (OpsService.SetWalletThreshold), 0 otherwise, from the latest check.",
	[]string{"chain_id", "wallet", "currency"}, ReconciledMaxAge)

// CollectPayouts registers the payout pauses (read through active at each scrape) and the
// wallets' low-balance thresholds and states.
func (m *Metrics) CollectPayouts(active func(context.Context) ([]PauseLabels, error)) {
	m.Registry.MustRegister(NewPayoutsPaused(active), WalletLowBalanceThreshold, WalletBelowThreshold)
}
